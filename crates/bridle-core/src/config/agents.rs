//! `[[agents]]`: the agent registry, validated against the tools.
//!
//! ```toml
//! [[agents]]
//! id = "advisor"
//! owner = "fab-process-team"
//! purpose = "proposes one corrective action for a diagnosed anomaly"
//! tools = ["set_temperature", "adjust_gas_flow"]
//! model = "fab-advisor-2026-01"
//! prompt_file = "prompts/advisor.md"     # or prompt = "…" inline; its SHA-256 is the prompt version
//! risk_ceiling = "limited_change"        # read | draft | limited_change | destructive
//! principals = ["advisor-bot"]           # subjects whose credentials are this agent's own
//! ```
//!
//! A subject may be bound to one agent at most: its every call then counts as that agent's,
//! with the agent's tools, risk ceiling and kill switch, even with a token carrying no claim.

use std::collections::BTreeSet;

use serde::Deserialize;

use super::Files;
use super::validate::Errors;
use crate::agents::{AgentEntry, AgentRegistry, prompt_hash};
use crate::contract::{Registry, RiskTier};

/// Longest agent id.
const MAX_ID: usize = 64;
/// Largest prompt template (bytes).
const MAX_PROMPT_BYTES: usize = 256 * 1024;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAgent {
    id: String,
    owner: String,
    purpose: String,
    #[serde(default)]
    tools: Vec<String>,
    model: String,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    prompt_file: Option<String>,
    risk_ceiling: RiskTier,
    #[serde(default)]
    principals: Vec<String>,
}

pub(super) fn agent_registry(
    raw: &[RawAgent],
    tools: &Registry,
    files: &dyn Files,
    errors: &mut Errors,
) -> AgentRegistry {
    let mut seen = BTreeSet::new();
    let mut bound: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
    let mut agents = Vec::new();
    for (i, a) in raw.iter().enumerate() {
        let at = format!("agents[{i}]");
        let id_ok = !a.id.is_empty()
            && a.id.len() <= MAX_ID
            && a.id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !id_ok {
            errors.push(format!("{at}.id"), format!("must be 1–{MAX_ID} characters of A–Z a–z 0–9 _ - ."));
        }
        if !seen.insert(a.id.clone()) {
            errors.push(format!("{at}.id"), format!("agent `{}` is declared twice", a.id));
        }
        for (field, value) in [("owner", &a.owner), ("purpose", &a.purpose), ("model", &a.model)] {
            if value.trim().is_empty() {
                errors.push(format!("{at}.{field}"), "must not be empty");
            }
        }
        for tool in &a.tools {
            match tools.get(tool) {
                None => errors.push(format!("{at}.tools"), format!("`{tool}` is not a registered tool")),
                Some(t) if t.risk > a.risk_ceiling => errors.push(
                    format!("{at}.tools"),
                    format!("`{tool}` is `{}` risk, above the ceiling `{}`", t.risk.as_str(), a.risk_ceiling.as_str()),
                ),
                Some(_) => {}
            }
        }
        for subject in &a.principals {
            if let Err(e) = crate::bounds::check_subject("principals", subject) {
                errors.push(format!("{at}.principals"), e.to_string());
            }
            if let Some(other) = bound.insert(subject, &a.id) {
                errors.push(
                    format!("{at}.principals"),
                    format!("`{subject}` is already bound to agent `{other}`: a subject acts as one agent at most"),
                );
            }
        }
        let prompt = match (&a.prompt, &a.prompt_file) {
            (Some(text), None) => Some(text.clone()),
            (None, Some(path)) => match files.read(path) {
                Ok(text) => Some(text),
                Err(e) => {
                    errors.push(format!("{at}.prompt_file"), format!("cannot read `{path}`: {e}"));
                    None
                }
            },
            _ => {
                errors.push(at.clone(), "set exactly one of `prompt` and `prompt_file`");
                None
            }
        };
        let Some(prompt) = prompt else { continue };
        if prompt.trim().is_empty() || prompt.len() > MAX_PROMPT_BYTES {
            errors.push(format!("{at}.prompt"), format!("must be non-empty and at most {MAX_PROMPT_BYTES} bytes"));
        }
        agents.push(AgentEntry {
            id: a.id.clone(),
            owner: a.owner.clone(),
            purpose: a.purpose.clone(),
            tools: a.tools.iter().cloned().collect(),
            model: a.model.clone(),
            prompt_hash: prompt_hash(&prompt),
            prompt,
            risk_ceiling: a.risk_ceiling,
            principals: a.principals.iter().cloned().collect(),
        });
    }
    AgentRegistry::new(agents)
}
