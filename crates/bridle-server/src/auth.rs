//! Authentication: a JWT bearer token becomes a [`Principal`]. HS256 with a shared secret, or
//! RS256/ES256 verified against a PEM public key, a JWKS file, a JWKS URL or an OIDC issuer's
//! published keys ([`remote`]; verify only: this side never holds a private key). Tenant and
//! subject only ever come from a verified token.
//!
//! Claims (names mappable in `[auth.claims]`, see [`claims`]): `sub` and `tenant` required;
//! `services` and `scopes` lists (absent: none); `exp`, `iss`, `aud` required; `nbf` optional,
//! checked when present; `agent` optional: the `[[agents]]` id whose credential this is, so that
//! every call made with it is that agent's (the request cannot name another). Anything wrong
//! (malformed, expired, not yet valid, forged, another issuer or audience, a missing claim) is an
//! [`AuthError`], which the API answers with 401 `unauthenticated`. `exp` and `nbf` get
//! [`LEEWAY_SECONDS`] of clock skew. A token that verified is answered again by its exact text
//! ([`verified`]) until it expires or the keys that verified it are replaced.

mod claims;
pub mod remote;
mod verified;

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use bridle_core::Principal;
use bridle_core::config::{AuthSettings, ClaimNames};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Issuer and audience when none is configured.
pub const DEFAULT_ISSUER: &str = "bridle";
/// See [`DEFAULT_ISSUER`].
pub const DEFAULT_AUDIENCE: &str = "bridle";
/// Shortest accepted HS256 secret, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;
/// Seconds of clock skew tolerated on `exp` and on `nbf`.
pub const LEEWAY_SECONDS: u64 = 30;

/// Where verification keys come from.
#[derive(Clone, PartialEq, Eq)]
pub enum KeySource {
    /// HS256 with this shared secret (`BRIDLE_JWT_SECRET`).
    Secret(Vec<u8>),
    /// RS256 or ES256 with a PEM public key file (`BRIDLE_JWT_PUBLIC_KEY`).
    PemFile(PathBuf),
    /// RS256 or ES256 with the keys of a JWKS file (`BRIDLE_JWT_JWKS`), chosen by `kid`.
    JwksFile(PathBuf),
    /// The same, with the keys fetched from a JWKS URL (`BRIDLE_JWT_JWKS_URL`).
    JwksUrl(String),
    /// The same, with the keys found by OIDC discovery from an issuer URL
    /// (`BRIDLE_JWT_OIDC_ISSUER`).
    OidcIssuer(String),
}

impl std::fmt::Debug for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Secret(_) => f.write_str("Secret(…)"),
            Self::PemFile(p) => write!(f, "PemFile({})", p.display()),
            Self::JwksFile(p) => write!(f, "JwksFile({})", p.display()),
            Self::JwksUrl(u) => write!(f, "JwksUrl({u})"),
            Self::OidcIssuer(u) => write!(f, "OidcIssuer({u})"),
        }
    }
}

/// What a token must satisfy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthConfig {
    /// Expected `iss`.
    pub issuer: String,
    /// Expected `aud`.
    pub audience: String,
    /// Verification keys.
    pub keys: KeySource,
    /// Which claims name the principal (`[auth.claims]`).
    pub claims: ClaimNames,
    /// How long fetched keys are used before they are read again (`[auth] jwks_refresh_seconds`).
    pub jwks_refresh: Duration,
}

impl AuthConfig {
    /// Keys from `keys`, the default issuer, audience and claim names.
    pub fn new(keys: KeySource) -> Self {
        let defaults = AuthSettings::default();
        Self {
            issuer: DEFAULT_ISSUER.to_owned(),
            audience: DEFAULT_AUDIENCE.to_owned(),
            keys,
            claims: defaults.claims,
            jwks_refresh: defaults.jwks_refresh,
        }
    }

    /// HS256 with `secret`, the default issuer and audience.
    pub fn hs256(secret: &[u8]) -> Self {
        Self::new(KeySource::Secret(secret.to_vec()))
    }

    /// The same, reading claims and refreshing keys as `settings` (`[auth]`) say.
    #[must_use]
    pub fn with_settings(mut self, settings: &AuthSettings) -> Self {
        self.claims = settings.claims.clone();
        self.jwks_refresh = settings.jwks_refresh;
        self
    }

