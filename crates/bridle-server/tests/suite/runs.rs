//! `/v1/runs` and `/v1/decisions` over seed 001's analysis pipeline on a scripted model: a run
//! started over HTTP ends with a report, its events stream as SSE in order, its decisions stay
//! in its tenant, the runs list pages newest first, and another tenant never sees it.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use bridle_apps::pipelines::analysis::ANALYSTS;
use bridle_runtime::llm::ScriptedModel;
use bridle_runtime::llm::scripted::ScriptedReply;
use bridle_runtime::runs::Runs;
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use serde_json::{Value, json};
use tower::ServiceExt;

use super::support::{SECRET, code, get, post, token_for};

/// Two iterations: confidence 0.4, then 0.9; the first turn's replies wait `delay_ms`.
fn model(delay_ms: u64) -> Arc<ScriptedModel> {
    let mut replies = Vec::new();
    for turn in 1..=2 {
        for a in ANALYSTS {
            let confidence = if turn == 1 { 0.4 } else { 0.9 };
            replies.push(ScriptedReply {
                agent: Some(format!("analyst.{a}")),
                turn: Some(turn),
                json: Some(json!({"score": 80, "confidence": confidence, "findings": format!("{a} looks steady in turn {turn}")})),
                delay_ms: (turn == 1 && delay_ms > 0).then_some(delay_ms),
                ..ScriptedReply::default()
            });
        }
    }
    Arc::new(ScriptedModel::new("scripted", replies).unwrap())
}

async fn app(delay_ms: u64) -> Router {
    let config = bridle_runtime::bundled::checkout().unwrap();
    let runtime = RuntimeBuilder::new(Arc::new(config))
        .env(Env::default())
        .store_url("memory")
        .llm(model(delay_ms))
        .build()
        .await
        .unwrap();
    let runtime = Arc::new(runtime);
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default())
        .unwrap()
        .with_runs(Arc::new(Runs::new(runtime, bridle_apps::pipelines::registry())));
    router(state)
}

fn tenant_a() -> String {
    token_for("requester-1", "tenant-a", &["checkout"], &["runs:start", "runs:read"])
}

fn tenant_b() -> String {
    token_for("intruder", "tenant-b", &["checkout"], &["runs:start", "runs:read", "audit:read"])
}

fn input() -> Value {
    json!({"pipeline": "analysis", "input": {"entity": "checkout-service", "data": {"signals": ["p99 latency up 40%"]}}})
}

async fn start(app: &Router, token: &str) -> String {
    let (status, body) = post(app, "/v1/runs", Some(token), &input()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["status"], "running");
    body["run_id"].as_str().unwrap().to_owned()
}

