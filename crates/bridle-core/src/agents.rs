//! The agent registry (`[[agents]]`): who may act, with which tools, model and prompt, up to
//! which risk; and the versions every audit event and decision record carries.
//!
//! A call names its agent (`CallRequest::agent`); [`AgentRegistry::check`] is the policy step's
//! agent rule: an unregistered agent, a tool outside the agent's set or above its risk ceiling
//! is denied. A call that names no agent is not on an agent's behalf and is decided by the
//! principal's policy alone, as before. This module decides; it reads nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::contract::{RiskTier, ToolContract};

/// One registered agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentEntry {
    /// Stable id (`diagnostician`); calls and decision records name it.
    pub id: String,
    /// Who answers for it (a team or a person).
    pub owner: String,
    /// What it is for, in words.
    pub purpose: String,
    /// Tools it may call; any other is denied at policy.
    pub tools: BTreeSet<String>,
    /// The model it runs on (the model version).
    pub model: String,
    /// Its prompt template as configured (inline or from a file).
    #[serde(skip)]
    pub prompt: String,
    /// SHA-256 (hex) of the prompt template: the prompt version.
    pub prompt_hash: String,
    /// The riskiest tool tier it may call.
    pub risk_ceiling: RiskTier,
}

/// Why the agent rule denied a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentDenial {
    /// The call names an agent the configuration does not register.
    NotRegistered {
        /// The name given (clipped).
        agent: String,
    },
    /// The tool is not in the agent's set.
    ToolNotAllowed {
        /// Agent id.
        agent: String,
        /// Tool name.
        tool: String,
    },
    /// The tool's risk tier is above the agent's ceiling.
    AboveRiskCeiling {
        /// Agent id.
        agent: String,
        /// Tool name.
        tool: String,
        /// The tool's tier.
        risk: RiskTier,
        /// The agent's ceiling.
        ceiling: RiskTier,
    },
}

impl AgentDenial {
    /// Stable snake_case name of the rule that denied (the rejection's `detail.agent_rule`).
    pub const fn rule(&self) -> &'static str {
        match self {
            Self::NotRegistered { .. } => "agent_not_registered",
            Self::ToolNotAllowed { .. } => "tool_not_allowed_for_agent",
            Self::AboveRiskCeiling { .. } => "above_agent_risk_ceiling",
        }
    }

    /// The denial in words (names in backticks, no final period).
    pub fn message(&self) -> String {
        match self {
            Self::NotRegistered { agent } => format!("agent `{agent}` is not registered"),
            Self::ToolNotAllowed { agent, tool } => format!("agent `{agent}` may not call `{tool}`"),
            Self::AboveRiskCeiling { agent, tool, risk, ceiling } => {
                format!("`{tool}` is `{}` risk, above agent `{agent}`'s ceiling `{}`", risk.as_str(), ceiling.as_str())
            }
        }
    }
}

/// Every registered agent, by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentRegistry {
    agents: BTreeMap<String, AgentEntry>,
}

impl AgentRegistry {
    /// A registry of `agents` (ids unique by construction of the map).
    pub fn new(agents: impl IntoIterator<Item = AgentEntry>) -> Self {
        Self { agents: agents.into_iter().map(|a| (a.id.clone(), a)).collect() }
    }

    /// Looks an agent up.
    pub fn get(&self, id: &str) -> Option<&AgentEntry> {
        self.agents.get(id)
    }

    /// Every agent, by id.
    pub fn iter(&self) -> impl Iterator<Item = &AgentEntry> {
        self.agents.values()
    }

    /// Whether no agent is registered.
    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// The agent rule of the policy step: `Ok(None)` for a call on no agent's behalf,
    /// `Ok(Some(entry))` when the agent may call `tool`, else the denial.
    pub fn check(&self, agent: Option<&str>, tool: &ToolContract) -> Result<Option<&AgentEntry>, AgentDenial> {
        let Some(id) = agent else { return Ok(None) };
        let entry =
            self.agents.get(id).ok_or_else(|| AgentDenial::NotRegistered { agent: crate::verdict::clip(id, 64) })?;
        if !entry.tools.contains(&tool.name) {
            return Err(AgentDenial::ToolNotAllowed { agent: entry.id.clone(), tool: tool.name.clone() });
        }
        if tool.risk > entry.risk_ceiling {
            return Err(AgentDenial::AboveRiskCeiling {
                agent: entry.id.clone(),
                tool: tool.name.clone(),
                risk: tool.risk,
                ceiling: entry.risk_ceiling,
            });
        }
        Ok(Some(entry))
    }

    /// The versions a record made on behalf of `agent` carries (agent fields empty for no agent
    /// or an unregistered one, whose name is still recorded when given).
    pub fn versions(&self, agent: Option<&str>, tool_schema_hash: &str) -> Versions {
        let entry = agent.and_then(|id| self.agents.get(id));
        Versions {
            agent_id: agent.map(|a| crate::verdict::clip(a, 64)),
            model: entry.map(|e| e.model.clone()),
            prompt_hash: entry.map(|e| e.prompt_hash.clone()),
            tool_schema_hash: Some(tool_schema_hash.to_owned()),
        }
    }
}

/// What produced a record, beside its policy version: the agent, its model and prompt
/// versions, and the tool-schema version. Absent fields are not serialized, so records written
/// before these fields existed hash and read exactly as they did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Versions {
    /// The agent the record is on behalf of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The agent's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// SHA-256 of the agent's prompt template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<String>,
    /// SHA-256 of the canonical tool contracts ([`crate::contract::Registry::schema_hash`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_schema_hash: Option<String>,
}

impl Versions {
    /// Only the tool-schema version (records made on no agent's behalf).
    pub fn tools_only(tool_schema_hash: &str) -> Self {
        Self { tool_schema_hash: Some(tool_schema_hash.to_owned()), ..Self::default() }
    }
}

/// SHA-256 (hex) of a prompt template's UTF-8 text: the prompt version.
pub fn prompt_hash(template: &str) -> String {
    hex::encode(Sha256::digest(template.as_bytes()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn entry(tools: &[&str], ceiling: RiskTier) -> AgentEntry {
        AgentEntry {
            id: "advisor".into(),
            owner: "fab-ops".into(),
            purpose: "advise".into(),
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            model: "m-1".into(),
            prompt: "p".into(),
            prompt_hash: prompt_hash("p"),
            risk_ceiling: ceiling,
        }
    }

    #[test]
    fn prompt_hash_is_sha256_of_the_text() {
        assert_eq!(prompt_hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_ne!(prompt_hash("a"), prompt_hash("a "));
    }

    #[test]
    fn absent_versions_serialize_to_nothing() {
        assert_eq!(serde_json::to_string(&Versions::default()).unwrap(), "{}");
        let r = AgentRegistry::new([entry(&["x"], RiskTier::Read)]);
        let v = r.versions(Some("advisor"), "h");
        assert_eq!(v.model.as_deref(), Some("m-1"));
        assert_eq!(v.prompt_hash, Some(prompt_hash("p")));
        let v = r.versions(Some("ghost"), "h");
        assert_eq!((v.agent_id.as_deref(), v.model), (Some("ghost"), None));
    }

    #[test]
    fn denial_rules_have_stable_names() {
        let d = AgentDenial::NotRegistered { agent: "x".into() };
        assert_eq!(d.rule(), "agent_not_registered");
        assert_eq!(d.message(), "agent `x` is not registered");
    }
}