    /// From the environment: exactly one of `BRIDLE_JWT_JWKS`, `BRIDLE_JWT_JWKS_URL`,
    /// `BRIDLE_JWT_OIDC_ISSUER`, `BRIDLE_JWT_PUBLIC_KEY` and `BRIDLE_JWT_SECRET`, with
    /// `BRIDLE_JWT_ISSUER` (default: the OIDC issuer, else `bridle`) and `BRIDLE_JWT_AUDIENCE`
    /// (default `bridle`).
    pub fn from_env() -> Result<Self, AuthError> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let mut sources = Vec::new();
        if let Some(u) = var("BRIDLE_JWT_JWKS_URL") {
            remote::check_url("BRIDLE_JWT_JWKS_URL", &u)?;
            sources.push(KeySource::JwksUrl(u));
        }
        let oidc = var("BRIDLE_JWT_OIDC_ISSUER");
        if let Some(u) = &oidc {
            remote::check_url("BRIDLE_JWT_OIDC_ISSUER", u)?;
            sources.push(KeySource::OidcIssuer(u.clone()));
        }
        if let Some(p) = var("BRIDLE_JWT_JWKS") {
            sources.push(KeySource::JwksFile(PathBuf::from(p)));
        }
        if let Some(p) = var("BRIDLE_JWT_PUBLIC_KEY") {
            sources.push(KeySource::PemFile(PathBuf::from(p)));
        }
        if let Some(s) = var("BRIDLE_JWT_SECRET") {
            sources.push(KeySource::Secret(s.into_bytes()));
        }
        if sources.len() > 1 {
            return Err(AuthError::Config(
                "set only one of BRIDLE_JWT_SECRET, BRIDLE_JWT_PUBLIC_KEY, BRIDLE_JWT_JWKS, BRIDLE_JWT_JWKS_URL and \
                 BRIDLE_JWT_OIDC_ISSUER"
                    .to_owned(),
            ));
        }
        let keys = sources.pop().ok_or_else(|| AuthError::Config(NO_KEYS.to_owned()))?;
        let issuer = var("BRIDLE_JWT_ISSUER").or(oidc).unwrap_or_else(|| DEFAULT_ISSUER.to_owned());
        Ok(Self {
            issuer,
            audience: var("BRIDLE_JWT_AUDIENCE").unwrap_or_else(|| DEFAULT_AUDIENCE.to_owned()),
            ..Self::new(keys)
        })
    }
}

const NO_KEYS: &str = "no token key configured: set BRIDLE_JWT_SECRET (at least 32 bytes, e.g. \
`export BRIDLE_JWT_SECRET=$(openssl rand -hex 32)`), BRIDLE_JWT_PUBLIC_KEY / BRIDLE_JWT_JWKS to a file, or \
BRIDLE_JWT_JWKS_URL / BRIDLE_JWT_OIDC_ISSUER to your identity provider";

/// Why a token was refused, or why keys could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization: Bearer …` header.
    #[error("missing bearer token")]
    Missing,
    /// More than one `Authorization` header: none is chosen.
    #[error("more than one Authorization header")]
    Ambiguous,
    /// The token was refused (the reason names no secret).
    #[error("invalid token: {0}")]
    Invalid(String),
    /// Keys or settings are unusable (start-up).
    #[error("{0}")]
    Config(String),
}

/// The claims of a token Bridle issues (`bridle token`; verification reads any claims through
/// `[auth.claims]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Subject.
    pub sub: String,
    /// Tenant.
    pub tenant: String,
    /// Services the subject may act on.
    pub services: Vec<String>,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// Expiry, seconds since the Unix epoch.
    pub exp: u64,
    /// Issuer.
    pub iss: String,
    /// Audience.
    pub aud: String,
    /// The agent this credential belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// One verification key and the algorithm it accepts.
struct Key {
    kid: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

/// Verifies tokens against the configured keys.
pub struct Verifier {
    issuer: String,
    audience: String,
    claims: ClaimNames,
    keys: RwLock<Held>,
    remote: Option<remote::Remote>,
    /// Tokens verified with the keys held (see [`verified`]).
    verified: verified::Verified,
}

/// The keys held, and how many times keys were installed: a token verified with older keys is
/// verified again.
struct Held {
    keys: Arc<[Key]>,
    generation: u64,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier").field("issuer", &self.issuer).field("keys", &self.keys().len()).finish()
    }
}

