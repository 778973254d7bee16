//! Agents with validated outputs: a system prompt, a JSON Schema for the answer, and the rule
//! for an answer that fails it.
//!
//! [`Agent::call`] asks the model in JSON mode, reads the answer as JSON (a fenced ```` ```json ````
//! block is tolerated) and validates it against the agent's schema (draft 2020-12). An invalid
//! answer gets exactly one retry, with the validation errors fed back as a user message
//! (configurable: [`AgentSpec::retry_invalid`]); after that the result is degraded
//! (`is_degraded: true`, `confidence: 0`, every error kept). Model failures (`llm_timeout`,
//! `llm_unavailable`, refusals of the limits) are errors, not degraded results: retrying them
//! is the caller's policy. This module must not act on an answer: the gate does.

use std::time::Duration;

use bridle_core::decision::DecisionRecord;
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::cancel::CancelToken;
use crate::llm::{ChatRequest, LlmClient, LlmError, Message, Usage};

/// Seed 000's `AdvisorOutput`: `action_id` (string), `parameters` (object), `confidence`
/// (number in 0–1) and `reasoning` (string of at least 10 characters).
pub fn advisor_output_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "AdvisorOutput",
        "type": "object",
        "properties": {
            "action_id": {"type": "string", "minLength": 1},
            "parameters": {"type": "object"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "reasoning": {"type": "string", "minLength": 10}
        },
        "required": ["action_id", "parameters", "confidence", "reasoning"],
        "additionalProperties": false
    })
}

/// What an agent is.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    /// Name (budgets, scripted replies and decision records are keyed by it).
    pub name: String,
    /// System prompt, sent first in every call.
    pub system_prompt: String,
    /// JSON Schema (draft 2020-12) of the answer.
    pub output_schema: Value,
    /// Whether an invalid answer gets its one retry (default true).
    pub retry_invalid: bool,
    /// Most completion tokens per call.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
}

impl AgentSpec {
    /// An agent with the default settings (one retry on an invalid answer).
    pub fn new(name: impl Into<String>, system_prompt: impl Into<String>, output_schema: Value) -> Self {
        Self {
            name: name.into(),
            system_prompt: system_prompt.into(),
            output_schema,
            retry_invalid: true,
            max_tokens: None,
            temperature: None,
        }
    }
}

/// The agent's schema could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid output schema of agent `{agent}`: {reason}")]
pub struct AgentError {
    /// Agent.
    pub agent: String,
    /// What the compiler said.
    pub reason: String,
}

/// Per-call settings from the caller.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Deadline of each model call (the limits wrapper caps it at its own).
    pub timeout: Option<Duration>,
    /// Cancellation of the surrounding run.
    pub cancel: Option<CancelToken>,
}

/// What an agent call produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentOutput {
    /// Agent.
    pub agent: String,
    /// The validated answer (`null` when degraded).
    pub value: Value,
    /// Whether no valid answer was obtained.
    pub is_degraded: bool,
    /// The answer's own `confidence` when it has one (clamped to 0–1), else 1; 0 when degraded.
    pub confidence: f64,
    /// Every validation error met, prefixed with its attempt.
    pub errors: Vec<String>,
    /// Tokens of all attempts.
    pub usage: Usage,
    /// Model time of all attempts.
    #[serde(rename = "latency_ms", with = "bridle_core::deadline::millis")]
    pub latency: Duration,
    /// Model calls made (1, or 2 after a retry).
    pub attempts: u32,
    /// The model that answered last.
    pub model: String,
    /// The model's last answer as received (kept for decision records and replay).
    pub content: String,
    /// The messages of the first attempt (system prompt, then the input): what a decision
    /// record stores as its input, and whose [`crate::llm::messages_hash`] keys a replay.
    #[serde(skip)]
    pub messages: Vec<Message>,
}

/// Where a decision record of an agent call belongs.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionContext {
    /// Record id.
    pub decision_id: String,
    /// Pipeline run.
    pub pipeline_run_id: String,
    /// Tenant.
    pub tenant: String,
    /// When.
    pub created_at: OffsetDateTime,
}

impl AgentOutput {
    /// `degraded` or `accepted`, for a decision record's `final_verdict`.
    pub fn verdict(&self) -> &'static str {
        if self.is_degraded { "degraded" } else { "accepted" }
    }

    /// The decision record of this call: `input` is the first attempt's messages,
    /// `harness_checks` holds the schema check with its attempts and errors, and `output` is the
    /// validated value, or the raw last answer when degraded.
    pub fn decision_record(&self, context: &DecisionContext) -> DecisionRecord {
        DecisionRecord {
            decision_id: context.decision_id.clone(),
            pipeline_run_id: context.pipeline_run_id.clone(),
            tenant: context.tenant.clone(),
            agent: self.agent.clone(),
            model: self.model.clone(),
            input: serde_json::to_value(&self.messages).unwrap_or(Value::Null),
            output: if self.is_degraded { Value::String(self.content.clone()) } else { self.value.clone() },
            prompt_tokens: self.usage.prompt_tokens,
            completion_tokens: self.usage.completion_tokens,
            latency_ms: crate::llm::millis(self.latency),
            harness_checks: json!({"output_schema": {
                "passed": !self.is_degraded,
                "attempts": self.attempts,
                "errors": self.errors,
            }}),
            final_verdict: self.verdict().to_owned(),
            created_at: context.created_at,
            prompt_hash: self.prompt_hash(),
            tool_schema_hash: None,
            policy_version: None,
        }
    }

    /// SHA-256 of the system prompt this call ran with (the first system message), if any.
    pub fn prompt_hash(&self) -> Option<String> {
        self.messages
            .iter()
            .find(|m| m.role == crate::llm::Role::System)
            .map(|m| bridle_core::agents::prompt_hash(&m.content))
    }
}

