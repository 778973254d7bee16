//! `[auth]`: how a verified token's claims become a principal, and how often keys fetched from an
//! identity provider are refreshed. Which keys verify tokens is the environment's business
//! (`BRIDLE_JWT_SECRET`, `BRIDLE_JWT_PUBLIC_KEY`, `BRIDLE_JWT_JWKS`, `BRIDLE_JWT_JWKS_URL`,
//! `BRIDLE_JWT_OIDC_ISSUER`); this section only names claims.
//!
//! ```toml
//! [auth]
//! jwks_refresh_seconds = 600     # keys fetched from a JWKS URL are re-read this often (60–86400);
//!                                # an unknown `kid` re-reads them at once (at most every 10 s)
//!
//! [auth.claims]                  # claim names; each defaults to Bridle's own
//! subject = "sub"
//! tenant = "org_id"              # e.g. an IdP's organisation claim
//! services = "services"          # a list of strings or one space-separated string
//! scopes = "scope"               # OAuth's space-separated `scope` works as is
//! agent = "agent"
//! ```
//!
//! A name is looked up as written first (namespaced claims such as `https://example.com/tenant`
//! keep their dots), then, if absent and it holds a dot, as a path into nested objects
//! (`realm_access.roles`).

use std::time::Duration;

use serde::Deserialize;

use super::validate::Errors;

/// Longest claim name accepted.
pub const CLAIM_NAME_MAX: usize = 128;
/// Bounds of `jwks_refresh_seconds`.
pub const JWKS_REFRESH_SECONDS: (u64, u64) = (60, 86_400);

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    jwks_refresh_seconds: Option<u64>,
    #[serde(default)]
    claims: RawClaims,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaims {
    subject: Option<String>,
    tenant: Option<String>,
    services: Option<String>,
    scopes: Option<String>,
    agent: Option<String>,
}

/// The claims a principal is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimNames {
    /// The subject (required in every token).
    pub subject: String,
    /// The tenant (required in every token).
    pub tenant: String,
    /// Services the subject may act on (absent: none).
    pub services: String,
    /// Granted scopes (absent: none).
    pub scopes: String,
    /// The `[[agents]]` id the credential belongs to (optional).
    pub agent: String,
}

impl Default for ClaimNames {
    fn default() -> Self {
        Self {
            subject: "sub".to_owned(),
            tenant: "tenant".to_owned(),
            services: "services".to_owned(),
            scopes: "scopes".to_owned(),
            agent: "agent".to_owned(),
        }
    }
}

/// Validated `[auth]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthSettings {
    /// Claim names.
    pub claims: ClaimNames,
    /// How long keys fetched from a JWKS URL are used before they are read again.
    pub jwks_refresh: Duration,
}

impl Default for AuthSettings {
    fn default() -> Self {
        Self { claims: ClaimNames::default(), jwks_refresh: Duration::from_secs(600) }
    }
}

pub(super) fn auth_settings(raw: &RawAuth, errors: &mut Errors) -> AuthSettings {
    let d = AuthSettings::default();
    let (lo, hi) = JWKS_REFRESH_SECONDS;
    let refresh = raw.jwks_refresh_seconds.unwrap_or(d.jwks_refresh.as_secs());
    if !(lo..=hi).contains(&refresh) {
        errors.push("auth.jwks_refresh_seconds", format!("must be between {lo} and {hi}"));
    }
    let mut name = |field: &str, given: &Option<String>, default: String| match given {
        None => default,
        Some(n) if valid_claim_name(n) => n.clone(),
        Some(_) => {
            errors.push(
                format!("auth.claims.{field}"),
                format!("must be 1–{CLAIM_NAME_MAX} printable characters without spaces"),
            );
            default
        }
    };
    let c = &raw.claims;
    let claims = ClaimNames {
        subject: name("subject", &c.subject, d.claims.subject),
        tenant: name("tenant", &c.tenant, d.claims.tenant),
        services: name("services", &c.services, d.claims.services),
        scopes: name("scopes", &c.scopes, d.claims.scopes),
        agent: name("agent", &c.agent, d.claims.agent),
    };
    AuthSettings { claims, jwks_refresh: Duration::from_secs(refresh.clamp(lo, hi)) }
}

/// A claim name: 1–[`CLAIM_NAME_MAX`] characters, none of them whitespace or control, and no
/// empty segment around a dot.
fn valid_claim_name(name: &str) -> bool {
    (1..=CLAIM_NAME_MAX).contains(&name.chars().count())
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
        && !name.starts_with('.')
        && !name.ends_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (AuthSettings, Vec<String>) {
        let raw: RawAuth = match toml::from_str(text) {
            Ok(raw) => raw,
            Err(e) => return (AuthSettings::default(), vec![format!("toml: {e}")]),
        };
        let mut errors = Errors::default();
        let s = auth_settings(&raw, &mut errors);
        (s, errors.0.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn claim_names_default_to_bridles_own_and_can_be_mapped() {
        let (s, errors) = parse("");
        assert!(errors.is_empty());
        assert_eq!(s, AuthSettings::default());
        let (s, errors) = parse(
            "jwks_refresh_seconds = 120\n[claims]\ntenant = \"org_id\"\nscopes = \"scope\"\nservices = \"https://bridle.dev/services\"",
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!((s.claims.tenant.as_str(), s.claims.scopes.as_str()), ("org_id", "scope"));
        assert_eq!(s.claims.services, "https://bridle.dev/services");
        assert_eq!(s.claims.subject, "sub");
        assert_eq!(s.jwks_refresh, Duration::from_secs(120));
    }

    #[test]
    fn bad_names_and_refresh_intervals_are_named() {
        let (_, errors) =
            parse("jwks_refresh_seconds = 5\n[claims]\ntenant = \"org id\"\nscopes = \"\"\nagent = \".x\"");
        let joined = errors.join("\n");
        for field in ["auth.jwks_refresh_seconds", "auth.claims.tenant", "auth.claims.scopes", "auth.claims.agent"] {
            assert!(joined.contains(field), "{field} in {joined}");
        }
    }
}
