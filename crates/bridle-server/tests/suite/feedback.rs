//! Feedback over a real HTTP connection (the router served on a loopback socket, requests
//! written by hand over TCP): a rating stored with the token's subject as rater and
//! `outcome_collected` fired once; bounds, unknown and other tenants' decisions, and scopes
//! refused as documented; the tenant's feedback listed. And the document: `FeedbackBody`
//! accepts exactly what the server accepts.

use std::sync::{Arc, Mutex};

use bridle_core::decision::DecisionRecord;
use bridle_runtime::feedback::hooks::{LoopEvent, LoopHook};
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::support::{SECRET, token_for};

#[derive(Default)]
struct Recorder(Mutex<Vec<LoopEvent>>);

#[async_trait::async_trait]
impl LoopHook for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    async fn on_event(&self, event: &LoopEvent) -> Result<(), bridle_runtime::hook::HookError> {
        self.0.lock().unwrap().push(event.clone());
        Ok(())
    }
}

fn decision(id: &str, tenant: &str) -> DecisionRecord {
    DecisionRecord {
        decision_id: id.into(),
        pipeline_run_id: "run-1".into(),
        tenant: tenant.into(),
        agent: "advisor".into(),
        model: "m".into(),
        input: json!([]),
        output: json!({"action_id": "set_temperature", "confidence": 0.7}),
        prompt_tokens: 1,
        completion_tokens: 1,
        latency_ms: 1,
        harness_checks: json!({}),
        final_verdict: "executed".into(),
        created_at: time::OffsetDateTime::now_utc(),
        prompt_hash: None,
        tool_schema_hash: None,
        policy_version: None,
    }
}

/// The router on a loopback socket over a memory store holding `d-1` of `fab-1` and `d-9` of
/// `fab-2`; returns the address and the hook's record.
async fn served() -> (String, Arc<Recorder>) {
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    let runtime = RuntimeBuilder::new(config).env(Env::default()).store_url("memory").build().await.unwrap();
    runtime.stores.decisions.record(&decision("d-1", "fab-1")).await.unwrap();
    runtime.stores.decisions.record(&decision("d-9", "fab-2")).await.unwrap();
    let recorder = Arc::new(Recorder::default());
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default())
        .unwrap()
        .with_loop_hooks(vec![recorder.clone()]);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, router(state)).await });
    (addr, recorder)
}

/// One HTTP/1.1 request on a fresh connection; the status and the JSON body.
async fn http(addr: &str, method: &str, path: &str, token: &str, body: Option<&Value>) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8(raw).unwrap();
    let status: u16 = text.split(' ').nth(1).unwrap().parse().unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    // The answers are small: sent in one piece, or chunked.
    let json_text = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        rest.split("\r\n").nth(1).unwrap_or_default().to_owned()
    } else {
        rest.to_owned()
    };
    (status, serde_json::from_str(&json_text).unwrap_or(Value::Null))
}

