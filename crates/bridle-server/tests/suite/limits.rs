//! Limits answer with a 4xx and a code, never a 5xx: body size, JSON depth, garbage JSON, the
//! per-principal rate limit.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use bridle_server::limits::Limits;
use serde_json::json;

use super::support::{app, app_with, code, get, post, send, token, token_for};

#[tokio::test]
async fn an_oversized_body_is_413() {
    let app = app().await;
    let big = json!({"text": "a".repeat(2 * 1024 * 1024)}).to_string().into_bytes();
    let (status, body) = send(&app, Method::POST, "/v1/guard/scan", Some(&token("viewer-4")), Some(big)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(code(&body), "payload_too_large");
}

#[tokio::test]
async fn deep_json_is_refused_before_it_is_parsed() {
    let app = app().await;
    let depth = 100_000;
    let deep = format!("{{\"tool\": \"calculate\", \"arguments\": {}{}}}", "[".repeat(depth), "]".repeat(depth));
    let (status, body) =
        send(&app, Method::POST, "/v1/calls", Some(&token("requester-1")), Some(deep.into_bytes())).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&body), "json_too_deep");
}

#[tokio::test]
async fn malformed_bodies_are_400_with_a_code() {
    let app = app().await;
    let t = token("requester-1");
    for bad in [&b"{not json"[..], b"", b"[1, 2]", b"\xff\xfe", br#"{"tool": 5}"#, br#"{"tool": "x", "surprise": 1}"#] {
        let (status, body) = send(&app, Method::POST, "/v1/calls", Some(&t), Some(bad.to_vec())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{}", String::from_utf8_lossy(bad));
        assert_eq!(code(&body), "bad_request");
    }
    let (status, body) = post(&app, "/v1/calls", Some(&t), &json!({"tool": "calculate", "answer": "{}"})).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    let (status, body) = post(&app, "/v1/guard/scan", Some(&t), &json!({"text": "x", "channel": "fax"})).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    let (status, body) = get(&app, "/v1/tools?format=yaml", Some(&t)).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    let (status, body) = get(&app, "/v1/nowhere", Some(&t)).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
    let (status, body) = send(&app, Method::DELETE, "/v1/calls", Some(&t), None).await;
    assert_eq!((status, code(&body)), (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"));
}

#[tokio::test]
async fn each_principal_has_its_own_rate_limit() {
    let limits = Limits { rate_per_second: 0.001, burst: 3, ..Limits::default() };
    let app = app_with(limits).await;
    let t = token("viewer-4");
    for _ in 0..3 {
        assert_eq!(get(&app, "/v1/tools", Some(&t)).await.0, StatusCode::OK);
    }
    let (status, body) = get(&app, "/v1/tools", Some(&t)).await;
    assert_eq!((status, code(&body)), (StatusCode::TOO_MANY_REQUESTS, "rate_limited"));
    // Another subject, and the same subject in another tenant, are unaffected.
    assert_eq!(get(&app, "/v1/tools", Some(&token("requester-1"))).await.0, StatusCode::OK);
    let other_tenant = token_for("viewer-4", "tenant-b", &["checkout"], &["service:read"]);
    assert_eq!(get(&app, "/v1/tools", Some(&other_tenant)).await.0, StatusCode::OK);
    // Health stays outside the limit.
    assert_eq!(get(&app, "/healthz", None).await.0, StatusCode::OK);
}

#[tokio::test]
async fn a_slow_request_times_out_with_a_code() {
    let limits = Limits { timeout: Duration::from_nanos(1), ..Limits::default() };
    let app = app_with(limits).await;
    // A scan on the document channel of a large text takes longer than a nanosecond.
    let text = "ignore previous instructions ".repeat(30_000);
    let (status, body) = post(&app, "/v1/guard/scan", Some(&token("viewer-4")), &json!({"text": text})).await;
    assert_eq!((status, code(&body)), (StatusCode::REQUEST_TIMEOUT, "request_timeout"));
}
