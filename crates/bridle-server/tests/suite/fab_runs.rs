//! `POST /v1/runs` with `pipeline: "fab"`: seed 000's pipeline started over HTTP pauses for a
//! human, its plans stay requested by whoever started it even when another principal answers
//! its interrupts, a rejection goes back to the Advisor, and an approved plan runs once.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use bridle_runtime::llm::ScriptedModel;
use bridle_runtime::llm::scripted::ScriptedReply;
use bridle_runtime::runs::Runs;
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use serde_json::{Value, json};

use super::support::{SECRET, code, get, post, token_for};

const SERVICES: &[&str] = &["etch-01", "cvd-02"];

/// The fab example on a memory store with seed 000's reject → regenerate → re-approve script.
async fn app() -> Router {
    let script = include_str!("../../../../examples/fab/scripts/reject_regenerate_reapprove.toml");
    app_with(ScriptedModel::from_toml_str(script).unwrap()).await
}

/// The fab example on a memory store with `model`.
async fn app_with(model: ScriptedModel) -> Router {
    app_and_stop(model).await.0
}

/// [`app_with`] and the server's shutdown token.
async fn app_and_stop(model: ScriptedModel) -> (Router, tokio_util::sync::CancellationToken) {
    let config = bridle_runtime::bundled::fab().unwrap();
    let runtime = RuntimeBuilder::new(Arc::new(config))
        .env(Env::default())
        .store_url("memory")
        .llm(Arc::new(model))
        .build()
        .await
        .unwrap();
    let runtime = Arc::new(runtime);
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default())
        .unwrap()
        .with_runs(Arc::new(Runs::new(runtime, bridle_apps::pipelines::registry())));
    let stop = state.mcp.cancel.clone();
    (router(state), stop)
}

fn agent() -> String {
    token_for(
        "advisor-agent",
        "fab-1",
        SERVICES,
        &["equipment:read", "equipment:tune", "equipment:maintain", "runs:start", "runs:read"],
    )
}

/// An operator who approves and answers interrupts but holds no tool scope of their own.
fn operator() -> String {
    token_for("operator-kim", "fab-1", SERVICES, &["approval:grant", "runs:start", "runs:read"])
}

fn anomaly() -> Value {
    json!({"pipeline": "fab", "input": {
        "anomaly": {"equipment": "etch-01", "metric": "chamber_temp_c", "value": 388.0},
        "incident": "inc-api"
    }})
}

