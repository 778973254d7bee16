//! The OpenAI-compatible client against a local axum server answering with real API bodies.
//!
//! Each scenario is a path prefix (`/{scenario}/v1/chat/completions`); the server counts the
//! requests per scenario, so the tests assert how often the client tried.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bridle_core::Code;
use bridle_runtime::llm::{ChatRequest, LlmClient, LlmError, Message, OpenAiClient, OpenAiConfig};
use serde_json::{Value, json};

/// A real `chat.completion` body (OpenAI, content and usage).
const COMPLETION: &str = r#"{
  "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  "object": "chat.completion",
  "created": 1741569952,
  "model": "gpt-4.1-2025-04-14",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": "Hello! How can I assist you today?",
        "refusal": null,
        "annotations": []
      },
      "logprobs": null,
      "finish_reason": "stop"
    }
  ],
  "usage": {
    "prompt_tokens": 19,
    "completion_tokens": 10,
    "total_tokens": 29,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {
      "reasoning_tokens": 0, "audio_tokens": 0,
      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0
    }
  },
  "service_tier": "default",
  "system_fingerprint": "fp_8dd2ba8a4b"
}"#;

/// A real `chat.completion` body with a function tool call.
const TOOL_CALLS: &str = r#"{
  "id": "chatcmpl-abc123",
  "object": "chat.completion",
  "created": 1699896916,
  "model": "gpt-4o-mini",
  "choices": [
    {
      "index": 0,
      "message": {
        "role": "assistant",
        "content": null,
        "tool_calls": [
          {
            "id": "call_abc123",
            "type": "function",
            "function": {"name": "get_current_weather", "arguments": "{\n\"location\": \"Boston, MA\"\n}"}
          }
        ]
      },
      "logprobs": null,
      "finish_reason": "tool_calls"
    }
  ],
  "usage": {"prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99}
}"#;

const RATE_LIMITED: &str = r#"{"error": {"message": "Rate limit reached for gpt-4o in organization org-xyz on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}"#;
const SERVER_ERROR: &str = r#"{"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error", "param": null, "code": null}}"#;
const BAD_REQUEST: &str = r#"{"error": {"message": "Invalid value for 'temperature': must be between 0 and 2.", "type": "invalid_request_error", "param": "temperature", "code": "invalid_value"}}"#;

#[derive(Default)]
struct Seen {
    counts: HashMap<String, usize>,
    bodies: Vec<Value>,
    auth: Vec<Option<String>>,
}

type Shared = Arc<Mutex<Seen>>;

fn json_response(status: StatusCode, body: &'static str) -> Response {
    (status, [("content-type", "application/json")], body).into_response()
}

async fn completions(
    State(seen): State<Shared>,
    Path(scenario): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let n = {
        let mut seen = seen.lock().unwrap();
        let n = seen.counts.entry(scenario.clone()).or_default();
        *n += 1;
        let n = *n;
        seen.bodies.push(serde_json::from_str(&body).unwrap_or(Value::Null));
        seen.auth.push(headers.get("authorization").map(|v| v.to_str().unwrap().to_owned()));
        n
    };
    match (scenario.as_str(), n) {
        ("ok", _) => json_response(StatusCode::OK, COMPLETION),
        ("tools", _) => json_response(StatusCode::OK, TOOL_CALLS),
        ("rate_limited", 1) => {
            (StatusCode::TOO_MANY_REQUESTS, [("content-type", "application/json"), ("retry-after", "1")], RATE_LIMITED)
                .into_response()
        }
        ("rate_limited_long", _) => {
            (StatusCode::TOO_MANY_REQUESTS, [("content-type", "application/json"), ("retry-after", "20")], RATE_LIMITED)
                .into_response()
        }
        ("flaky", 1 | 2) | ("down", _) => json_response(StatusCode::INTERNAL_SERVER_ERROR, SERVER_ERROR),
        ("bad_request", _) => json_response(StatusCode::BAD_REQUEST, BAD_REQUEST),
        ("slow", _) => {
            tokio::time::sleep(Duration::from_secs(3)).await;
            json_response(StatusCode::OK, COMPLETION)
        }
        ("garbage", _) => {
            (StatusCode::OK, [("content-type", "application/json")], "{\"id\": \"chatcmpl-1\", \"choi").into_response()
        }
        _ => json_response(StatusCode::OK, COMPLETION),
    }
}

struct Server {
    root: String,
    seen: Shared,
}

impl Server {
    async fn start() -> Server {
        let seen: Shared = Arc::default();
        let app = Router::new().route("/{scenario}/v1/chat/completions", post(completions)).with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Server { root: format!("http://{addr}"), seen }
    }

    fn client(&self, scenario: &str) -> OpenAiClient {
        let mut config = OpenAiConfig::new(format!("{}/{scenario}", self.root), "test-model");
        config.backoff_base = Duration::from_millis(10);
        config.backoff_max = Duration::from_millis(40);
        config.timeout = Duration::from_secs(5);
        OpenAiClient::new(config).unwrap()
    }

    fn count(&self, scenario: &str) -> usize {
        self.seen.lock().unwrap().counts.get(scenario).copied().unwrap_or(0)
    }
}

fn request() -> ChatRequest {
    ChatRequest::new("advisor", 1, vec![Message::system("be brief"), Message::user("hello")])
}

