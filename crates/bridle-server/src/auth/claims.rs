//! A verified token's claims → a [`Principal`], by the names `[auth.claims]` gives.
//!
//! Subject and tenant are required strings (a numeric tenant id is read as its decimal text);
//! services and scopes are a list of strings or one space-separated string (OAuth's `scope`),
//! and absent means none; the agent is an optional string. Anything else is refused, never
//! guessed: a claim of the wrong type is an invalid token, not an empty grant.

use bridle_core::Principal;
use bridle_core::config::ClaimNames;
use serde_json::{Map, Value};

use super::AuthError;

/// The principal `claims` name, read with `names`.
pub(super) fn principal(claims: &Map<String, Value>, names: &ClaimNames) -> Result<Principal, AuthError> {
    let subject = required(claims, &names.subject)?;
    let tenant = required(claims, &names.tenant)?;
    let agent = match lookup(claims, &names.agent) {
        None | Some(Value::Null) => None,
        Some(Value::String(a)) => Some(a.clone()),
        Some(_) => return Err(mistyped(&names.agent, "a string")),
    };
    let principal = Principal {
        subject,
        tenant,
        services: list(claims, &names.services)?.into_iter().collect(),
        scopes: list(claims, &names.scopes)?.into_iter().collect(),
        agent,
    };
    bridle_core::bounds::check_principal(&principal).map_err(|e| AuthError::Invalid(format!("claim {e}")))?;
    Ok(principal)
}

/// The claim `name`: the key as written, else (when it holds a dot) a path into nested objects.
fn lookup<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(name) {
        return Some(v);
    }
    if !name.contains('.') {
        return None;
    }
    let mut parts = name.split('.');
    let first = claims.get(parts.next()?)?;
    parts.try_fold(first, |v, part| v.as_object()?.get(part))
}

fn required(claims: &Map<String, Value>, name: &str) -> Result<String, AuthError> {
    let text = match lookup(claims, name) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        None | Some(Value::Null) => return Err(AuthError::Invalid(format!("missing claim `{name}`"))),
        Some(_) => return Err(mistyped(name, "a string")),
    };
    if text.trim().is_empty() {
        return Err(AuthError::Invalid(format!("claim `{name}` must not be empty")));
    }
    Ok(text)
}

fn list(claims: &Map<String, Value>, name: &str) -> Result<Vec<String>, AuthError> {
    match lookup(claims, name) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(s.split_whitespace().map(str::to_owned).collect()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned).ok_or_else(|| mistyped(name, "a list of strings")))
            .collect(),
        Some(_) => Err(mistyped(name, "a list of strings or a space-separated string")),
    }
}

fn mistyped(name: &str, what: &str) -> AuthError {
    AuthError::Invalid(format!("claim `{name}` must be {what}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn idp_names() -> ClaimNames {
        ClaimNames {
            tenant: "org_id".into(),
            scopes: "scope".into(),
            services: "realm_access.roles".into(),
            ..ClaimNames::default()
        }
    }

    #[test]
    fn bridles_own_claims_read_as_before() -> Result<(), AuthError> {
        let claims = map(json!({"sub": "requester-1", "tenant": "tenant-a", "services": ["checkout"],
                                "scopes": ["service:read"], "agent": "deploy-bot"}));
        let p = principal(&claims, &ClaimNames::default())?;
        assert_eq!(
            (p.subject.as_str(), p.tenant.as_str(), p.agent.as_deref()),
            ("requester-1", "tenant-a", Some("deploy-bot"))
        );
        assert!(p.services.contains("checkout") && p.scopes.contains("service:read"));
        Ok(())
    }

    #[test]
    fn an_identity_providers_claims_map_without_bridle_specific_ones() -> Result<(), AuthError> {
        let claims = map(json!({"sub": "8f14e45f", "org_id": 4711, "scope": "openid service:read  service:change",
                                "realm_access": {"roles": ["checkout", "payments"]}}));
        let p = principal(&claims, &idp_names())?;
        assert_eq!(p.tenant, "4711");
        assert_eq!(
            p.scopes.iter().map(String::as_str).collect::<Vec<_>>(),
            ["openid", "service:change", "service:read"]
        );
        assert_eq!(p.services.len(), 2);
        assert!(p.agent.is_none());
        // A namespaced claim is read as written even though it holds dots.
        let names = ClaimNames { tenant: "https://bridle.dev/tenant".into(), ..ClaimNames::default() };
        let p = principal(&map(json!({"sub": "a", "https://bridle.dev/tenant": "t-1"})), &names)?;
        assert_eq!((p.tenant.as_str(), p.services.len(), p.scopes.len()), ("t-1", 0, 0));
        Ok(())
    }

    #[test]
    fn missing_or_mistyped_claims_are_refused_never_guessed() {
        let names = idp_names();
        for (claims, says) in [
            (json!({"sub": "a"}), "missing claim `org_id`"),
            (json!({"sub": "a", "org_id": ""}), "must not be empty"),
            (json!({"sub": "a", "org_id": {"id": 1}}), "`org_id` must be a string"),
            (json!({"sub": "a", "org_id": "o", "scope": 7}), "`scope` must be a list"),
            (
                json!({"sub": "a", "org_id": "o", "realm_access": {"roles": [1]}}),
                "`realm_access.roles` must be a list of strings",
            ),
            (json!({"sub": "a", "org_id": "o", "agent": ["x"]}), "`agent` must be a string"),
            (json!({"org_id": "o"}), "missing claim `sub`"),
        ] {
            let refused = principal(&map(claims.clone()), &names);
            assert!(matches!(&refused, Err(AuthError::Invalid(m)) if m.contains(says)), "{claims}: {refused:?}");
        }
    }
}
