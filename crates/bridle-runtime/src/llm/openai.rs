//! The OpenAI-compatible chat completions client (vLLM, Ollama, llama.cpp server, OpenAI).
//!
//! One call is one deadline (the request's `timeout`, else the configured one, 30 s by default):
//! attempts and back-off all fit inside it. 429, 5xx and connection failures are retried with
//! exponential back-off and jitter, waiting what `Retry-After` (or `retry-after-ms`) asks when
//! the server says; other 4xx are never retried. No wait ever passes the deadline: when the next
//! attempt could not start in time, the last failure is returned. Outcomes: `llm_timeout` (the
//! deadline passed while waiting for an answer), `llm_unavailable` (refused or unreachable after
//! retries, with the attempt count), `llm_invalid_output` (a 2xx body that is not a completion).
//! TLS is rustls with the ring provider, installed by [`install_tls_provider`].

use std::time::Duration;

use async_trait::async_trait;
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use tokio::time::Instant;

use super::{ChatRequest, ChatResponse, LlmClient, LlmError, ToolCall, Usage, millis};

/// Where and how to reach the server.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// Server root or its `/v1` (`http://127.0.0.1:11434`, `https://api.openai.com/v1`);
    /// requests go to `{root}/v1/chat/completions`.
    pub base_url: String,
    /// Bearer token, when the server wants one.
    pub api_key: Option<String>,
    /// Model name sent with every request.
    pub model: String,
    /// Deadline of a call whose request names none (default 30 s).
    pub timeout: Duration,
    /// Most HTTP attempts per call, the first included (default 4).
    pub max_attempts: u32,
    /// First back-off (default 250 ms); doubled per retry, with jitter.
    pub backoff_base: Duration,
    /// Longest back-off (default 8 s); `Retry-After` may ask for longer, within the deadline.
    pub backoff_max: Duration,
}

impl OpenAiConfig {
    /// Defaults for `model` at `base_url`, without an API key.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            timeout: Duration::from_secs(30),
            max_attempts: 4,
            backoff_base: Duration::from_millis(250),
            backoff_max: Duration::from_secs(8),
        }
    }

    /// The chat completions URL.
    pub fn endpoint(&self) -> String {
        let root = self.base_url.trim_end_matches('/');
        if root.ends_with("/v1") { format!("{root}/chat/completions") } else { format!("{root}/v1/chat/completions") }
    }
}

/// The HTTP client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("cannot build the HTTP client: {0}")]
pub struct ClientBuildError(String);

/// Installs rustls's ring provider as the process default (once; later calls do nothing).
pub fn install_tls_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Err means another thread installed one first, which is just as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// No call waits longer than this, whatever its timeout says.
const LONGEST_CALL: Duration = Duration::from_secs(24 * 60 * 60);

/// An OpenAI-compatible chat completions client.
#[derive(Debug, Clone)]
pub struct OpenAiClient {
    http: reqwest::Client,
    endpoint: String,
    config: OpenAiConfig,
}

/// A failed attempt that may be retried.
struct Retryable {
    reason: String,
    status: Option<u16>,
    retry_after: Option<Duration>,
}

/// The outcome of one HTTP attempt.
enum Attempt {
    Answered(Vec<u8>),
    Retry(Retryable),
    Final(LlmError),
}

