//! Plans and their hashes: the exact thing a human approves.
//!
//! A plan is {tool, arguments, tenant, subject, incident, run_id}. Its hash is the SHA-256 of the
//! RFC 8785 canonical JSON, so key order, whitespace and number spelling never change it.
//! INVARIANT: only the canonicalizer's output is hashed (serde_json keeps insertion order here).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::principal::{Principal, RunContext};

/// A proposed call bound to who asks and in which run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Tool name.
    pub tool: String,
    /// Validated arguments.
    pub arguments: Value,
    /// Tenant of the requester.
    pub tenant: String,
    /// Requester.
    pub subject: String,
    /// Incident id.
    pub incident: String,
    /// Run id.
    pub run_id: String,
}

/// Hex SHA-256 of a plan's canonical form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PlanHash(pub String);

impl std::fmt::Display for PlanHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The canonicalizer refused a value (it cannot represent it as RFC 8785 JSON).
#[derive(Debug, thiserror::Error)]
#[error("cannot canonicalize: {0}")]
pub struct CanonicalError(String);

impl Plan {
    /// The plan of `tool(arguments)` by `principal` in `run`.
    pub fn new(tool: &str, arguments: &Value, principal: &Principal, run: &RunContext) -> Self {
        Self {
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            tenant: principal.tenant.clone(),
            subject: principal.subject.clone(),
            incident: run.incident.clone(),
            run_id: run.run_id.clone(),
        }
    }

    /// SHA-256 of the RFC 8785 canonical JSON of this plan.
    pub fn hash(&self) -> Result<PlanHash, CanonicalError> {
        let bytes = canonical_bytes(self)?;
        Ok(PlanHash(hex::encode(Sha256::digest(&bytes))))
    }
}

/// RFC 8785 canonical JSON of any serializable value.
pub fn canonical_bytes<T: Serialize>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    serde_json_canonicalizer::to_vec(value).map_err(|e| CanonicalError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(args: Value) -> Plan {
        let p = Principal::new("requester-1", "tenant-a", &["checkout"], &["service:scale"]);
        Plan::new("scale_replicas", &args, &p, &RunContext::new("run-101", "inc-42"))
    }

    #[test]
    fn key_order_and_number_spelling_do_not_matter() -> Result<(), CanonicalError> {
        let a: Value =
            serde_json::from_str(r#"{"service":"checkout","replicas":3,"resource_version":7}"#).unwrap_or_default();
        let b: Value =
            serde_json::from_str(r#"{"resource_version":7.0,"replicas":3,"service":"checkout"}"#).unwrap_or_default();
        assert_eq!(plan(a).hash()?, plan(b).hash()?);
        Ok(())
    }

    #[test]
    fn every_field_is_bound() -> Result<(), CanonicalError> {
        let base = plan(json!({"service": "checkout", "replicas": 3}));
        let h = base.hash()?;
        for change in [
            Plan { tool: "x".into(), ..base.clone() },
            Plan { tenant: "tenant-b".into(), ..base.clone() },
            Plan { subject: "someone".into(), ..base.clone() },
            Plan { incident: "inc-43".into(), ..base.clone() },
            Plan { run_id: "run-102".into(), ..base.clone() },
            Plan { arguments: json!({"service": "checkout", "replicas": 4}), ..base.clone() },
        ] {
            assert_ne!(change.hash()?, h);
        }
        Ok(())
    }

    #[test]
    fn known_vector() -> Result<(), CanonicalError> {
        // Canonical form: {"arguments":{"replicas":3,"resource_version":7,"service":"checkout"},
        // "incident":"inc-42","run_id":"run-101","subject":"requester-1","tenant":"tenant-a",
        // "tool":"scale_replicas"}
        let p = plan(json!({"service": "checkout", "replicas": 3, "resource_version": 7}));
        let text = String::from_utf8(canonical_bytes(&p)?).unwrap_or_default();
        assert_eq!(
            text,
            r#"{"arguments":{"replicas":3,"resource_version":7,"service":"checkout"},"incident":"inc-42","run_id":"run-101","subject":"requester-1","tenant":"tenant-a","tool":"scale_replicas"}"#
        );
        Ok(())
    }
}
