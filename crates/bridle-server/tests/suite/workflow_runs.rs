//! `POST /v1/runs` with `pipeline: "workflow"`: a file of `[workflows] dir` run for the caller,
//! paused for the desk, resumed over HTTP and executed once; unknown and unsafe names refused.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use bridle_runtime::llm::ScriptedModel;
use bridle_runtime::runs::Runs;
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use serde_json::{Value, json};

use super::support::{SECRET, checkout_with, code, get, post, token};

async fn app() -> Router {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/workflows");
    let config = checkout_with(&format!("\n[workflows]\ndir = {:?}\n", dir.display().to_string()));
    let script = include_str!("../../../../examples/workflows/scripts/checkout_incident.toml");
    let runtime = RuntimeBuilder::new(Arc::new(config))
        .env(Env::default())
        .store_url("memory")
        .llm(Arc::new(ScriptedModel::from_toml_str(script).unwrap()))
        .build()
        .await
        .unwrap();
    let runtime = Arc::new(runtime);
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default())
        .unwrap()
        .with_runs(Arc::new(Runs::new(runtime, bridle_apps::pipelines::registry())));
    router(state)
}

async fn settle(app: &Router, token: &str, id: &str) -> Value {
    for _ in 0..500 {
        let (status, body) = get(app, &format!("/v1/runs/{id}"), Some(token)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if body["status"] != "running" {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("run {id} did not settle");
}

#[tokio::test]
async fn a_workflow_over_http_pauses_for_the_desk_and_scales_once_for_its_starter() {
    let app = app().await;
    let (requester, operator) = (token("requester-1"), token("operator-2"));
    let body = json!({"pipeline": "workflow", "input": {"name": "checkout_incident", "input": {"incident": "inc-42", "service": "checkout"}}});
    let (status, started) = post(&app, "/v1/runs", Some(&requester), &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let run = started["run_id"].as_str().unwrap().to_owned();

    let paused = settle(&app, &requester, &run).await;
    assert_eq!(paused["pipeline"], "workflow", "{paused}");
    assert_eq!(paused["status"], "interrupted", "{paused}");
    let interrupt = paused["interrupts"][0]["id"].as_str().unwrap().to_owned();
    let approval = paused["interrupts"][0]["payload"]["approval_id"].as_str().unwrap().to_owned();
    let (_, request) = get(&app, &format!("/v1/approvals/{approval}"), Some(&operator)).await;
    assert_eq!(request["approval"]["requester"], "requester-1", "the run acts for its starter: {request}");
    let (status, body) = post(&app, &format!("/v1/approvals/{approval}/approve"), Some(&operator), &json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let answer = json!({"interrupt_id": interrupt, "value": {}});
    let (status, body) = post(&app, &format!("/v1/runs/{run}/resume"), Some(&requester), &answer).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let done = settle(&app, &requester, &run).await;
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["state"]["scaled"]["status"], "executed", "{done}");

    let (status, body) = post(&app, &format!("/v1/runs/{run}/resume"), Some(&requester), &answer).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(code(&body), "unknown_interrupt");
    let (_, listed) = get(&app, "/v1/runs", Some(&requester)).await;
    assert_eq!(listed["runs"][0]["pipeline"], "workflow", "{listed}");
}

#[tokio::test]
async fn unknown_and_unsafe_workflow_names_are_refused() {
    let app = app().await;
    let requester = token("requester-1");
    for (name, status) in [
        ("no_such_flow", StatusCode::NOT_FOUND),
        ("../checkout/bridle", StatusCode::BAD_REQUEST),
        ("", StatusCode::BAD_REQUEST),
    ] {
        let body = json!({"pipeline": "workflow", "input": {"name": name}});
        let (got, answer) = post(&app, "/v1/runs", Some(&requester), &body).await;
        assert_eq!(got, status, "{name}: {answer}");
    }
    let body = json!({"pipeline": "workflow", "input": {"name": "checkout_incident", "input": {"_requester": {}}}});
    let (got, answer) = post(&app, "/v1/runs", Some(&requester), &body).await;
    assert_eq!(got, StatusCode::BAD_REQUEST, "{answer}");
    let (_, listed) = get(&app, "/v1/runs", Some(&requester)).await;
    assert_eq!(listed["runs"], json!([]), "nothing was started");
}
