//! `POST /v1/actions/{job_id}/outcome`: an operator rates an executed action of their tenant
//! over HTTP; the note is masked, the rating audited, and another tenant's job is unknown.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use bridle_core::history::ActionRecord;
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use serde_json::json;

use super::support::{SECRET, code, get, post, token_for};

/// The fab example on a memory store holding one executed, unrated action (`job-7`, fab-1).
async fn app() -> Router {
    let config = Arc::new(bridle_runtime::bundled::fab().unwrap());
    let runtime = RuntimeBuilder::new(config).env(Env::default()).store_url("memory").build().await.unwrap();
    let action = ActionRecord {
        tenant: "fab-1".into(),
        job_id: "job-7".into(),
        tool: "set_temperature".into(),
        diagnosis: "heater controller drift".into(),
        equipment_class: "etch".into(),
        equipment: "etch-01".into(),
        executed_at: time::OffsetDateTime::now_utc(),
        rating: None,
    };
    runtime.stores.history.record_action(&action).await.unwrap();
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default()).unwrap();
    router(state)
}

fn operator(tenant: &str, scopes: &[&str]) -> String {
    token_for("operator-kim", tenant, &["etch-01"], scopes)
}

#[tokio::test]
async fn an_operator_rates_an_executed_action_and_the_rating_is_masked_and_audited() {
    let app = app().await;
    let t = operator("fab-1", &["feedback:write", "audit:read"]);
    let body = json!({"outcome": "failure", "note": "drift came back within the hour; mail ops@fab.example"});
    let (status, answer) = post(&app, "/v1/actions/job-7/outcome", Some(&t), &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let rating = &answer["action"]["rating"];
    assert_eq!((rating["outcome"].clone(), rating["rated_by"].clone()), (json!("failure"), json!("operator-kim")));
    assert!(rating["note"].as_str().unwrap().contains("drift came back"), "{answer}");
    assert!(!answer.to_string().contains("ops@fab.example"), "masked: {answer}");
    let (_, audit) = get(&app, "/v1/audit?limit=100", Some(&t)).await;
    let events = audit["events"].as_array().unwrap();
    let rated: Vec<_> = events.iter().filter(|e| e["kind"] == "action_outcome").collect();
    assert_eq!(rated.len(), 1, "{audit}");
    assert!(!audit.to_string().contains("ops@fab.example"), "the audit log keeps the masked note: {audit}");

    // A later rating replaces it.
    let (status, answer) = post(&app, "/v1/actions/job-7/outcome", Some(&t), &json!({"outcome": "success"})).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["action"]["rating"]["outcome"], "success");
}

#[tokio::test]
async fn only_my_tenants_actions_with_the_scope_and_a_bounded_note() {
    let app = app().await;
    let rate = json!({"outcome": "success"});
    let other = operator("fab-2", &["feedback:write"]);
    let (status, answer) = post(&app, "/v1/actions/job-7/outcome", Some(&other), &rate).await;
    assert_eq!((status, code(&answer)), (StatusCode::NOT_FOUND, "not_found"));
    let (status, answer) =
        post(&app, "/v1/actions/job-8/outcome", Some(&operator("fab-1", &["feedback:write"])), &rate).await;
    assert_eq!((status, code(&answer)), (StatusCode::NOT_FOUND, "not_found"));
    let (status, answer) =
        post(&app, "/v1/actions/job-7/outcome", Some(&operator("fab-1", &["audit:read"])), &rate).await;
    assert_eq!((status, code(&answer)), (StatusCode::FORBIDDEN, "forbidden"));
    let long = json!({"outcome": "failure", "note": "x".repeat(2001)});
    let (status, answer) =
        post(&app, "/v1/actions/job-7/outcome", Some(&operator("fab-1", &["feedback:write"])), &long).await;
    assert_eq!((status, code(&answer)), (StatusCode::BAD_REQUEST, "bad_request"));
    let (status, _) = post(
        &app,
        "/v1/actions/job-7/outcome",
        Some(&operator("fab-1", &["feedback:write"])),
        &json!({"outcome": "maybe"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}
