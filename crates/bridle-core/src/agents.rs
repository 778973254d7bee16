//! The agent registry (`[[agents]]`): who may act, with which tools, model and prompt, up to
//! which risk; and the versions every audit event and decision record carries.
//!
//! Who the agent of a call is comes from the credential first ([`AgentRegistry::acting`]): a
//! token's `agent` claim, else an `[[agents]] principals` binding of its subject; a request may
//! restate that agent, never change it. Only a credential that names no agent lets the request's
//! own `agent` field speak. [`AgentRegistry::check`] is the policy step's agent rule: an
//! unregistered agent, a tool outside the agent's set or above its risk ceiling is denied. A call
//! on no agent's behalf is decided by the principal's policy alone. This module decides; it reads
//! nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::contract::{Exposure, RiskTier, ToolContract};
use crate::principal::Principal;

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
    /// Subjects whose credentials are this agent's own (`principals = [...]`): their calls are
    /// the agent's even with a token that carries no `agent` claim.
    pub principals: BTreeSet<String>,
}

impl AgentEntry {
    /// Whether the agent may call `tool`: in its set and within its risk ceiling.
    pub fn allows(&self, tool: &ToolContract) -> bool {
        self.tools.contains(&tool.name) && tool.risk <= self.risk_ceiling
    }
}

/// Where a call's agent came from, strongest first. Audit events record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentSource {
    /// The verified token's `agent` claim.
    Claim,
    /// The subject is bound to the agent by `[[agents]] principals`.
    Principal,
    /// Only the request named it (a credential of no agent).
    Request,
}

impl AgentSource {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Claim => "claim",
            Self::Principal => "principal",
            Self::Request => "request",
        }
    }

    /// Whether the agent comes from the credential (claim or binding), not from the request.
    pub const fn by_credential(self) -> bool {
        !matches!(self, Self::Request)
    }
}

/// The agent a call is made for, and how that was established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acting {
    /// Agent id.
    pub agent: String,
    /// Where it came from.
    pub source: AgentSource,
}

/// A request that names an agent other than its credential's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentMismatch {
    /// The credential's agent.
    pub credential: String,
    /// The agent the request named (clipped).
    pub requested: String,
    /// How the credential names its agent.
    pub source: AgentSource,
}

impl AgentMismatch {
    /// The mismatch in words (names in backticks, no final period).
    pub fn message(&self) -> String {
        format!(
            "this credential acts as agent `{}` ({}); the request named `{}`",
            self.credential,
            match self.source {
                AgentSource::Principal => "its subject is bound to it",
                _ => "its `agent` claim",
            },
            self.requested
        )
    }
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

    /// The agent a credential belongs to: `None` for a credential of no agent, `Some(None)` for
    /// a claim naming an agent this configuration does not register (it may call nothing).
    pub fn credential_agent(&self, principal: &Principal) -> Option<Option<&AgentEntry>> {
        match &principal.agent {
            Some(id) => Some(self.agents.get(id)),
            None => self.bound_to(&principal.subject).map(Some),
        }
    }

    /// The agent whose `principals` list `subject`, if any (at most one: checked at load).
    pub fn bound_to(&self, subject: &str) -> Option<&AgentEntry> {
        self.agents.values().find(|a| a.principals.contains(subject))
    }

    /// The agent a call of `principal` is made for. The credential decides: its `agent` claim,
    /// else its subject's binding; `requested` (the request's own field) may only restate it.
    /// A credential of no agent takes the request's word (`AgentSource::Request`), or none.
    pub fn acting(&self, principal: &Principal, requested: Option<&str>) -> Result<Option<Acting>, AgentMismatch> {
        let credential = match &principal.agent {
            Some(agent) => Some((agent.as_str(), AgentSource::Claim)),
            None => self.bound_to(&principal.subject).map(|a| (a.id.as_str(), AgentSource::Principal)),
        };
        match (credential, requested) {
            (Some((agent, source)), None) => Ok(Some(Acting { agent: agent.to_owned(), source })),
            (Some((agent, source)), Some(named)) if named == agent => {
                Ok(Some(Acting { agent: agent.to_owned(), source }))
            }
            (Some((agent, source)), Some(named)) => {
                Err(AgentMismatch { credential: agent.to_owned(), requested: crate::verdict::clip(named, 64), source })
            }
            (None, Some(named)) => Ok(Some(Acting { agent: named.to_owned(), source: AgentSource::Request })),
            (None, None) => Ok(None),
        }
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
            agent_source: None,
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
    /// Where the agent came from (the token's claim, the subject's binding, or the request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_source: Option<AgentSource>,
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

impl Exposure for AgentRegistry {
    /// A credential that belongs to no agent sees every tool its scopes allow; one bound to an
    /// agent sees that agent's tools within its risk ceiling; one naming an unknown agent, none.
    fn exposes(&self, principal: &Principal, tool: &ToolContract) -> bool {
        self.credential_agent(principal).is_none_or(|a| a.as_ref().is_some_and(|a| a.allows(tool)))
    }
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
            principals: BTreeSet::from(["advisor-bot".to_owned()]),
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
    fn the_credential_names_the_agent_and_the_request_may_only_restate_it() {
        let r = AgentRegistry::new([entry(&["x"], RiskTier::Read)]);
        let plain = Principal::new("alice", "t", &[], &[]);
        let claimed = plain.clone().with_agent("advisor");
        let bound = Principal::new("advisor-bot", "t", &[], &[]);
        let acting = |p: &Principal, req: Option<&str>| r.acting(p, req).map(|a| a.map(|a| (a.agent, a.source)));
        assert_eq!(acting(&plain, None), Ok(None));
        assert_eq!(acting(&plain, Some("advisor")), Ok(Some(("advisor".into(), AgentSource::Request))));
        assert_eq!(acting(&claimed, None), Ok(Some(("advisor".into(), AgentSource::Claim))));
        assert_eq!(acting(&claimed, Some("advisor")), Ok(Some(("advisor".into(), AgentSource::Claim))));
        assert_eq!(acting(&bound, None), Ok(Some(("advisor".into(), AgentSource::Principal))));
        let mismatch = r.acting(&claimed, Some("other")).unwrap_err();
        assert_eq!((mismatch.credential.as_str(), mismatch.requested.as_str()), ("advisor", "other"));
        assert!(r.acting(&bound, Some("other")).is_err());
        // A claim wins over a binding: the token says which agent it is.
        let both = bound.with_agent("other-agent");
        assert_eq!(acting(&both, None), Ok(Some(("other-agent".into(), AgentSource::Claim))));
    }

    #[test]
    fn denial_rules_have_stable_names() {
        let d = AgentDenial::NotRegistered { agent: "x".into() };
        assert_eq!(d.rule(), "agent_not_registered");
        assert_eq!(d.message(), "agent `x` is not registered");
    }
}