#[tokio::test]
async fn feedback_over_http_is_stored_checked_and_listed() {
    let (addr, recorder) = served().await;
    let writer = token_for("operator-7", "fab-1", &[], &["feedback:write"]);
    let body = json!({"rating": 4, "score": 0.8, "comment": "good call; mail ops@fab.example"});
    let (status, stored) = http(&addr, "POST", "/v1/decisions/d-1/feedback", &writer, Some(&body)).await;
    assert_eq!(status, 201, "{stored}");
    let f = &stored["feedback"];
    assert_eq!(
        (f["decision_id"].as_str(), f["rating"].as_u64(), f["rater"].as_str()),
        (Some("d-1"), Some(4), Some("operator-7"))
    );
    assert_eq!(f["source"], "operator");
    assert!(!f["comment"].as_str().unwrap().contains("ops@fab.example"), "masked: {f}");

    for (path, body, expected, code) in [
        ("/v1/decisions/d-404/feedback", json!({"rating": 3}), 404, "not_found"),
        ("/v1/decisions/d-9/feedback", json!({"rating": 3}), 404, "not_found"), // fab-2's decision
        ("/v1/decisions/%C2%9E%C3%87/feedback", json!({"rating": 3}), 404, "not_found"), // no id at all
        ("/v1/decisions/d-1/feedback", json!({"rating": 6}), 400, "bad_request"),
        ("/v1/decisions/d-1/feedback", json!({"rating": 0}), 400, "bad_request"),
        ("/v1/decisions/d-1/feedback", json!({"score": 1.5}), 400, "bad_request"),
        ("/v1/decisions/d-1/feedback", json!({}), 400, "bad_request"),
        ("/v1/decisions/d-1/feedback", json!({"comment": "no rating"}), 400, "bad_request"),
        ("/v1/decisions/d-1/feedback", json!({"rating": 3, "tenant": "fab-2"}), 400, "bad_request"),
    ] {
        let (status, answer) = http(&addr, "POST", path, &writer, Some(&body)).await;
        assert_eq!((status, answer["error"]["code"].as_str()), (expected, Some(code)), "{path} {body}: {answer}");
    }
    let reader = token_for("viewer", "fab-1", &[], &["feedback:read"]);
    let (status, answer) =
        http(&addr, "POST", "/v1/decisions/d-1/feedback", &reader, Some(&json!({"rating": 1}))).await;
    assert_eq!((status, answer["error"]["code"].as_str()), (403, Some("forbidden")));

    let (status, list) = http(&addr, "GET", "/v1/feedback?decision_id=d-1", &reader, None).await;
    assert_eq!(status, 200);
    assert_eq!(list["feedback"].as_array().unwrap().len(), 1, "{list}");
    let other = token_for("viewer", "fab-2", &[], &["feedback:read"]);
    let (_, list) = http(&addr, "GET", "/v1/feedback", &other, None).await;
    assert_eq!(list["feedback"], json!([]), "another tenant sees nothing");
    let (status, _) = http(&addr, "GET", "/v1/feedback?limit=0", &reader, None).await;
    assert_eq!(status, 400);

    let events = recorder.0.lock().unwrap();
    assert_eq!(events.len(), 1, "one outcome_collected, none for refusals");
    assert_eq!((events[0].event, events[0].tenant.as_str()), ("outcome_collected", "fab-1"));
}

#[tokio::test]
async fn the_feedback_body_schema_accepts_what_the_server_accepts() {
    let app = super::support::app().await;
    let (_, doc) = super::support::get(&app, "/openapi.json", None).await;
    let schema = json!({"$ref": "#/components/schemas/FeedbackBody", "components": doc["components"]});
    let validator = jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(&schema).unwrap();
    for (body, valid) in [
        (json!({"rating": 3}), true),
        (json!({"rating": 2.0, "source": null}), true), // found by schemathesis: 2.0 is an integer
        (json!({"rating": 2.5}), false),
        (json!({"score": 0.0, "source": "automatic"}), true),
        (json!({"rating": null, "score": 1.0, "comment": null}), true),
        (json!({}), false),
        (json!({"rating": null}), false),
        (json!({"comment": "x"}), false),
        (json!({"rating": 6}), false),
        (json!({"score": -0.1}), false),
        (json!({"rating": 2, "extra": 1}), false),
        (json!({"rating": 2, "source": "robot"}), false),
        (json!({"rating": 2, "comment": "x".repeat(2001)}), false),
    ] {
        assert_eq!(validator.is_valid(&body), valid, "{body}");
        // The server agrees: a valid body passes to the decision lookup (none here: 404).
        let t = token_for("operator-7", "fab-1", &[], &["feedback:write"]);
        let (status, _) = super::support::post(&app, "/v1/decisions/d-1/feedback", Some(&t), &body).await;
        assert_eq!(status.as_u16(), if valid { 404 } else { 400 }, "{body}");
    }
    let paths = &doc["paths"];
    let post = &paths["/v1/decisions/{id}/feedback"]["post"];
    for status in ["201", "400", "403", "404"] {
        assert!(post["responses"][status].is_object(), "POST documents {status}");
    }
    assert!(paths["/v1/feedback"]["get"]["parameters"].to_string().contains("decision_id"));
}
