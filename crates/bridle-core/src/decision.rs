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
}