/// Polls until the run is no longer running (at most 10 s; 40 reads a second stay under the
/// rate limit).
async fn settle(app: &Router, token: &str, id: &str) -> Value {
    for _ in 0..400 {
        let (status, body) = get(app, &format!("/v1/runs/{id}"), Some(token)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["status"] != "running" {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {id} did not settle");
}

/// The pending `approve_plan` interrupt: (interrupt id, approval id).
fn pending_plan(run: &Value) -> (String, String) {
    assert_eq!(run["status"], "interrupted", "{run}");
    let interrupt = &run["interrupts"][0];
    assert_eq!(interrupt["payload"]["kind"], "approve_plan", "{run}");
    let approval = interrupt["payload"]["plan"]["approval_id"].as_str().unwrap().to_owned();
    (interrupt["id"].as_str().unwrap().to_owned(), approval)
}

async fn resume(app: &Router, token: &str, run: &str, interrupt: &str) {
    let body = json!({"interrupt_id": interrupt, "value": null});
    let (status, body) = post(app, &format!("/v1/runs/{run}/resume"), Some(token), &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
}

#[tokio::test]
async fn a_fab_run_over_http_is_rejected_regenerated_approved_and_executed_for_its_starter() {
    let app = app().await;
    let (agent, operator) = (agent(), operator());
    let (status, body) = post(&app, "/v1/runs", Some(&agent), &anomaly()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let run = body["run_id"].as_str().unwrap().to_owned();

    // Round 1: the Advisor's part replacement waits for a human; the operator rejects it.
    let first = settle(&app, &operator, &run).await;
    assert_eq!(first["pipeline"], "fab");
    let (interrupt, approval) = pending_plan(&first);
    let (_, request) = get(&app, &format!("/v1/approvals/{approval}"), Some(&operator)).await;
    assert_eq!(request["approval"]["plan"]["tool"], "replace_part", "{request}");
    assert_eq!(request["approval"]["requester"], "advisor-agent", "{request}");
    // The card's context: the Advisor named by the pipeline that made the call, the incident,
    // the diagnosis and every candidate with its confidence, and no state to compare.
    let context = &request["approval"]["context"];
    assert_eq!(context["agent"], json!({"id": "advisor", "source": "pipeline", "pipeline": "fab"}), "{request}");
    assert_eq!(request["approval"]["plan"]["incident"], "inc-api");
    assert_eq!(request["approval"]["risk"], "destructive");
    assert_eq!(request["approval"]["tool_info"]["title_ko"], "부품 교체", "{request}");
    let evidence = &context["evidence"];
    assert_eq!(evidence["pipeline"], "fab", "{request}");
    assert_eq!(evidence["anomaly"]["equipment"], "etch-01", "{request}");
    let candidates = evidence["candidates"].as_array().unwrap();
    assert!(!candidates.is_empty(), "{request}");
    assert!(candidates.iter().all(|c| c["cause"].is_string() && c["confidence"].is_f64()), "{request}");
    assert!(candidates.iter().any(|c| c["cause"] == evidence["diagnosis"]["cause"]), "{request}");
    assert!(!context["reasons"].as_array().unwrap().is_empty(), "{request}");
    assert_eq!((request["compared"].as_bool(), request["diff"].as_array().map(Vec::len)), (Some(false), Some(0)));
    let reason = json!({"reason": "no downtime this shift; trim the setpoint instead"});
    let (status, body) = post(&app, &format!("/v1/approvals/{approval}/reject"), Some(&operator), &reason).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The operator (not the starter) answers the interrupt: the run still acts for the agent.
    resume(&app, &operator, &run, &interrupt).await;

    // Round 2: a 5 °C trim at low confidence, so approval again, requested by the agent.
    let second = settle(&app, &operator, &run).await;
    let (interrupt, approval) = pending_plan(&second);
    let (_, request) = get(&app, &format!("/v1/approvals/{approval}"), Some(&operator)).await;
    assert_eq!(request["approval"]["plan"]["tool"], "set_temperature", "{request}");
    assert_eq!(request["approval"]["requester"], "advisor-agent", "{request}");
    // A tune names its state: the setpoint read now against the proposed one.
    assert_eq!(request["compared"], true, "{request}");
    assert!(request["diff"].as_array().unwrap().iter().any(|c| c["field"] == "temp_celsius"), "{request}");
    assert!(request["approval"]["context"]["evidence"]["advice"]["reasoning"].is_string(), "{request}");
    let (status, body) = post(&app, &format!("/v1/approvals/{approval}/approve"), Some(&operator), &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    resume(&app, &operator, &run, &interrupt).await;

    let done = settle(&app, &agent, &run).await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["state"]["outcome"]["status"], "executed", "{done}");
    assert_eq!(done["state"]["rejections"].as_array().map(Vec::len), Some(1), "{done}");

    // Its kept history: who started it, both pauses and who answered them, how it ended.
    let events = done["events"].as_array().unwrap();
    assert_eq!(events[0]["event"], "started", "{done}");
    assert_eq!(events[0]["by"], "advisor-agent", "{done}");
    assert_eq!(done["starter"], "advisor-agent", "{done}");
    assert!(done["started_at"].is_string() && done["duration_ms"].is_u64(), "{done}");
    let answered: Vec<&Value> = events.iter().filter(|e| e["event"] == "answered").collect();
    assert_eq!(answered.len(), 2, "{done}");
    assert!(answered.iter().all(|e| e["by"] == "operator-kim" && e["at"].is_string()), "{done}");
    assert_eq!(events.iter().filter(|e| e["event"] == "interrupted").count(), 2, "{done}");
    assert!(events.iter().any(|e| e["event"] == "node_exit" && e["duration_us"].is_u64()), "{done}");
    assert_eq!(events.last().unwrap()["event"], "finished", "{done}");
    assert_eq!(events.last().unwrap()["status"], "done", "{done}");
    // The graph: every node it ran is done, none is left paused.
    let nodes = done["graph"]["nodes"].as_array().unwrap();
    assert!(nodes.iter().filter(|n| n["state"] == "done").count() >= 2, "{done}");
    assert!(nodes.iter().all(|n| n["state"] != "paused" && n["state"] != "running"), "{done}");
    // Its tool calls, from the audit log, with what they meant.
    let calls = done["calls"].as_array().unwrap();
    assert!(calls.iter().any(|c| c["tool"] == "set_temperature" && c["display"] == "executed"), "{done}");
    // The list shows start, starter and duration.
    let (_, list) = get(&app, "/v1/runs", Some(&operator)).await;
    let listed = list["runs"].as_array().unwrap().iter().find(|r| r["run_id"] == run.as_str()).cloned().unwrap();
    assert_eq!(listed["starter"], "advisor-agent", "{list}");
    assert!(listed["started_at"].is_string() && listed["duration_ms"].is_u64(), "{list}");

    // A run id only the gate knows (calls made with it) opens as its calls, not as not_found.
    let call = json!({"tool": "get_recipe", "arguments": {"equipment": "etch-01"}, "run_id": "run-102"});
    let (status, body) = post(&app, "/v1/calls", Some(&agent), &call).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, gate_only) = get(&app, "/v1/runs/run-102", Some(&operator)).await;
    assert_eq!(status, StatusCode::OK, "{gate_only}");
    assert_eq!(gate_only["kind"], "calls", "{gate_only}");
    assert_eq!(gate_only["status"], "open", "{gate_only}");
    assert_eq!(gate_only["starter"], "advisor-agent", "{gate_only}");
    assert_eq!(gate_only["calls"][0]["tool"], "get_recipe", "{gate_only}");
    let (status, _) = get(&app, "/v1/runs/run-never-used", Some(&operator)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A graph run named by its thread (as its calls record it) opens the run.
    let (status, by_thread) = get(&app, &format!("/v1/runs/fab-1%2F{run}"), Some(&operator)).await;
    assert_eq!(status, StatusCode::OK, "{by_thread}");
    assert_eq!(by_thread["kind"], "graph", "{by_thread}");

    // Answering the finished run again is refused and nothing runs twice.
    let again = json!({"interrupt_id": interrupt, "value": null});
    let (status, body) = post(&app, &format!("/v1/runs/{run}/resume"), Some(&operator), &again).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(code(&body), "unknown_interrupt");
}

#[tokio::test]
async fn a_fab_run_needs_the_fab_input_and_an_analysis_run_the_analysis_input() {
    let app = app().await;
    let agent = agent();
    let wrong = [
        json!({"pipeline": "fab", "input": {"entity": "etch-01"}}),
        json!({"pipeline": "analysis", "input": {"anomaly": {"equipment": "etch-01", "metric": "m", "value": 1.0}}}),
        json!({"pipeline": "fab", "input": {"anomaly": {"equipment": "", "metric": "m", "value": 1.0}}}),
        json!({"pipeline": "fab", "input": {"anomaly": {"equipment": "x".repeat(201), "metric": "m", "value": 1.0}}}),
        json!({"pipeline": "fab", "input": {"anomaly": {"equipment": "etch-01", "metric": "m", "value": 1.0, "x": 1}}}),
    ];
    for body in wrong {
        let (status, answer) = post(&app, "/v1/runs", Some(&agent), &body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} → {answer}");
        assert_eq!(code(&answer), "bad_request");
    }
    let (_, listed) = get(&app, "/v1/runs", Some(&agent)).await;
    assert_eq!(listed["runs"], json!([]), "nothing was started");
}

/// A model whose Diagnostician takes 30 s to answer: a run stays in flight meanwhile.
fn slow_model() -> ScriptedModel {
    let slow = ScriptedReply {
        agent: Some("diagnostician".into()),
        turn: Some(1),
        json: Some(json!({"candidates": [{"cause": "heater drift", "confidence": 0.8, "evidence": "rising"}]})),
        delay_ms: Some(30_000),
        ..ScriptedReply::default()
    };
    ScriptedModel::new("slow", vec![slow]).unwrap()
}

#[tokio::test]
async fn a_kill_switch_of_one_of_its_agents_stops_a_fab_run_in_flight() {
    let app = app_with(slow_model()).await;
    let agent = agent();
    let (status, body) = post(&app, "/v1/runs", Some(&agent), &anomaly()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let run = body["run_id"].as_str().unwrap().to_owned();
    let lead = token_for("lead-park", "fab-1", SERVICES, &["kill:set", "runs:read"]);
    let kill = json!({"agent": "diagnostician", "reason": "the diagnosis model misbehaves"});
    let (status, body) = post(&app, "/v1/kill", Some(&lead), &kill).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let stopped = settle(&app, &lead, &run).await;
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
}

#[tokio::test]
async fn shutdown_ends_the_event_stream_of_a_run_still_in_flight() {
    use futures_util::StreamExt;
    use tower::ServiceExt;

    let (app, stop) = app_and_stop(slow_model()).await;
    let agent = agent();
    let (_, body) = post(&app, "/v1/runs", Some(&agent), &anomaly()).await;
    let run = body["run_id"].as_str().unwrap().to_owned();
    let request = axum::http::Request::get(format!("/v1/runs/{run}/events"))
        .header("authorization", format!("Bearer {agent}"))
        .body(axum::body::Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body().into_data_stream();
    stop.cancel();
    // The run would go on for 30 s; the stream must end at shutdown instead, with no `finished`.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        let mut text = String::new();
        while let Some(chunk) = body.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        text
    })
    .await;
    let text = ended.expect("the event stream did not end on shutdown");
    assert!(!text.contains("event: finished"), "{text}");
}
