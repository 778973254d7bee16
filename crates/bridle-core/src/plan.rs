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
        Ok(PlanHash(hex::encode(Sha256::digest(self.canonical()?))))
    }

    /// The plan's RFC 8785 form, written field by field in the canonical order of its (ASCII)
    /// names: the bytes [`canonical_bytes`] gives for the plan, without first copying it into a
    /// JSON value.
    fn canonical(&self) -> Result<Vec<u8>, CanonicalError> {
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(b"{\"arguments\":");
        write_canonical(&self.arguments, &mut out)?;
        for (name, text) in [
            ("incident", &self.incident),
            ("run_id", &self.run_id),
            ("subject", &self.subject),
            ("tenant", &self.tenant),
            ("tool", &self.tool),
        ] {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            serde_json::to_writer(&mut out, text).map_err(|e| CanonicalError(e.to_string()))?;
        }
        out.push(b'}');
        Ok(out)
    }
}

/// RFC 8785 canonical JSON of any serializable value.
pub fn canonical_bytes<T: Serialize>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    serde_json_canonicalizer::to_vec(value).map_err(|e| CanonicalError(e.to_string()))
}

/// RFC 8785 canonical JSON of a JSON value: the same bytes as [`canonical_bytes`] gives for it,
/// written straight from the value instead of buffering and re-parsing every key (about ten
/// times faster; every gate call hashes a plan and an audit event).
pub fn canonical_value_bytes(value: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(512);
    write_canonical(value, &mut out)?;
    Ok(out)
}

/// 2^53: integers up to it are exact as doubles, so their canonical form is their digits.
const EXACT_INTEGER: u64 = 1 << 53;

fn write_canonical(value: &Value, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    use std::io::Write;
    let err = |e: &dyn std::fmt::Display| CanonicalError(e.to_string());
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(map) => {
            // Properties sorted by the UTF-16 code units of their names (RFC 8785 §3.2.3).
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.encode_utf16().cmp(b.0.encode_utf16()));
            out.push(b'{');
            for (i, (name, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                // serde_json escapes strings exactly as RFC 8785 §3.2.2.2 asks.
                serde_json::to_writer(&mut *out, name).map_err(|e| err(&e))?;
                out.push(b':');
                write_canonical(item, out)?;
            }
            out.push(b'}');
        }
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) if u <= EXACT_INTEGER => write!(out, "{u}").map_err(|e| err(&e))?,
            (_, Some(i)) if i.unsigned_abs() <= EXACT_INTEGER => write!(out, "{i}").map_err(|e| err(&e))?,
            // Fractions and large integers take the canonicalizer's ECMAScript number formatting.
            _ => serde_json_canonicalizer::to_writer(n, out).map_err(|e| err(&e))?,
        },
        Value::Null | Value::Bool(_) | Value::String(_) => serde_json::to_writer(out, value).map_err(|e| err(&e))?,
    }
    Ok(())
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

    proptest::proptest! {
        #[test]
        fn a_plan_is_written_as_the_canonicalizer_writes_it(
            arguments in json_value(),
            texts in proptest::collection::vec("[a-zA-Z0-9_\\-\u{0}-\u{1f}\"\\\\\u{e9}\u{2028}\u{1f600}]{0,8}", 5)
        ) {
            let field = |i: usize| texts.get(i).cloned().unwrap_or_default();
            let p = Plan { tool: field(0), arguments, tenant: field(1), subject: field(2), incident: field(3), run_id: field(4) };
            let fast = p.canonical().map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            let slow = canonical_bytes(&p).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&slow));
        }

        #[test]
        fn value_fast_path_matches_the_canonicalizer(v in json_value()) {
            let fast = canonical_value_bytes(&v).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            let slow = canonical_bytes(&v).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assert_eq!(String::from_utf8_lossy(&fast), String::from_utf8_lossy(&slow));
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = prop_oneof![
            any::<String>(),
            "[a-zA-Z_\\u{0}-\\u{1f}\"\\\\/\\u{7f}\\u{e9}\\u{2028}\\u{1f600}\\u{ff21}]{0,6}"
        ];
        let number = prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-(1i64 << 54)..(1i64 << 54)).prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            (-1.0e6f64..1.0e6).prop_map(Value::from),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            number,
            text.clone().prop_map(Value::from)
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::vec((text.clone(), inner), 0..6)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
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
