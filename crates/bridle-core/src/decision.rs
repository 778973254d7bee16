//! Decision records: one per LLM call (agent, model, tokens, latency, harness checks, verdict).
//!
//! Replay and drift read these; the gate's own audit events live in [`crate::audit`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

/// One LLM decision and what the harness made of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    /// Record id.
    pub decision_id: String,
    /// Pipeline run it belongs to.
    pub pipeline_run_id: String,
    /// Tenant.
    pub tenant: String,
    /// Agent that called the model.
    pub agent: String,
    /// Model name.
    pub model: String,
    /// The recorded input (for replay).
    pub input: Value,
    /// The model's output.
    pub output: Value,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Model latency in milliseconds.
    pub latency_ms: u64,
    /// Checks the harness ran and their results.
    pub harness_checks: Value,
    /// `accepted`, `rejected`, `degraded`, …
    pub final_verdict: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// SHA-256 of the prompt the agent ran with (the registered template's, or the system
    /// prompt's when the agent is not registered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<String>,
    /// The tool-schema version in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_schema_hash: Option<String>,
    /// The policy version in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_version: Option<String>,
}

impl DecisionRecord {
    /// The record in seed 000's shape: `decision_id`, `agent`, `pipeline_run_id`, `input`,
    /// `output`, `model`, `tokens {input, output}`, `latency_ms`, `harness_checks`,
    /// `final_verdict`, `timestamp` (RFC 3339).
    pub fn to_seed_json(&self) -> Value {
        let timestamp = self.created_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
        let mut seed = serde_json::json!({
            "decision_id": self.decision_id,
            "agent": self.agent,
            "pipeline_run_id": self.pipeline_run_id,
            "input": self.input,
            "output": self.output,
            "model": self.model,
            "tokens": {"input": self.prompt_tokens, "output": self.completion_tokens},
            "latency_ms": self.latency_ms,
            "harness_checks": self.harness_checks,
            "final_verdict": self.final_verdict,
            "timestamp": timestamp,
        });
        if let Value::Object(m) = &mut seed {
            let versions = [
                ("prompt_hash", &self.prompt_hash),
                ("tool_schema_hash", &self.tool_schema_hash),
                ("policy_version", &self.policy_version),
            ];
            for (field, value) in versions {
                if let Some(v) = value {
                    m.insert(field.to_owned(), Value::String(v.clone()));
                }
            }
        }
        seed
    }
}
