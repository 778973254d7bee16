//! Without a valid token only `/healthz` and `/openapi.json` answer; expired, forged, foreign
//! and incomplete tokens are 401 `unauthenticated`.

use axum::http::{Method, StatusCode};
use bridle_server::auth::encode_hs256;
use serde_json::json;

use super::support::{SECRET, app, code, get, send, token, token_for};

/// Every /v1 route with a body that would be valid.
fn routes() -> Vec<(Method, &'static str, Option<serde_json::Value>)> {
    vec![
        (Method::GET, "/v1/tools", None),
        (
            Method::POST,
            "/v1/calls",
            Some(json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}})),
        ),
        (Method::GET, "/v1/approvals", None),
        (Method::GET, "/v1/approvals/some-id", None),
        (Method::POST, "/v1/approvals/some-id/approve", None),
        (Method::POST, "/v1/approvals/some-id/reject", Some(json!({"reason": "no"}))),
        (Method::GET, "/v1/audit", None),
        (Method::POST, "/v1/guard/scan", Some(json!({"text": "hello"}))),
        (Method::POST, "/v1/check", Some(json!({"answer": "{}"}))),
        (Method::POST, "/v1/lab/plan", Some(json!({"answer": "1. a", "steps": 5}))),
        (Method::POST, "/v1/lab/prompt", Some(json!({"lab": "loop"}))),
    ]
}

#[tokio::test]
async fn every_v1_route_needs_a_token_and_health_and_openapi_do_not() {
    let app = app().await;
    for (method, path, body) in routes() {
        let (status, body) = send(&app, method.clone(), path, None, body.map(|b| b.to_string().into_bytes())).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
        assert_eq!(code(&body), "unauthenticated", "{method} {path}");
    }
    assert_eq!(get(&app, "/healthz", None).await.0, StatusCode::OK);
    assert_eq!(get(&app, "/openapi.json", None).await.0, StatusCode::OK);
}

#[tokio::test]
async fn bad_tokens_are_unauthenticated() {
    let app = app().await;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let claims = |exp: i64, iss: &str, aud: &str| {
        json!({"sub": "requester-1", "tenant": "tenant-a", "services": ["checkout"], "scopes": ["service:read"],
               "exp": exp, "iss": iss, "aud": aud})
    };
    let expired = encode_hs256(SECRET, &claims(now - 3600, "bridle", "bridle")).unwrap();
    let forged =
        encode_hs256(b"another-secret-another-secret-another", &claims(now + 3600, "bridle", "bridle")).unwrap();
    let wrong_audience = encode_hs256(SECRET, &claims(now + 3600, "bridle", "elsewhere")).unwrap();
    let wrong_issuer = encode_hs256(SECRET, &claims(now + 3600, "someone", "bridle")).unwrap();
    let no_tenant = encode_hs256(
        SECRET,
        &json!({"sub": "requester-1", "services": [], "scopes": [], "exp": now + 3600, "iss": "bridle", "aud": "bridle"}),
    )
    .unwrap();
    let mut tampered = token("requester-1");
    tampered.push('x');
    for (name, t) in [
        ("expired", expired.as_str()),
        ("forged", &forged),
        ("wrong audience", &wrong_audience),
        ("wrong issuer", &wrong_issuer),
        ("no tenant", &no_tenant),
        ("tampered", &tampered),
        ("garbage", "not-a-jwt"),
    ] {
        let (status, body) = get(&app, "/v1/tools", Some(t)).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: {body}");
        assert_eq!(code(&body), "unauthenticated", "{name}");
    }
}

#[tokio::test]
async fn the_principal_comes_from_the_token_alone() {
    let app = app().await;
    // A viewer sees the read tool but not the change.
    let (status, body) = get(&app, "/v1/tools", Some(&token("viewer-4"))).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<_> = body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["get_service_snapshot"]);
    let (_, openai) = get(&app, "/v1/tools?format=openai", Some(&token("requester-1"))).await;
    assert_eq!(openai["tools"].as_array().unwrap().len(), 2);
    // Claims decide: a token naming an unknown subject with no scopes sees nothing.
    let (_, none) = get(&app, "/v1/tools", Some(&token_for("ghost", "tenant-a", &[], &[]))).await;
    assert_eq!(none["tools"], json!([]));
}
