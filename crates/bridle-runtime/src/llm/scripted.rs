//! The scripted model: deterministic replies from a file, the embedded default for demos and
//! tests, and the way replays of recorded inputs get their answers.
//!
//! A script is TOML (or JSON with the same fields; `from_file` picks by the `.json` extension):
//!
//! ```toml
//! model = "scripted"                # the model name reported (optional)
//!
//! [[reply]]                         # keyed by agent and turn ...
//! agent = "advisor"
//! turn = 1
//! attempt = 2                       # optional: only this attempt of the turn (else any attempt)
//! content = "plain text"            # the answer's text, or:
//! json = { action_id = "a1" }       #   a JSON value, answered as its compact text
//! tool_calls = [{ id = "call_1", name = "calculate", arguments = '{"expression":"2*3"}' }]
//! usage = { prompt_tokens = 12, completion_tokens = 30 }
//! delay_ms = 100                    # wait before answering
//! error = "429"                     # or "timeout", "500", "invalid_json"
//! finish_reason = "stop"
//!
//! [[reply]]                         # ... or by the hash of the input messages
//! messages_hash = "9f2c…"           # see `llm::messages_hash`
//! content = "…"
//! ```
//!
//! Lookup: the messages hash first (a recorded input gets its recorded answer), then
//! (agent, turn, attempt), then (agent, turn). A reply without `usage` reports ⌈chars / 4⌉
//! tokens for the prompt and for the answer. A delay longer than the request's timeout ends in
//! `llm_timeout` when the timeout passes. Errors: `timeout` → `llm_timeout`, `429` and `500` →
//! `llm_unavailable` with that status, `invalid_json` → `llm_invalid_output`; no matching reply
//! → `llm_unavailable` naming the agent, turn and hash.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use super::{ChatRequest, ChatResponse, LlmClient, LlmError, ToolCall, Usage, messages_hash, millis};

/// An error a scripted reply stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScriptedError {
    /// `llm_timeout`.
    #[serde(rename = "timeout")]
    Timeout,
    /// HTTP 429 → `llm_unavailable`.
    #[serde(rename = "429")]
    RateLimited,
    /// HTTP 500 → `llm_unavailable`.
    #[serde(rename = "500")]
    ServerError,
    /// A body that is not JSON → `llm_invalid_output`.
    #[serde(rename = "invalid_json")]
    InvalidJson,
}

/// One scripted reply and its key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedReply {
    /// Agent (with `turn`).
    #[serde(default)]
    pub agent: Option<String>,
    /// Turn (with `agent`).
    #[serde(default)]
    pub turn: Option<u32>,
    /// Only this attempt of the turn.
    #[serde(default)]
    pub attempt: Option<u32>,
    /// Or: hex SHA-256 of the input messages' canonical JSON.
    #[serde(default)]
    pub messages_hash: Option<String>,
    /// Answer text.
    #[serde(default)]
    pub content: Option<String>,
    /// Answer as a JSON value.
    #[serde(default)]
    pub json: Option<Value>,
    /// Tool calls.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Reported usage.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Delay before answering, in milliseconds.
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// An error instead of an answer.
    #[serde(default)]
    pub error: Option<ScriptedError>,
    /// Finish reason.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    #[serde(default)]
    model: Option<String>,
    #[serde(default, alias = "replies")]
    reply: Vec<ScriptedReply>,
}

/// A script that could not be loaded; `Invalid` lists every problem at once.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read.
    #[error("cannot read script `{path}`: {reason}")]
    Read {
        /// Path.
        path: String,
        /// OS error.
        reason: String,
    },
    /// Not valid TOML/JSON of the script's shape.
    #[error("cannot parse script: {0}")]
    Parse(String),
    /// Replies with missing, conflicting or duplicate keys.
    #[error("invalid script: {}", .0.join("; "))]
    Invalid(Vec<String>),
}

type TurnKey = (String, u32, Option<u32>);

/// Deterministic replies keyed by agent and turn or by the input's hash.
#[derive(Debug)]
pub struct ScriptedModel {
    model: String,
    by_hash: HashMap<String, ScriptedReply>,
    by_turn: HashMap<TurnKey, ScriptedReply>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl ScriptedModel {
    /// A model answering with `replies`, after checking their keys.
    pub fn new(model: impl Into<String>, replies: Vec<ScriptedReply>) -> Result<Self, ScriptError> {
        let mut errors = Vec::new();
        let mut by_hash = HashMap::new();
        let mut by_turn = HashMap::new();
        for (i, reply) in replies.into_iter().enumerate() {
            let at = format!("reply {}", i.saturating_add(1));
            if reply.content.is_some() && reply.json.is_some() {
                errors.push(format!("{at}: `content` and `json` both set"));
            }
            match (reply.messages_hash.clone(), reply.agent.clone(), reply.turn) {
                (Some(hash), None, None) => {
                    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
                        errors.push(format!("{at}: `messages_hash` must be 64 lowercase hex digits"));
                    } else if by_hash.insert(hash.clone(), reply).is_some() {
                        errors.push(format!("{at}: a second reply for messages hash `{hash}`"));
                    }
                }
                (None, Some(agent), Some(turn)) => {
                    let key = (agent.clone(), turn, reply.attempt);
                    if by_turn.insert(key, reply).is_some() {
                        errors.push(format!("{at}: a second reply for agent `{agent}` turn {turn}"));
                    }
                }
                _ => {
                    errors.push(format!("{at}: key it by `agent` + `turn` or by `messages_hash`, not both or neither"))
                }
            }
        }
        if !errors.is_empty() {
            return Err(ScriptError::Invalid(errors));
        }
        Ok(Self { model: model.into(), by_hash, by_turn, requests: Mutex::new(Vec::new()) })
    }

