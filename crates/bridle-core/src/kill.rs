//! The kill switch: scopes (everything, a tenant, an agent, or an agent within a tenant) that
//! stop every gate call they cover with `killed` until lifted. Data and matching only; the
//! switches live in a store (`ports::KillSwitches`) so every replica sees them.

use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;

use crate::code::Code;
use crate::verdict::Rejection;

/// What a switch covers. `tenant: None` covers every tenant, `agent: None` every agent (and
/// calls on no agent's behalf).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct KillScope {
    /// Tenant covered, or all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Agent covered, or all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl KillScope {
    /// Everything.
    pub const fn all() -> Self {
        Self { tenant: None, agent: None }
    }

    /// One tenant.
    pub fn tenant(tenant: &str) -> Self {
        Self { tenant: Some(tenant.to_owned()), agent: None }
    }

    /// One agent in every tenant.
    pub fn agent(agent: &str) -> Self {
        Self { tenant: None, agent: Some(agent.to_owned()) }
    }

    /// Whether a call of `tenant` on behalf of `agent` is covered.
    pub fn covers(&self, tenant: &str, agent: Option<&str>) -> bool {
        self.tenant.as_deref().is_none_or(|t| t == tenant) && self.agent.as_deref().is_none_or(|a| Some(a) == agent)
    }

    /// The scope in words: `all`, `tenant \`t\``, `agent \`a\``, `agent \`a\` in tenant \`t\``.
    pub fn describe(&self) -> String {
        match (&self.tenant, &self.agent) {
            (None, None) => "all".to_owned(),
            (Some(t), None) => format!("tenant `{t}`"),
            (None, Some(a)) => format!("agent `{a}`"),
            (Some(t), Some(a)) => format!("agent `{a}` in tenant `{t}`"),
        }
    }
}

/// One switch that is on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillSwitch {
    /// What it covers.
    #[serde(flatten)]
    pub scope: KillScope,
    /// Why it was set.
    pub reason: String,
    /// Who set it.
    pub set_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub set_at: OffsetDateTime,
}

impl KillSwitch {
    /// The `killed` rejection of a call this switch covers.
    pub fn rejection(&self) -> Rejection {
        let set_at = self.set_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
        Rejection::new(
            Code::Killed,
            format!("kill switch on for {} since {set_at}: {}", self.scope.describe(), self.reason),
        )
        .with_detail(json!({"scope": self.scope, "set_by": self.set_by, "set_at": set_at}))
    }
}

/// The earliest set of `switches` covering a call of `tenant` on behalf of `agent` (ties by
/// scope, "every" first): the switch a store reports, whatever order it read them in.
pub fn covering_earliest<'a>(
    switches: impl IntoIterator<Item = &'a KillSwitch>,
    tenant: &str,
    agent: Option<&str>,
) -> Option<&'a KillSwitch> {
    switches
        .into_iter()
        .filter(|s| s.scope.covers(tenant, agent))
        .min_by(|a, b| a.set_at.cmp(&b.set_at).then_with(|| a.scope.cmp(&b.scope)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_cover_what_they_name() {
        assert!(KillScope::all().covers("t", None));
        assert!(KillScope::tenant("t").covers("t", Some("a")));
        assert!(!KillScope::tenant("t").covers("u", None));
        assert!(KillScope::agent("a").covers("u", Some("a")));
        assert!(!KillScope::agent("a").covers("u", None));
        assert!(!KillScope::agent("a").covers("u", Some("b")));
        let both = KillScope { tenant: Some("t".into()), agent: Some("a".into()) };
        assert!(both.covers("t", Some("a")) && !both.covers("u", Some("a")) && !both.covers("t", Some("b")));
    }
}
