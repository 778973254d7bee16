//! `GET /v1/audit/verify` against the signed heads (issue 20 point 5), and the `auth` of grants
//! and rejections made over the API (point 6).

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use bridle_core::audit::head::HeadKey;
use bridle_runtime::audit::HeadEnv;
use bridle_runtime::runtime::{Env, Runtime, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use serde_json::json;

use super::support::{SECRET, app, get, post, token};

async fn anchored_app(db: &str, heads: &std::path::Path) -> (Router, Runtime) {
    let env = Env {
        heads: HeadEnv {
            signing_key: Some(HeadKey::from_seed(&[5; 32]).to_text()),
            heads: Some(heads.display().to_string()),
            ..HeadEnv::default()
        },
        ..Env::default()
    };
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    let runtime = RuntimeBuilder::new(config).env(env).store_url(db).build().await.unwrap();
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default()).unwrap();
    (router(state), runtime)
}

#[tokio::test]
async fn regression_a_deleted_tail_is_named_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("b.db").display());
    let heads = dir.path().join("b.heads");
    let (app, runtime) = anchored_app(&db, &heads).await;
    let operator = token("operator-2");
    let call = json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}});
    for _ in 0..3 {
        let (status, _) = post(&app, "/v1/calls", Some(&token("requester-1")), &call).await;
        assert_eq!(status, StatusCode::OK);
    }
    let (_, before) = get(&app, "/v1/audit/verify", Some(&operator)).await;
    assert_eq!(
        (before["ok"].as_bool(), before["tail"]["status"].as_str()),
        (Some(true), Some("unanchored")),
        "{before}"
    );
    assert!(before["tail"]["note"].as_str().unwrap_or_default().contains("no head log"), "{before}");

    runtime.stores.anchoring.close().await.unwrap();
    let (_, anchored) = get(&app, "/v1/audit/verify", Some(&operator)).await;
    assert_eq!(anchored["tail"]["status"], "anchored", "{anchored}");
    assert_eq!((anchored["tail"]["anchored_seq"].as_u64(), anchored["ok"].as_bool()), (Some(3), Some(true)));

    let pool = sqlx::SqlitePool::connect(&db).await.unwrap();
    sqlx::query("DELETE FROM audit_events WHERE tenant = 'tenant-a' AND seq = 3").execute(&pool).await.unwrap();
    pool.close().await;
    let (status, after) = get(&app, "/v1/audit/verify", Some(&operator)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!((after["ok"].as_bool(), after["verified"].as_u64()), (Some(false), Some(2)), "{after}");
    assert_eq!(after["tail"]["status"], "missing");
    assert_eq!(after["tail"]["missing"]["from"], 3);
    assert_eq!(after["tail"]["missing"]["to"], 3);

    // A forged head line of this tenant is reported, and fails the status.
    let text = std::fs::read_to_string(&heads).unwrap();
    let forged = text.lines().next().unwrap().replace("\"seq\":3", "\"seq\":2");
    std::fs::write(&heads, format!("{forged}\n")).unwrap();
    let (_, forged) = get(&app, "/v1/audit/verify", Some(&operator)).await;
    assert_eq!(
        (forged["tail"]["status"].as_str(), forged["ok"].as_bool()),
        (Some("untrusted"), Some(false)),
        "{forged}"
    );
    assert_eq!(forged["tail"]["untrusted_lines"], 1);
}

#[tokio::test]
async fn api_grants_and_rejections_record_that_the_operator_used_a_token() {
    let app = app().await;
    let requester = token("requester-1");
    let operator = token("operator-2");
    let mut ids = Vec::new();
    for replicas in [3, 4] {
        let call = json!({"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": replicas, "resource_version": 7}, "run_id": "r-1"});
        let (_, asked) = post(&app, "/v1/calls", Some(&requester), &call).await;
        ids.push(asked["approval_id"].as_str().unwrap().to_owned());
    }
    let (status, _) = post(&app, &format!("/v1/approvals/{}/approve", ids[0]), Some(&operator), &json!({})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) =
        post(&app, &format!("/v1/approvals/{}/reject", ids[1]), Some(&operator), &json!({"reason": "no"})).await;
    assert_eq!(status, StatusCode::OK);
    let (_, audit) = get(&app, "/v1/audit", Some(&operator)).await;
    let events = audit["events"].as_array().unwrap();
    let acts: Vec<_> =
        events.iter().filter(|e| e["kind"] == "approval_granted" || e["kind"] == "approval_rejected").collect();
    assert_eq!(acts.len(), 2, "{audit}");
    assert!(acts.iter().all(|e| e["auth"] == "token"), "{acts:?}");
    // Other events carry no `auth` at all.
    assert!(events.iter().filter(|e| e["kind"] == "tool_call").all(|e| e.get("auth").is_none()));
}