/// Stores a decision record once: a record with the same id, written by an earlier attempt of
/// the same task or turn (a resume, a retry), is kept and this one dropped.
pub async fn record_once(
    log: &dyn bridle_core::ports::DecisionLog,
    record: &DecisionRecord,
) -> Result<(), bridle_core::ports::StoreError> {
    match log.record(record).await {
        Ok(()) | Err(bridle_core::ports::StoreError::Duplicate(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Longest validation problem kept (the answer's text must not flood records or prompts).
const MAX_PROBLEM_CHARS: usize = 300;
/// Most validation problems reported per attempt.
const MAX_PROBLEMS: usize = 5;

/// An agent with its compiled output schema.
pub struct Agent {
    spec: AgentSpec,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent").field("spec", &self.spec).finish_non_exhaustive()
    }
}

impl Agent {
    /// Compiles the spec's output schema.
    pub fn new(spec: AgentSpec) -> Result<Self, AgentError> {
        let error = |reason: String| AgentError { agent: spec.name.clone(), reason };
        jsonschema::draft202012::meta::validate(&spec.output_schema).map_err(|e| error(e.to_string()))?;
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&spec.output_schema)
            .map_err(|e| error(e.to_string()))?;
        Ok(Self { spec, validator })
    }

    /// The spec.
    pub fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    /// Reads `content` as JSON (tolerating a fenced block) and validates it: the value, or the
    /// problems found.
    pub fn validate(&self, content: &str) -> Result<Value, Vec<String>> {
        let value = parse_json(content).map_err(|e| vec![format!("the output is not JSON: {e}")])?;
        if self.validator.is_valid(&value) {
            return Ok(value);
        }
        Err(self
            .validator
            .iter_errors(&value)
            .take(MAX_PROBLEMS)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                bridle_core::verdict::clip(&format!("at `{at}`: {e}"), MAX_PROBLEM_CHARS)
            })
            .collect())
    }

    /// Asks the model at `turn` with `input` after the system prompt; see the module doc.
    pub async fn call(&self, client: &dyn LlmClient, turn: u32, input: Vec<Message>) -> Result<AgentOutput, LlmError> {
        self.call_with(client, turn, input, &CallOptions::default()).await
    }

    /// [`Agent::call`] with a timeout and a cancellation token.
    pub async fn call_with(
        &self,
        client: &dyn LlmClient,
        turn: u32,
        input: Vec<Message>,
        options: &CallOptions,
    ) -> Result<AgentOutput, LlmError> {
        let mut messages = Vec::with_capacity(input.len().saturating_add(1));
        messages.push(Message::system(self.spec.system_prompt.clone()));
        messages.extend(input);
        let attempts_allowed = if self.spec.retry_invalid { 2 } else { 1 };
        let mut output = AgentOutput {
            agent: self.spec.name.clone(),
            value: Value::Null,
            is_degraded: true,
            confidence: 0.0,
            errors: Vec::new(),
            usage: Usage::default(),
            latency: Duration::ZERO,
            attempts: 0,
            model: String::new(),
            content: String::new(),
            messages: messages.clone(),
        };
        for attempt in 1..=attempts_allowed {
            let request = ChatRequest {
                attempt,
                tools: Vec::new(),
                json_mode: true,
                max_tokens: self.spec.max_tokens,
                temperature: self.spec.temperature,
                timeout: options.timeout,
                cancel: options.cancel.clone(),
                ..ChatRequest::new(self.spec.name.clone(), turn, messages.clone())
            };
            let response = client.chat(&request).await?;
            output.attempts = attempt;
            output.usage = output.usage.plus(response.usage);
            output.latency = output.latency.saturating_add(response.latency);
            output.model = response.model;
            output.content = response.content;
            match self.validate(&output.content) {
                Ok(value) => {
                    output.confidence =
                        value.get("confidence").and_then(Value::as_f64).map_or(1.0, |c| c.clamp(0.0, 1.0));
                    output.value = value;
                    output.is_degraded = false;
                    return Ok(output);
                }
                Err(problems) => {
                    tracing::debug!(agent = %self.spec.name, turn, attempt, problems = ?problems, "agent output invalid");
                    let joined = problems.join("; ");
                    output.errors.push(format!("attempt {attempt}: {joined}"));
                    messages.push(Message::assistant(output.content.clone()));
                    messages.push(Message::user(feedback(&joined)));
                }
            }
        }
        Ok(output)
    }
}

/// The user message that asks for a corrected answer.
fn feedback(problems: &str) -> String {
    format!(
        "Your previous answer was rejected by validation: {problems}. Answer again with only a JSON object that \
         satisfies the required schema."
    )
}

/// The JSON in `content`: the whole text, else the first fenced block (```` ```json ```` or ```` ``` ````).
pub(crate) fn parse_json(content: &str) -> Result<Value, serde_json::Error> {
    let direct = serde_json::from_str(content.trim());
    if direct.is_ok() {
        return direct;
    }
    fenced(content).map_or(direct, |inner| serde_json::from_str(inner.trim()))
}

fn fenced(content: &str) -> Option<&str> {
    let (_, after) = content.split_once("```")?;
    // Skip the info string (`json`, `JSON`, …) up to the end of the fence line.
    let (_, body) = after.split_once('\n')?;
    let (inner, _) = body.split_once("```")?;
    Some(inner)
}