    /// Parses a TOML script.
    pub fn from_toml_str(text: &str) -> Result<Self, ScriptError> {
        let script: Script = toml::from_str(text).map_err(|e| ScriptError::Parse(e.to_string()))?;
        Self::from_script(script)
    }

    /// Parses a JSON script.
    pub fn from_json_str(text: &str) -> Result<Self, ScriptError> {
        let script: Script = serde_json::from_str(text).map_err(|e| ScriptError::Parse(e.to_string()))?;
        Self::from_script(script)
    }

    /// Reads a script file: JSON when it ends in `.json`, TOML otherwise.
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let text = crate::bundled::read_text(path)
            .map_err(|e| ScriptError::Read { path: path.display().to_string(), reason: e.to_string() })?;
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            Self::from_json_str(&text)
        } else {
            Self::from_toml_str(&text)
        }
    }

    fn from_script(script: Script) -> Result<Self, ScriptError> {
        Self::new(script.model.unwrap_or_else(|| "scripted".to_owned()), script.reply)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    fn find(&self, request: &ChatRequest, hash: &str) -> Option<&ScriptedReply> {
        let agent = request.agent.clone();
        self.by_hash
            .get(hash)
            .or_else(|| self.by_turn.get(&(agent.clone(), request.turn, Some(request.attempt))))
            .or_else(|| self.by_turn.get(&(agent, request.turn, None)))
    }
}

#[async_trait]
impl LlmClient for ScriptedModel {
    fn system(&self) -> &str {
        "bridle.scripted"
    }

    fn model(&self) -> Option<&str> {
        Some(&self.model)
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        if let Ok(mut log) = self.requests.lock() {
            log.push(request.clone());
        }
        let agent = request.agent.clone();
        let hash = messages_hash(&request.messages).unwrap_or_default();
        let Some(reply) = self.find(request, &hash) else {
            return Err(LlmError::Unavailable {
                agent: agent.clone(),
                reason: format!(
                    "no scripted reply for agent `{agent}` turn {} attempt {} (messages hash `{hash}`)",
                    request.turn, request.attempt
                ),
                status: None,
                attempts: 1,
            });
        };
        let timeout =
            |elapsed: Duration| LlmError::Timeout { agent: agent.clone(), elapsed_ms: millis(elapsed), attempts: 1 };
        if let Some(delay) = reply.delay_ms.map(Duration::from_millis) {
            match request.timeout {
                Some(limit) if limit <= delay => {
                    tokio::time::sleep(limit).await;
                    return Err(timeout(started.elapsed()));
                }
                _ => tokio::time::sleep(delay).await,
            }
        }
        let unavailable = |status: u16| LlmError::Unavailable {
            agent: agent.clone(),
            reason: format!("HTTP {status}: scripted error"),
            status: Some(status),
            attempts: 1,
        };
        match reply.error {
            Some(ScriptedError::Timeout) => return Err(timeout(started.elapsed())),
            Some(ScriptedError::RateLimited) => return Err(unavailable(429)),
            Some(ScriptedError::ServerError) => return Err(unavailable(500)),
            Some(ScriptedError::InvalidJson) => {
                return Err(LlmError::InvalidOutput {
                    agent,
                    reason: "the body is not a chat completion: scripted invalid JSON".into(),
                });
            }
            None => {}
        }
        let content = match (&reply.content, &reply.json) {
            (Some(text), _) => text.clone(),
            (None, Some(value)) => value.to_string(),
            (None, None) => String::new(),
        };
        let usage = reply.usage.unwrap_or_else(|| Usage {
            prompt_tokens: estimate_tokens(request.messages.iter().map(|m| m.content.chars().count()).sum()),
            completion_tokens: estimate_tokens(content.chars().count()),
        });
        let finish_reason = reply
            .finish_reason
            .clone()
            .or_else(|| Some(if reply.tool_calls.is_empty() { "stop" } else { "tool_calls" }.to_owned()));
        Ok(ChatResponse {
            content,
            tool_calls: reply.tool_calls.clone(),
            usage,
            latency: started.elapsed(),
            model: self.model.clone(),
            finish_reason,
            attempts: 1,
        })
    }
}

/// ⌈chars / 4⌉: a rough token count for replies that state none.
fn estimate_tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}
