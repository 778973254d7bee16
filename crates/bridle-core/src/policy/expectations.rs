//! Policy expectations: requests with the decision they must get, checked at load.
//!
//! A policy change that flips one of these fails start-up, the way Codex's exec-policy rules
//! carry examples that are checked when the policy loads.

use serde::Deserialize;
use serde_json::Value;

use super::PolicyEngine;
use crate::contract::Registry;
use crate::principal::Principal;

/// Expected decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    /// Must be allowed.
    Allow,
    /// Must be denied.
    Deny,
}

/// One expectation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyExpectation {
    /// Name shown when it fails.
    pub name: String,
    /// Principal subject.
    pub subject: String,
    /// Principal tenant.
    pub tenant: String,
    /// Principal services.
    #[serde(default)]
    pub services: Vec<String>,
    /// Principal scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Tool called.
    pub tool: String,
    /// Arguments (not schema-checked here; policy sees them as given).
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Tenant of the resource, when testing a foreign tenant.
    #[serde(default)]
    pub resource_tenant: Option<String>,
    /// Expected decision.
    pub decision: Expected,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    expect: Vec<PolicyExpectation>,
}

/// Why an expectations file was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpectationsError {
    /// The text is larger than a configuration text may be.
    #[error("{len} bytes, more than the {max} allowed")]
    TooLarge {
        /// Its size (bytes).
        len: usize,
        /// The bound (bytes).
        max: usize,
    },
    /// Not TOML, or not `[[expect]]` tables.
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    /// Past the configuration's size bounds (every problem, `; `-separated).
    #[error("{}", .0.join("; "))]
    Bounds(Vec<String>),
}

/// Parses an expectations file (`[[expect]]` tables).
pub fn parse_expectations(text: &str) -> Result<Vec<PolicyExpectation>, ExpectationsError> {
    if text.len() > crate::config::MAX_TEXT_BYTES {
        return Err(ExpectationsError::TooLarge { len: text.len(), max: crate::config::MAX_TEXT_BYTES });
    }
    let table = text.parse::<toml::Table>()?;
    let bounds: Vec<String> = crate::config::bound_problems(&table).iter().map(ToString::to_string).collect();
    if !bounds.is_empty() {
        return Err(ExpectationsError::Bounds(bounds));
    }
    Ok(toml::from_str::<File>(text)?.expect)
}

pub(super) fn check(engine: &PolicyEngine, registry: &Registry, expectations: &[PolicyExpectation]) -> Vec<String> {
    let mut failures = Vec::new();
    for e in expectations {
        let Some(tool) = registry.get(&e.tool) else {
            failures.push(format!("policy expectation `{}`: unknown tool `{}`", e.name, e.tool));
            continue;
        };
        let principal = Principal {
            subject: e.subject.clone(),
            tenant: e.tenant.clone(),
            services: e.services.iter().cloned().collect(),
            scopes: e.scopes.iter().cloned().collect(),
            agent: None,
        };
        let (kind, name) = tool.resource_of(&principal.tenant, &e.arguments);
        let tenant = e.resource_tenant.as_deref().unwrap_or(&principal.tenant);
        let d = engine.authorize_on(&principal, tool, &e.arguments, tenant, &kind, &name);
        let got = if d.allowed { Expected::Allow } else { Expected::Deny };
        if got != e.decision {
            failures.push(format!(
                "policy expectation `{}`: expected {:?}, got {:?} (deciding: [{}]; errors: [{}])",
                e.name,
                e.decision,
                got,
                d.deciding.join(", "),
                d.errors.join("; ")
            ));
        }
    }
    failures
}