impl Verifier {
    /// Loads the keys of `config` (reads the PEM or JWKS file). Keys of a JWKS URL or an OIDC
    /// issuer are read by [`Verifier::refresh`] (which `bridle serve` calls before it listens), or
    /// by the first [`Verifier::authenticate`].
    pub fn new(config: &AuthConfig) -> Result<Self, AuthError> {
        let mut remote = None;
        let keys = match &config.keys {
            KeySource::Secret(secret) => {
                check_secret(secret)?;
                let key = DecodingKey::from_secret(secret).map_err(|e| AuthError::Config(format!("secret: {e}")))?;
                vec![Key { kid: None, algorithm: Algorithm::HS256, key }]
            }
            KeySource::PemFile(path) => vec![pem_key(&read(path)?, path)?],
            KeySource::JwksFile(path) => jwks_keys(&read(path)?, &path.display().to_string())?,
            KeySource::JwksUrl(url) => {
                remote = Some(remote::Remote::new(remote::Origin::Jwks(url.clone()), config.jwks_refresh)?);
                Vec::new()
            }
            KeySource::OidcIssuer(url) => {
                remote = Some(remote::Remote::new(remote::Origin::Oidc(url.clone()), config.jwks_refresh)?);
                Vec::new()
            }
        };
        Ok(Self {
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            claims: config.claims.clone(),
            keys: RwLock::new(Held { keys: keys.into(), generation: 0 }),
            remote,
            verified: verified::Verified::default(),
        })
    }

    /// Reads the keys of a JWKS URL or an OIDC issuer now, and answers how many are held (keys
    /// from a secret or a file: those, unchanged). An error leaves the keys held as they were.
    pub async fn refresh(&self) -> Result<usize, AuthError> {
        if let Some(remote) = &self.remote
            && let Some(keys) = remote.read(remote::Why::Now).await?
        {
            self.install(keys);
        }
        Ok(self.keys().len())
    }

    /// The principal of a valid token, reading an identity provider's keys again when they are
    /// older than the refresh interval or the token names a `kid` they do not hold (see
    /// [`remote`]); with keys from a secret or a file, the same as [`Verifier::verify`].
    pub async fn authenticate(&self, token: &str) -> Result<Principal, AuthError> {
        let Some(remote) = &self.remote else { return self.verify(token) };
        if remote.stale() {
            self.reload(remote, remote::Why::Stale).await;
        }
        let first = self.verify(token);
        if first.is_ok() || !self.names_unknown_kid(token) {
            return first;
        }
        self.reload(remote, remote::Why::UnknownKid).await;
        self.verify(token)
    }

    /// One read of the provider as `why` allows, installing what it gives; a failure is logged
    /// and keeps the keys held.
    async fn reload(&self, remote: &remote::Remote, why: remote::Why) {
        match remote.read(why).await {
            Ok(Some(keys)) => self.install(keys),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "token keys not refreshed; the keys held stay in use"),
        }
    }

    /// Whether `token` names a `kid` that no key held has.
    fn names_unknown_kid(&self, token: &str) -> bool {
        let Ok(header) = jsonwebtoken::decode_header(token) else { return false };
        header.kid.is_some_and(|kid| !self.keys().iter().any(|k| k.kid.as_deref() == Some(kid.as_str())))
    }

    fn keys(&self) -> Arc<[Key]> {
        self.keys.read().unwrap_or_else(PoisonError::into_inner).keys.clone()
    }

    /// Holds `keys` from now on; tokens verified with the keys before are checked again.
    fn install(&self, keys: Vec<Key>) {
        let mut held = self.keys.write().unwrap_or_else(PoisonError::into_inner);
        *held = Held { keys: keys.into(), generation: held.generation + 1 };
    }

    /// The principal of a valid token, with the keys held now: a token verified lately with
    /// these keys and still within its times is answered from [`verified`].
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let (keys, generation) = {
            let held = self.keys.read().unwrap_or_else(PoisonError::into_inner);
            (held.keys.clone(), held.generation)
        };
        if let Some(principal) = self.verified.get(token, generation, jsonwebtoken::get_current_timestamp()) {
            return Ok(principal);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| AuthError::Invalid(reason(&e)))?;
        // A key of the token's algorithm; a `kid` must match a key that names one. A key
        // without a `kid` (secret, PEM) takes any; a token without one tries each candidate.
        let candidates = keys
            .iter()
            .filter(|k| k.algorithm == header.alg && (k.kid.is_none() || header.kid.is_none() || k.kid == header.kid));
        let mut refused = AuthError::Invalid("no key for this token's algorithm or key id".to_owned());
        for key in candidates {
            let mut validation = Validation::new(key.algorithm);
            validation.set_required_spec_claims(&["exp", "iss", "aud"]);
            validation.set_issuer(&[&self.issuer]);
            validation.set_audience(&[&self.audience]);
            validation.leeway = LEEWAY_SECONDS;
            // An `nbf` more than the leeway ahead is refused; a token without one is valid now.
            validation.validate_nbf = true;
            match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation) {
                Ok(data) => {
                    let principal = claims::principal(&data.claims, &self.claims)?;
                    self.verified.put(token, generation, &data.claims, &principal);
                    return Ok(principal);
                }
                Err(e) => refused = AuthError::Invalid(reason(&e)),
            }
        }
        Err(refused)
    }
}

