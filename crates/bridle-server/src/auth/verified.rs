//! Tokens verified lately, looked up by their exact text. A token that verified once gives the
//! same principal again without being decoded and its signature checked, as long as the keys
//! that verified it are still the ones held (their generation) and the token is still within its
//! `exp` and `nbf`, with the same leeway as the full check. Verifying an HS256 token was about 5 %
//! of a served read call's CPU (BENCHMARKS.md, "`bridle serve` profiled"); an agent sends the
//! same token with every call.
//!
//! Only tokens that verified enter; one longer than [`MAX_TOKEN_BYTES`] is not kept; at
//! [`CAPACITY`] entries the cache starts over, so it holds at most a few MB.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use bridle_core::Principal;
use serde_json::{Map, Value};

use super::LEEWAY_SECONDS;

/// Entries kept before the cache starts over.
pub(super) const CAPACITY: usize = 4_096;
/// Longest token kept, in bytes.
pub(super) const MAX_TOKEN_BYTES: usize = 2_048;

#[derive(Debug)]
struct Entry {
    principal: Principal,
    /// The generation of the keys that verified the token.
    generation: u64,
    expires: u64,
    not_before: Option<u64>,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct Verified {
    entries: Mutex<HashMap<Box<str>, Entry>>,
}

impl Verified {
    /// The principal of `token` if it verified with the keys of `generation` and is still valid
    /// at `now` (seconds since the epoch).
    pub(super) fn get(&self, token: &str, generation: u64, now: u64) -> Option<Principal> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = entries.get(token)?;
        let valid = entry.generation == generation && within(entry.expires, entry.not_before, now);
        valid.then(|| entry.principal.clone())
    }

    /// Keeps `token`, which verified with the keys of `generation` to `principal` with `claims`.
    pub(super) fn put(&self, token: &str, generation: u64, claims: &Map<String, Value>, principal: &Principal) {
        if token.len() > MAX_TOKEN_BYTES {
            return;
        }
        // The full check parsed both as integers when present; `exp` is required.
        let Some(expires) = claims.get("exp").and_then(Value::as_u64) else { return };
        let Ok(not_before) = claims.get("nbf").map(|nbf| nbf.as_u64().ok_or(())).transpose() else { return };
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(token.into(), Entry { principal: principal.clone(), generation, expires, not_before });
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// Whether a token with `expires` and `not_before` is valid at `now`: the full check's rule
/// (`jsonwebtoken` with `leeway` = [`LEEWAY_SECONDS`]).
fn within(expires: u64, not_before: Option<u64>, now: u64) -> bool {
    expires >= now.saturating_sub(LEEWAY_SECONDS) && not_before.is_none_or(|n| n <= now.saturating_add(LEEWAY_SECONDS))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn principal(subject: &str) -> Principal {
        Principal {
            subject: subject.to_owned(),
            tenant: "tenant-a".to_owned(),
            services: ["checkout".to_owned()].into(),
            scopes: ["service:read".to_owned()].into(),
            agent: None,
        }
    }

    fn claims(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_kept_token_is_answered_while_valid_and_only_for_its_keys() {
        let cache = Verified::default();
        cache.put("t1", 3, &claims(json!({"exp": 1_000, "nbf": 500})), &principal("alice"));
        assert_eq!(cache.get("t1", 3, 900).map(|p| p.subject), Some("alice".to_owned()));
        assert!(cache.get("t2", 3, 900).is_none(), "another text");
        assert!(cache.get("t1", 4, 900).is_none(), "keys replaced since");
        // The full check's leeway on both ends.
        assert!(cache.get("t1", 3, 1_000 + LEEWAY_SECONDS).is_some());
        assert!(cache.get("t1", 3, 1_001 + LEEWAY_SECONDS).is_none(), "expired");
        assert!(cache.get("t1", 3, 500 - LEEWAY_SECONDS).is_some());
        assert!(cache.get("t1", 3, 499 - LEEWAY_SECONDS).is_none(), "not yet valid");
    }

    #[test]
    fn tokens_without_usable_times_or_too_long_are_not_kept_and_the_cache_is_bounded() {
        let cache = Verified::default();
        cache.put("no-exp", 1, &claims(json!({})), &principal("a"));
        cache.put("float-nbf", 1, &claims(json!({"exp": 10, "nbf": 1.5})), &principal("a"));
        cache.put(&"x".repeat(MAX_TOKEN_BYTES + 1), 1, &claims(json!({"exp": 10})), &principal("a"));
        assert_eq!(cache.len(), 0);
        for i in 0..CAPACITY + 10 {
            cache.put(&format!("t{i}"), 1, &claims(json!({"exp": 10})), &principal("a"));
        }
        assert!(cache.len() <= CAPACITY, "{}", cache.len());
    }
}