async fn wait_done(app: &Router, token: &str, id: &str) -> Value {
    for _ in 0..500 {
        let (status, body) = get(app, &format!("/v1/runs/{id}"), Some(token)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["status"] != "running" {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {id} did not finish");
}

/// The SSE body: `(event name, data)` pairs.
async fn sse(app: &Router, token: &str, id: &str) -> (StatusCode, Vec<(String, Value)>) {
    let req = Request::get(format!("/v1/runs/{id}/events"))
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut events = Vec::new();
    for block in text.split("\n\n").filter(|b| b.contains("data:")) {
        let name = block.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or_default().to_owned();
        let data = block.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("null");
        events.push((name, serde_json::from_str(data).unwrap_or(Value::Null)));
    }
    (status, events)
}

#[tokio::test]
async fn a_run_started_over_http_finishes_with_its_report_in_the_state() {
    let app = app(0).await;
    let token = tenant_a();
    let id = start(&app, &token).await;
    let body = wait_done(&app, &token, &id).await;
    assert_eq!(body["status"], "done", "{body}");
    assert_eq!(body["pipeline"], "analysis");
    assert_eq!(body["interrupts"], json!([]));
    assert_eq!(body["state"]["report"]["iterations"], 2);
    assert_eq!(body["state"]["report"]["entity"], "checkout-service");
    // Finished: its kept history, then the outcome.
    let (status, events) = sse(&app, &token, &id).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(events[0].0, "started", "{events:?}");
    assert!(events.iter().any(|(name, _)| name == "node_exit"), "{events:?}");
    assert_eq!(events.iter().filter(|(name, _)| name == "finished").count(), 1, "{events:?}");
    let (last, outcome) = events.last().unwrap();
    assert_eq!(last, "finished");
    assert_eq!(outcome["outcome"]["status"], "done");
}

#[tokio::test]
async fn events_of_a_live_run_stream_in_order_and_end_with_finished() {
    let app = app(150).await;
    let token = tenant_a();
    let id = start(&app, &token).await;
    let (status, events) = sse(&app, &token, &id).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"run_started"), "{names:?}");
    assert_eq!(names.last(), Some(&"finished"), "{names:?}");
    assert_eq!(names.iter().filter(|n| **n == "finished").count(), 1);
    for (name, data) in &events {
        assert_eq!(data["event"], name.as_str());
    }
    let steps: Vec<u64> =
        events.iter().filter(|(n, _)| n == "step_done").map(|(_, d)| d["step"].as_u64().unwrap()).collect();
    assert!(steps.len() > 2 && steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    assert_eq!(events.last().unwrap().1["outcome"]["status"], "done");
}

#[tokio::test]
async fn decisions_are_listed_for_my_tenant_only() {
    let app = app(0).await;
    let token = tenant_a();
    let id = start(&app, &token).await;
    wait_done(&app, &token, &id).await;
    let (status, body) = get(&app, "/v1/decisions?limit=50", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let decisions = body["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 8, "4 analysts × 2 iterations");
    assert!(decisions.iter().all(|d| d["tenant"] == "tenant-a" && d["pipeline_run_id"] == format!("tenant-a/{id}")));
    let (status, body) = get(&app, "/v1/decisions", Some(&tenant_b())).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["decisions"], json!([]));
    let (status, body) = get(&app, "/v1/decisions?limit=0", Some(&token)).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
}

#[tokio::test]
async fn runs_are_listed_newest_first_a_page_at_a_time_for_my_tenant_only() {
    let app = app(0).await;
    let (a, b) = (tenant_a(), tenant_b());
    let mut mine = Vec::new();
    for _ in 0..3 {
        let id = start(&app, &a).await;
        wait_done(&app, &a, &id).await;
        mine.push(id);
    }
    let theirs = start(&app, &b).await;
    wait_done(&app, &b, &theirs).await;
    mine.reverse();

    let ids = |body: &Value| -> Vec<String> {
        body["runs"].as_array().unwrap().iter().map(|r| r["run_id"].as_str().unwrap().to_owned()).collect()
    };
    let (status, body) = get(&app, "/v1/runs", Some(&a)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(ids(&body), mine, "newest first, tenant B's run absent: {body}");
    assert_eq!(body["next_after"], Value::Null);
    let first = &body["runs"][0];
    assert_eq!((first["pipeline"].as_str(), first["status"].as_str()), (Some("analysis"), Some("done")), "{first}");
    assert!(first["steps"].as_u64().unwrap() > 0, "{first}");

    // Two pages of two.
    let (status, page) = get(&app, "/v1/runs?limit=2", Some(&a)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), mine[..2]);
    assert_eq!(page["next_after"], mine[1].as_str());
    let (_, rest) = get(&app, &format!("/v1/runs?limit=2&after={}", mine[1]), Some(&a)).await;
    assert_eq!(ids(&rest), mine[2..]);
    assert_eq!(rest["next_after"], Value::Null);

    // The status filter.
    let (_, done) = get(&app, "/v1/runs?status=done", Some(&a)).await;
    assert_eq!(ids(&done), mine);
    let (_, interrupted) = get(&app, "/v1/runs?status=interrupted", Some(&a)).await;
    assert_eq!(interrupted["runs"], json!([]));

    // Tenant B sees its own run only, also when paging from one of A's ids.
    let (_, body) = get(&app, "/v1/runs", Some(&b)).await;
    assert_eq!(ids(&body), std::slice::from_ref(&theirs));
    let (_, body) = get(&app, &format!("/v1/runs?after={}", mine[0]), Some(&b)).await;
    assert!(ids(&body).iter().all(|id| *id == theirs), "{body}");

    // Bad queries and scopes.
    for query in ["limit=0", "limit=1001", "after=nope", "status=sleeping", "tenant=tenant-b"] {
        let (status, body) = get(&app, &format!("/v1/runs?{query}"), Some(&a)).await;
        assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"), "{query}");
    }
    let viewer = token_for("viewer-4", "tenant-a", &["checkout"], &["service:read"]);
    let (status, body) = get(&app, "/v1/runs", Some(&viewer)).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"));
}

#[tokio::test]
async fn a_run_in_flight_is_listed_as_running() {
    let app = app(300).await;
    let token = tenant_a();
    let id = start(&app, &token).await;
    let (status, body) = get(&app, "/v1/runs?status=running", Some(&token)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["runs"][0]["run_id"], id.as_str(), "{body}");
    assert_eq!(body["runs"][0]["status"], "running");
    wait_done(&app, &token, &id).await;
    let (_, body) = get(&app, "/v1/runs?status=running", Some(&token)).await;
    assert_eq!(body["runs"], json!([]), "{body}");
}

#[tokio::test]
async fn another_tenants_run_is_not_found() {
    let app = app(0).await;
    let token = tenant_a();
    let id = start(&app, &token).await;
    wait_done(&app, &token, &id).await;
    let other = tenant_b();
    for path in [format!("/v1/runs/{id}"), format!("/v1/runs/{id}/events"), "/v1/runs/not-a-uuid".to_owned()] {
        let (status, body) = get(&app, &path, Some(&other)).await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"), "{path}");
    }
    let answer = json!({"interrupt_id": format!("tenant-a/{id}/0:0/0"), "value": true});
    let (status, body) = post(&app, &format!("/v1/runs/{id}/resume"), Some(&other), &answer).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
}

#[tokio::test]
async fn resuming_with_an_interrupt_the_run_does_not_wait_for_is_refused_with_its_code() {
    let app = app(0).await;
    let token = tenant_a();
    let id = start(&app, &token).await;
    wait_done(&app, &token, &id).await;
    let answer = json!({"interrupt_id": "nope", "value": {"ok": true}});
    let (status, body) = post(&app, &format!("/v1/runs/{id}/resume"), Some(&token), &answer).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // The run is done: nothing waits for an answer.
    assert_eq!(code(&body), "unknown_interrupt");
}

#[tokio::test]
async fn runs_need_their_scopes_and_a_runs_service() {
    let app = app(0).await;
    let viewer = token_for("viewer-4", "tenant-a", &["checkout"], &["service:read"]);
    let (status, body) = post(&app, "/v1/runs", Some(&viewer), &input()).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    let (status, body) = get(&app, "/v1/decisions", Some(&viewer)).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    let (status, body) = post(&app, "/v1/runs", Some(&tenant_a()), &json!({"pipeline": "nope", "input": {}})).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    let empty = json!({"pipeline": "analysis", "input": {"entity": ""}});
    let (status, body) = post(&app, "/v1/runs", Some(&tenant_a()), &empty).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    // Without `with_runs`, the routes are not there.
    let plain = super::support::app().await;
    let (status, body) = post(&plain, "/v1/runs", Some(&tenant_a()), &input()).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
}