impl OpenAiClient {
    /// A client for `config`.
    pub fn new(config: OpenAiConfig) -> Result<Self, ClientBuildError> {
        install_tls_provider();
        let http = reqwest::Client::builder().build().map_err(|e| ClientBuildError(e.to_string()))?;
        Ok(Self { http, endpoint: config.endpoint(), config })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    async fn attempt(&self, agent: &str, body: &[u8]) -> Attempt {
        let mut request = self.http.post(&self.endpoint).header(CONTENT_TYPE, "application/json").body(body.to_vec());
        if let Some(key) = &self.config.api_key {
            request = request.header(AUTHORIZATION, format!("Bearer {key}"));
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Attempt::Retry(Retryable { reason: error_chain(&e), status: None, retry_after: None }),
        };
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let bytes = match response.bytes().await {
            Ok(b) => b.to_vec(),
            Err(e) => {
                let reason = format!("reading the body failed: {}", error_chain(&e));
                return Attempt::Retry(Retryable { reason, status: Some(status.as_u16()), retry_after });
            }
        };
        if status.is_success() {
            return Attempt::Answered(bytes);
        }
        let reason = format!("HTTP {}: {}", status.as_u16(), server_message(&bytes));
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            Attempt::Retry(Retryable { reason, status: Some(status.as_u16()), retry_after })
        } else {
            Attempt::Final(LlmError::Unavailable {
                agent: agent.to_owned(),
                reason,
                status: Some(status.as_u16()),
                attempts: 0,
            })
        }
    }

    /// Back-off before retry `retry` (1 for the first): `base · 2^(retry-1)` capped at the
    /// maximum, then "equal jitter" (a random point in its upper half).
    fn backoff(&self, retry: u32) -> Duration {
        let doubled =
            self.config.backoff_base.saturating_mul(1u32.checked_shl(retry.saturating_sub(1)).unwrap_or(u32::MAX));
        let full = doubled.min(self.config.backoff_max);
        let half = full / 2;
        let spread = u64::try_from(half.as_micros()).unwrap_or(u64::MAX).saturating_add(1);
        let random = u64::try_from(uuid::Uuid::new_v4().as_u128() & u128::from(u64::MAX)).unwrap_or(0);
        half.saturating_add(Duration::from_micros(random % spread))
    }
}

#[async_trait]
impl LlmClient for OpenAiClient {
    fn system(&self) -> &str {
        "openai"
    }

    fn model(&self) -> Option<&str> {
        Some(&self.config.model)
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let deadline = started + request.timeout.unwrap_or(self.config.timeout).min(LONGEST_CALL);
        let agent = request.agent.as_str();
        let body = request_body(&self.config.model, request);
        let timeout =
            |attempts| LlmError::Timeout { agent: agent.to_owned(), elapsed_ms: millis(started.elapsed()), attempts };
        let mut attempts = 0u32;
        loop {
            attempts = attempts.saturating_add(1);
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(timeout(attempts.saturating_sub(1)));
            }
            let failure = match tokio::time::timeout(remaining, self.attempt(agent, &body)).await {
                Err(_) => return Err(timeout(attempts)),
                Ok(Attempt::Answered(bytes)) => return parse_completion(agent, &bytes, started, attempts),
                Ok(Attempt::Final(LlmError::Unavailable { agent, reason, status, .. })) => {
                    return Err(LlmError::Unavailable { agent, reason, status, attempts });
                }
                Ok(Attempt::Final(other)) => return Err(other),
                Ok(Attempt::Retry(failure)) => failure,
            };
            let unavailable = |reason: String| LlmError::Unavailable {
                agent: agent.to_owned(),
                reason,
                status: failure.status,
                attempts,
            };
            if attempts >= self.config.max_attempts {
                return Err(unavailable(failure.reason));
            }
            let wait = failure.retry_after.unwrap_or_else(|| self.backoff(attempts));
            if Instant::now().checked_add(wait).is_none_or(|resume| resume >= deadline) {
                let reason =
                    format!("{}; the next attempt (in {} ms) would pass the deadline", failure.reason, millis(wait));
                return Err(unavailable(reason));
            }
            tracing::debug!(agent, attempts, wait_ms = millis(wait), reason = %failure.reason, "retrying model call");
            tokio::time::sleep(wait).await;
        }
    }
}