#[tokio::test]
async fn a_completion_gives_content_usage_latency_and_model() {
    let server = Server::start().await;
    let mut config = OpenAiConfig::new(format!("{}/ok/v1/", server.root), "test-model");
    config.api_key = Some("sk-test".into());
    let client = OpenAiClient::new(config).unwrap();
    let mut req = request();
    req.json_mode = true;
    req.max_tokens = Some(64);
    req.temperature = Some(0.0);
    let r = client.chat(&req).await.unwrap();
    assert_eq!(r.content, "Hello! How can I assist you today?");
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (19, 10));
    assert_eq!(r.model, "gpt-4.1-2025-04-14");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.attempts, 1);
    assert!(r.latency > Duration::ZERO);

    let seen = server.seen.lock().unwrap();
    let body = &seen.bodies[0];
    assert_eq!(body["model"], "test-model");
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}])
    );
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body["stream"], false);
    assert!(body.get("tools").is_none());
    assert_eq!(seen.auth[0].as_deref(), Some("Bearer sk-test"));
}

#[tokio::test]
async fn tool_calls_are_returned_with_their_arguments() {
    let server = Server::start().await;
    let mut req = request();
    req.tools = vec![json!({"type": "function", "function": {
        "name": "get_current_weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}
    }})];
    req.messages.push(Message {
        tool_calls: vec![bridle_runtime::llm::ToolCall {
            id: "call_0".into(),
            name: "noop".into(),
            arguments: "{}".into(),
        }],
        ..Message::assistant("")
    });
    req.messages.push(Message::tool("call_0", "done"));
    let r = server.client("tools").chat(&req).await.unwrap();
    assert_eq!(r.content, "");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].id, "call_abc123");
    assert_eq!(r.tool_calls[0].name, "get_current_weather");
    let args: Value = serde_json::from_str(&r.tool_calls[0].arguments).unwrap();
    assert_eq!(args, json!({"location": "Boston, MA"}));
    assert_eq!(r.usage.total(), 99);

    let body = server.seen.lock().unwrap().bodies[0].clone();
    assert_eq!(body["tools"][0]["function"]["name"], "get_current_weather");
    assert_eq!(body["messages"][2]["tool_calls"][0]["function"]["name"], "noop");
    assert_eq!(body["messages"][3], json!({"role": "tool", "content": "done", "tool_call_id": "call_0"}));
}

#[tokio::test]
async fn a_429_waits_for_retry_after_then_succeeds() {
    let server = Server::start().await;
    let started = Instant::now();
    let r = server.client("rate_limited").chat(&request()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After: 1 honored");
    assert_eq!(r.attempts, 2);
    assert_eq!(server.count("rate_limited"), 2);
}

#[tokio::test]
async fn a_retry_after_past_the_deadline_is_not_waited_for() {
    let server = Server::start().await;
    let started = Instant::now();
    let e = server.client("rate_limited_long").chat(&request()).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(e.code(), Code::LlmUnavailable);
    assert!(matches!(e, LlmError::Unavailable { status: Some(429), attempts: 1, .. }), "{e:?}");
    assert!(e.to_string().contains("would pass the deadline"), "{e}");
    assert_eq!(server.count("rate_limited_long"), 1);
}

#[tokio::test]
async fn two_500s_then_success() {
    let server = Server::start().await;
    let r = server.client("flaky").chat(&request()).await.unwrap();
    assert_eq!(r.attempts, 3);
    assert_eq!(r.content, "Hello! How can I assist you today?");
    assert_eq!(server.count("flaky"), 3);
}

#[tokio::test]
async fn endless_500s_end_unavailable_with_the_attempt_count() {
    let server = Server::start().await;
    let e = server.client("down").chat(&request()).await.unwrap_err();
    assert_eq!(e.code(), Code::LlmUnavailable);
    assert!(matches!(e, LlmError::Unavailable { status: Some(500), attempts: 4, .. }), "{e:?}");
    assert!(e.to_string().contains("The server had an error"), "{e}");
    assert_eq!(e.to_rejection().detail["attempts"], 4);
    assert_eq!(server.count("down"), 4);
}

#[tokio::test]
async fn a_400_is_never_retried() {
    let server = Server::start().await;
    let e = server.client("bad_request").chat(&request()).await.unwrap_err();
    assert!(matches!(e, LlmError::Unavailable { status: Some(400), attempts: 1, .. }), "{e:?}");
    assert!(e.to_string().contains("Invalid value for 'temperature'"), "{e}");
    assert_eq!(server.count("bad_request"), 1);
}

#[tokio::test]
async fn a_slow_answer_times_out() {
    let server = Server::start().await;
    let mut req = request();
    req.timeout = Some(Duration::from_millis(300));
    let started = Instant::now();
    let e = server.client("slow").chat(&req).await.unwrap_err();
    assert_eq!(e.code(), Code::LlmTimeout);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.count("slow"), 1);
}

#[tokio::test]
async fn an_unreadable_body_is_invalid_output_and_not_retried() {
    let server = Server::start().await;
    let e = server.client("garbage").chat(&request()).await.unwrap_err();
    assert_eq!(e.code(), Code::LlmInvalidOutput);
    assert_eq!(server.count("garbage"), 1);
}

#[tokio::test]
async fn a_refused_connection_is_retried_then_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let mut config = OpenAiConfig::new(format!("http://{addr}"), "m");
    config.backoff_base = Duration::from_millis(5);
    config.max_attempts = 3;
    let e = OpenAiClient::new(config).unwrap().chat(&request()).await.unwrap_err();
    assert!(matches!(e, LlmError::Unavailable { status: None, attempts: 3, .. }), "{e:?}");
}

#[test]
fn the_endpoint_accepts_a_root_or_a_v1_base_url() {
    for base in ["http://h:8000", "http://h:8000/", "http://h:8000/v1", "http://h:8000/v1/"] {
        assert_eq!(OpenAiConfig::new(base, "m").endpoint(), "http://h:8000/v1/chat/completions");
    }
}