/// What a development token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// `sub`.
    pub subject: String,
    /// `tenant`.
    pub tenant: String,
    /// `services`.
    pub services: Vec<String>,
    /// `scopes`.
    pub scopes: Vec<String>,
    /// Lifetime in seconds.
    pub ttl_seconds: u64,
    /// The agent the token belongs to (`agent` claim), if any.
    pub agent: Option<String>,
}

/// Signs an HS256 token for `request` with `secret`, issued by `issuer` for `audience`.
pub fn issue_hs256(secret: &[u8], issuer: &str, audience: &str, request: &TokenRequest) -> Result<String, AuthError> {
    check_secret(secret)?;
    if request.subject.trim().is_empty() || request.tenant.trim().is_empty() {
        return Err(AuthError::Config("subject and tenant must not be empty".to_owned()));
    }
    let principal = Principal {
        subject: request.subject.clone(),
        tenant: request.tenant.clone(),
        services: request.services.iter().cloned().collect(),
        scopes: request.scopes.iter().cloned().collect(),
        agent: request.agent.clone(),
    };
    bridle_core::bounds::check_principal(&principal).map_err(|e| AuthError::Config(e.to_string()))?;
    let now = u64::try_from(time::OffsetDateTime::now_utc().unix_timestamp()).unwrap_or(0);
    let claims = Claims {
        sub: request.subject.clone(),
        tenant: request.tenant.clone(),
        services: request.services.clone(),
        scopes: request.scopes.clone(),
        exp: now.saturating_add(request.ttl_seconds),
        iss: issuer.to_owned(),
        aud: audience.to_owned(),
        agent: request.agent.clone(),
    };
    encode_hs256(secret, &claims)
}

/// Signs arbitrary claims with HS256 (tests use it for expired or foreign tokens).
pub fn encode_hs256<T: Serialize>(secret: &[u8], claims: &T) -> Result<String, AuthError> {
    let key = EncodingKey::from_secret(secret).map_err(|e| AuthError::Config(format!("secret: {e}")))?;
    jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &key).map_err(|e| AuthError::Config(e.to_string()))
}

fn check_secret(secret: &[u8]) -> Result<(), AuthError> {
    if secret.len() < MIN_SECRET_BYTES {
        return Err(AuthError::Config(format!(
            "the token secret must be at least {MIN_SECRET_BYTES} bytes (it is {})",
            secret.len()
        )));
    }
    Ok(())
}

fn read(path: &Path) -> Result<Vec<u8>, AuthError> {
    std::fs::read(path).map_err(|e| AuthError::Config(format!("cannot read `{}`: {e}", path.display())))
}

/// A PEM public key: RSA (RS256) or EC P-256 (ES256).
fn pem_key(pem: &[u8], path: &Path) -> Result<Key, AuthError> {
    if let Ok(key) = DecodingKey::from_rsa_pem(pem) {
        return Ok(Key { kid: None, algorithm: Algorithm::RS256, key });
    }
    if let Ok(key) = DecodingKey::from_ec_pem(pem) {
        return Ok(Key { kid: None, algorithm: Algorithm::ES256, key });
    }
    Err(AuthError::Config(format!("`{}` holds no RSA or EC public key in PEM", path.display())))
}