/// The request body: model, messages, and the optional tools, JSON mode and sampling settings.
fn request_body(model: &str, request: &ChatRequest) -> Vec<u8> {
    let messages: Vec<Value> = request
        .messages
        .iter()
        .map(|m| {
            let mut wire = Map::new();
            wire.insert("role".into(), json!(m.role));
            wire.insert("content".into(), json!(m.content));
            if !m.tool_calls.is_empty() {
                let calls: Vec<Value> = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
                wire.insert("tool_calls".into(), Value::Array(calls));
            }
            if let Some(id) = &m.tool_call_id {
                wire.insert("tool_call_id".into(), json!(id));
            }
            Value::Object(wire)
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("stream".into(), json!(false));
    if !request.tools.is_empty() {
        body.insert("tools".into(), Value::Array(request.tools.clone()));
    }
    if request.json_mode {
        body.insert("response_format".into(), json!({"type": "json_object"}));
    }
    if let Some(n) = request.max_tokens {
        body.insert("max_tokens".into(), json!(n));
    }
    if let Some(t) = request.temperature {
        body.insert("temperature".into(), json!(t));
    }
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    model: Option<String>,
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    /// A JSON string per the API; some servers send the object itself.
    #[serde(default)]
    arguments: Value,
}

fn parse_completion(agent: &str, bytes: &[u8], started: Instant, attempts: u32) -> Result<ChatResponse, LlmError> {
    let invalid = |reason: String| LlmError::InvalidOutput { agent: agent.to_owned(), reason };
    let completion: Completion =
        serde_json::from_slice(bytes).map_err(|e| invalid(format!("the body is not a chat completion: {e}")))?;
    let choice =
        completion.choices.into_iter().next().ok_or_else(|| invalid("the completion has no choices".into()))?;
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .map(|c| ToolCall {
            id: c.id,
            name: c.function.name,
            arguments: match c.function.arguments {
                Value::String(s) => s,
                Value::Null => String::new(),
                other => other.to_string(),
            },
        })
        .collect();
    Ok(ChatResponse {
        content: choice.message.content.unwrap_or_default(),
        tool_calls,
        usage: completion.usage.unwrap_or_default(),
        latency: started.elapsed(),
        model: completion.model.unwrap_or_default(),
        finish_reason: choice.finish_reason,
        attempts,
    })
}

/// The server's `error.message` (OpenAI's error shape), else the start of the body.
fn server_message(bytes: &[u8]) -> String {
    let parsed: Option<Value> = serde_json::from_slice(bytes).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("error")).or_else(|| v.get("message")))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(bytes).into_owned());
    bridle_core::verdict::clip(message.trim(), 200)
}

/// The wait a 429/503 asks for: `retry-after-ms` (OpenAI), else `Retry-After` in seconds or
/// as an HTTP date.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|t| t.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = OffsetDateTime::parse(value, &time::format_description::well_known::Rfc2822).ok()?;
    Some(Duration::try_from(at - OffsetDateTime::now_utc()).unwrap_or(Duration::ZERO))
}

/// An error with its sources, so "connection refused" is not hidden behind "error sending request".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (reqwest::header::HeaderName::from_static(k), HeaderValue::from_static(v))).collect()
    }

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates() {
        assert_eq!(retry_after(&headers(&[("retry-after-ms", "1500")])), Some(Duration::from_millis(1500)));
        assert_eq!(retry_after(&headers(&[("retry-after", "2")])), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(&headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")])), Some(Duration::ZERO));
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn backoff_doubles_within_its_cap_with_jitter_in_the_upper_half() {
        let mut config = OpenAiConfig::new("http://h", "m");
        config.backoff_base = Duration::from_millis(100);
        config.backoff_max = Duration::from_millis(300);
        let Ok(client) = OpenAiClient::new(config) else { return };
        for _ in 0..50 {
            let first = client.backoff(1);
            assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100), "{first:?}");
            let third = client.backoff(3);
            assert!(third >= Duration::from_millis(150) && third <= Duration::from_millis(300), "{third:?}");
            assert!(client.backoff(40) <= Duration::from_millis(300));
        }
    }
}
