//! LLM clients: the [`LlmClient`] port, its chat request/response values and its errors.
//!
//! Implementations: [`openai::OpenAiClient`] (any OpenAI-compatible `/v1/chat/completions`
//! server: vLLM, Ollama, llama.cpp server, OpenAI), [`scripted::ScriptedModel`] (deterministic
//! replies from a file, the default for demos and tests), [`command::CommandModel`] (the operator
//! chat's model when none is configured: `tool key=value` commands and plain requests naming a
//! tool) and [`limits::LimitedClient`], a wrapper enforcing the per-call deadline, token budgets,
//! the cost circuit and cancellation. Every failure maps to a stable code: `llm_timeout`,
//! `llm_unavailable`, `llm_invalid_output`, or the code of the harness's own refusal
//! (`budget_exhausted`, `circuit_open`, `cancelled`, …).
//! This module must not decide what an answer means: agents ([`crate::agent`]) and the gate do.

pub mod command;
pub mod limits;
pub mod openai;
pub mod scripted;

use std::time::Duration;

use async_trait::async_trait;
use bridle_core::plan::canonical_bytes;
use bridle_core::{Code, Rejection};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub use crate::cancel::CancelToken;
pub use command::CommandModel;
pub use limits::{LimitedClient, Limits};
pub use openai::{OpenAiClient, OpenAiConfig};
pub use scripted::ScriptedModel;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions from the harness.
    System,
    /// The user or the harness speaking for it.
    User,
    /// The model.
    Assistant,
    /// A tool's result, answering an assistant's tool call.
    Tool,
}

/// A tool call asked for by the model (OpenAI's `function` tool call).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The call id the tool's answer refers to.
    pub id: String,
    /// Function name.
    pub name: String,
    /// Arguments as the model wrote them (JSON text, not yet validated).
    pub arguments: String,
}

/// One chat message. Its serde form (the fields below, empty ones omitted) is what
/// [`messages_hash`] hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Text.
    #[serde(default)]
    pub content: String,
    /// Tool calls of an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A message of `role` with `content`.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self { role, content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A tool result answering call `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { tool_call_id: Some(call_id.into()), ..Self::new(Role::Tool, content) }
    }
}

/// One chat completion request.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    /// The agent asking (budgets, scripted replies and records are keyed by it).
    pub agent: String,
    /// The agent's turn, counted by the caller from 1.
    pub turn: u32,
    /// The attempt within the turn, from 1 (an agent's validation retry is attempt 2).
    pub attempt: u32,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Tools in OpenAI function format (`{"type": "function", "function": {...}}`).
    pub tools: Vec<Value>,
    /// Ask for a JSON object answer (`response_format: {"type": "json_object"}`).
    pub json_mode: bool,
    /// Most completion tokens.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// How long the whole call may take, retries included; `None` uses the client's default.
    pub timeout: Option<Duration>,
    /// Cancellation of the work this call belongs to.
    pub cancel: Option<CancelToken>,
}

impl ChatRequest {
    /// A request of `agent` at `turn` (attempt 1) with `messages`.
    pub fn new(agent: impl Into<String>, turn: u32, messages: Vec<Message>) -> Self {
        Self { agent: agent.into(), turn, attempt: 1, messages, ..Self::default() }
    }
}

/// Tokens of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub completion_tokens: u64,
}

impl Usage {
    /// Prompt + completion.
    pub fn total(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.completion_tokens)
    }

    /// The sum of two usages.
    #[must_use]
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self.completion_tokens.saturating_add(other.completion_tokens),
        }
    }
}

/// The model's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// Text content (empty when the model only called tools).
    pub content: String,
    /// Tool calls asked for.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage as reported by the server (zero when it reports none).
    pub usage: Usage,
    /// Wall time of the call, retries and back-off included.
    pub latency: Duration,
    /// The model that answered.
    pub model: String,
    /// Why the model stopped (`stop`, `length`, `tool_calls`, …), when reported.
    pub finish_reason: Option<String>,
    /// HTTP attempts made (1 without retries).
    pub attempts: u32,
}

/// Why a model call failed. [`LlmError::code`] gives the stable code.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// No answer within the call's deadline.
    #[error("model call of agent `{agent}` timed out after {elapsed_ms} ms ({attempts} attempts)")]
    Timeout {
        /// Agent.
        agent: String,
        /// Time spent.
        elapsed_ms: u64,
        /// Attempts made.
        attempts: u32,
    },
    /// The endpoint could not be reached or refused, after any retries.
    #[error("model endpoint unavailable for agent `{agent}` after {attempts} attempts: {reason}")]
    Unavailable {
        /// Agent.
        agent: String,
        /// What went wrong last.
        reason: String,
        /// The last HTTP status, if any.
        status: Option<u16>,
        /// Attempts made.
        attempts: u32,
    },
    /// The endpoint answered with something that is not a chat completion.
    #[error("unreadable model output for agent `{agent}`: {reason}")]
    InvalidOutput {
        /// Agent.
        agent: String,
        /// What was wrong.
        reason: String,
    },
    /// The harness refused the call (budget, circuit, deadline, cancellation).
    #[error("{0}")]
    Refused(Rejection),
}

impl LlmError {
    /// The stable code.
    pub fn code(&self) -> Code {
        match self {
            Self::Timeout { .. } => Code::LlmTimeout,
            Self::Unavailable { .. } => Code::LlmUnavailable,
            Self::InvalidOutput { .. } => Code::LlmInvalidOutput,
            Self::Refused(r) => r.code,
        }
    }

    /// The error as a rejection (code, message, structured detail).
    pub fn to_rejection(&self) -> Rejection {
        match self {
            Self::Refused(r) => r.clone(),
            Self::Timeout { agent, elapsed_ms, attempts } => Rejection::new(self.code(), self.to_string())
                .with_detail(json!({"agent": agent, "elapsed_ms": elapsed_ms, "attempts": attempts})),
            Self::Unavailable { agent, status, attempts, .. } => Rejection::new(self.code(), self.to_string())
                .with_detail(json!({"agent": agent, "status": status, "attempts": attempts})),
            Self::InvalidOutput { agent, .. } => {
                Rejection::new(self.code(), self.to_string()).with_detail(json!({"agent": agent}))
            }
        }
    }
}

impl From<Rejection> for LlmError {
    fn from(r: Rejection) -> Self {
        Self::Refused(r)
    }
}

/// A chat model. Object safe: hold it as `Arc<dyn LlmClient>`.
#[async_trait]
pub trait LlmClient: Send + Sync {
    /// Sends one chat request and waits for the answer.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// The provider, as OpenTelemetry's `gen_ai.system` names it (`openai`, …).
    fn system(&self) -> &str {
        "unknown"
    }

    /// The model requests go to, when the client names one.
    fn model(&self) -> Option<&str> {
        None
    }
}

/// The key of recorded inputs: hex SHA-256 of the RFC 8785 canonical JSON of the messages
/// (an array of their serde forms).
pub fn messages_hash(messages: &[Message]) -> Result<String, bridle_core::plan::CanonicalError> {
    let bytes = canonical_bytes(&messages)?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

/// Milliseconds of a duration, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