/// The RS256 and ES256 keys of a JWKS document read from `source`; other keys are skipped, none
/// usable is an error.
fn jwks_keys(text: &[u8], source: &str) -> Result<Vec<Key>, AuthError> {
    let set: JwkSet = serde_json::from_slice(text)
        .map_err(|e| AuthError::Config(format!("`{source}` is not a JWKS document: {e}")))?;
    let mut keys = Vec::new();
    for jwk in &set.keys {
        let algorithm = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Algorithm::RS256,
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => Algorithm::ES256,
            _ => continue,
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|e| AuthError::Config(format!("`{source}`: {e}")))?;
        keys.push(Key { kid: jwk.common.key_id.clone(), algorithm, key });
    }
    if keys.is_empty() {
        return Err(AuthError::Config(format!("`{source}` holds no RS256 or ES256 key")));
    }
    Ok(keys)
}

/// A short reason that names no key material.
fn reason(e: &jsonwebtoken::errors::Error) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => "token expired".to_owned(),
        K::ImmatureSignature => "token not valid yet (`nbf` is in the future)".to_owned(),
        K::InvalidClaimFormat(c) => format!("claim `{c}` is malformed"),
        K::InvalidSignature => "signature does not verify".to_owned(),
        K::InvalidIssuer => "wrong issuer".to_owned(),
        K::InvalidAudience => "wrong audience".to_owned(),
        K::MissingRequiredClaim(c) => format!("missing claim `{c}`"),
        K::InvalidAlgorithm => "algorithm not accepted".to_owned(),
        K::Json(_) => "the claims are not a JSON object".to_owned(),
        _ => "malformed token".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn request() -> TokenRequest {
        TokenRequest {
            subject: "requester-1".into(),
            tenant: "tenant-a".into(),
            services: vec!["checkout".into()],
            scopes: vec!["service:read".into()],
            ttl_seconds: 60,
            agent: None,
        }
    }

    #[test]
    fn issued_tokens_verify_into_the_principal() -> Result<(), AuthError> {
        let token = issue_hs256(SECRET, DEFAULT_ISSUER, DEFAULT_AUDIENCE, &request())?;
        let p = Verifier::new(&AuthConfig::hs256(SECRET))?.verify(&token)?;
        assert_eq!(p, Principal::new("requester-1", "tenant-a", &["checkout"], &["service:read"]));
        Ok(())
    }

    #[test]
    fn an_agent_claim_becomes_the_principals_agent_and_a_bad_one_is_refused() -> Result<(), AuthError> {
        let verifier = Verifier::new(&AuthConfig::hs256(SECRET))?;
        let token = issue_hs256(
            SECRET,
            DEFAULT_ISSUER,
            DEFAULT_AUDIENCE,
            &TokenRequest { agent: Some("incident-responder".into()), ..request() },
        )?;
        assert_eq!(verifier.verify(&token)?.agent.as_deref(), Some("incident-responder"));
        // Minting refuses an agent id no store could keep; a forged one is refused at verify.
        let bad = TokenRequest { agent: Some("bad agent\u{0}".into()), ..request() };
        assert!(issue_hs256(SECRET, DEFAULT_ISSUER, DEFAULT_AUDIENCE, &bad).is_err());
        let claims = Claims {
            sub: "s".into(),
            tenant: "t".into(),
            services: vec![],
            scopes: vec![],
            exp: u64::MAX / 2,
            iss: DEFAULT_ISSUER.into(),
            aud: DEFAULT_AUDIENCE.into(),
            agent: Some("x".repeat(65)),
        };
        assert!(matches!(verifier.verify(&encode_hs256(SECRET, &claims)?), Err(AuthError::Invalid(_))));
        Ok(())
    }

    #[test]
    fn short_secrets_and_foreign_audiences_are_refused() -> Result<(), AuthError> {
        assert!(matches!(issue_hs256(b"short", "bridle", "bridle", &request()), Err(AuthError::Config(_))));
        let token = issue_hs256(SECRET, DEFAULT_ISSUER, "elsewhere", &request())?;
        let err = Verifier::new(&AuthConfig::hs256(SECRET))?.verify(&token);
        assert_eq!(err, Err(AuthError::Invalid("wrong audience".into())));
        Ok(())
    }
}
