//! `/metrics`: the scope it needs, and the series the gate, the desk and the edge record.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::observe::install_recorder;
use bridle_server::{AppState, router};
use serde_json::json;
use tower::ServiceExt;

use super::support::{SECRET, code, get, post, token, token_for};

async fn app_with_metrics(limits: Limits) -> Router {
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    let runtime = RuntimeBuilder::new(config).env(Env::default()).store_url("memory").build().await.unwrap();
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), limits).unwrap();
    router(state.with_metrics(install_recorder().unwrap()))
}

async fn scrape(app: &Router, token: &str) -> (StatusCode, String, String) {
    let req = Request::get("/metrics").header("authorization", format!("Bearer {token}")).body(Body::empty()).unwrap();
    let response = app.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let kind = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, kind, String::from_utf8(bytes.to_vec()).unwrap())
}

fn reader() -> String {
    token_for("prometheus", "ops", &[], &["metrics:read"])
}

#[tokio::test]
async fn metrics_need_a_token_with_the_metrics_read_scope() {
    let app = app_with_metrics(Limits::default()).await;
    let (status, body) = get(&app, "/metrics", None).await;
    assert_eq!((status, code(&body)), (StatusCode::UNAUTHORIZED, "unauthenticated"));
    let (status, body) = get(&app, "/metrics", Some(&token("operator-2"))).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    let (status, kind, _) = scrape(&app, &reader()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(kind.starts_with("text/plain"), "{kind}");
}

#[tokio::test]
async fn metrics_are_off_unless_a_recorder_is_given() {
    let app = super::support::app().await;
    let (status, body) = get(&app, "/metrics", Some(&reader())).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
}

#[tokio::test]
async fn calls_approvals_and_rate_limits_show_up_as_series() {
    let limits = Limits { rate_per_second: 0.001, burst: 8, ..Limits::default() };
    let app = app_with_metrics(limits).await;
    let requester = token("requester-1");
    let read = json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}});
    let (status, body) = post(&app, "/v1/calls", Some(&requester), &read).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let change =
        json!({"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7}});
    let (_, body) = post(&app, "/v1/calls", Some(&requester), &change).await;
    assert_eq!(body["rejection"]["code"], "approval_required", "{body}");
    let id = body["approval_id"].as_str().unwrap().to_owned();
    // The pending gauge is read from the store at the scrape.
    let (_, _, text) = scrape(&app, &reader()).await;
    assert!(text.contains(r#"bridle_approvals_pending{tenant="tenant-a"}"#), "{text}");
    let (status, _) = post(&app, &format!("/v1/approvals/{id}/approve"), Some(&token("operator-2")), &json!({})).await;
    assert_eq!(status, StatusCode::OK);
    // A principal with a burst of 8 is refused on its 9th request.
    let viewer = token("viewer-4");
    let mut last = StatusCode::OK;
    for _ in 0..9 {
        last = get(&app, "/v1/tools", Some(&viewer)).await.0;
    }
    assert_eq!(last, StatusCode::TOO_MANY_REQUESTS);

    let (status, _, text) = scrape(&app, &reader()).await;
    assert_eq!(status, StatusCode::OK);
    for series in [
        r#"bridle_http_requests_total{route="/v1/calls",status="200"}"#,
        r#"bridle_http_requests_total{route="/v1/tools",status="429"}"#,
        r#"bridle_rate_limited_total{route="/v1/tools"}"#,
        r#"bridle_http_request_seconds_bucket{route="/v1/calls",le="#,
        r#"bridle_gate_verdicts_total{tool="get_service_snapshot",code="ok"}"#,
        r#"bridle_gate_verdicts_total{tool="scale_replicas",code="approval_required"}"#,
        r#"bridle_gate_call_seconds_bucket{tool="get_service_snapshot",le="#,
        "bridle_approvals_created_total",
        "bridle_approvals_granted_total",
        r#"bridle_approval_wait_seconds_bucket{outcome="granted",le="#,
        r#"bridle_gate_step_seconds_bucket{step="policy",le="#,
        r#"bridle_gate_step_seconds_bucket{step="adapter",le="#,
        concat!(r#"bridle_build_info{version=""#, env!("CARGO_PKG_VERSION"), r#""} 1"#),
    ] {
        assert!(text.contains(series), "missing {series} in\n{text}");
    }
    // Every series says what it is (webhook deliveries have no sample without a webhook).
    for (name, _, _) in bridle_server::observe::SERIES.iter().filter(|s| s.0 != "bridle_webhook_deliveries_total") {
        assert!(text.contains(&format!("# HELP {name} ")), "no HELP for {name} in\n{text}");
    }
}

#[tokio::test]
async fn counters_are_there_before_anything_happens() {
    let app = app_with_metrics(Limits::default()).await;
    let (_, _, text) = scrape(&app, &reader()).await;
    for series in [
        "bridle_approvals_created_total ",
        "bridle_approvals_granted_total ",
        "bridle_approvals_rejected_total ",
        r#"bridle_gate_verdicts_total{tool="scale_replicas",code="ok"} "#,
        r#"bridle_gate_verdicts_total{tool="get_service_snapshot",code="ok"} "#,
        "# TYPE bridle_build_info gauge",
    ] {
        assert!(text.contains(series), "missing {series} in\n{text}");
    }
}
