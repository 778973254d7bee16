//! The console's static files are served without a token, with the CSP and a content-hash ETag,
//! while `/v1` still needs one; and the routes the console added: the approvals stream
//! (`/v1/approvals/events`), the chain status (`/v1/audit/verify`) and the drift scan
//! (`/v1/drift`).

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use futures_util::StreamExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::support::{app, code, get, post, token};

async fn raw(app: &Router, path: &str, headers: &[(&str, &str)]) -> axum::response::Response {
    let mut req = Request::get(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    app.clone().oneshot(req.body(Body::empty()).unwrap()).await.unwrap()
}

fn header_of(response: &axum::response::Response, name: header::HeaderName) -> &str {
    response.headers().get(name).map_or("", |v| v.to_str().unwrap())
}

#[tokio::test]
async fn the_page_and_its_assets_are_served_without_a_token_with_a_strict_policy() {
    let app = app().await;
    for (path, content_type) in [
        ("/", "text/html; charset=utf-8"),
        ("/console/app.js", "text/javascript; charset=utf-8"),
        ("/console/app.css", "text/css; charset=utf-8"),
        ("/console/icon.svg", "image/svg+xml"),
        ("/console/kill.js", "text/javascript; charset=utf-8"),
        ("/console/replay.js", "text/javascript; charset=utf-8"),
    ] {
        let response = raw(&app, path, &[]).await;
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(header_of(&response, header::CONTENT_TYPE), content_type, "{path}");
        let csp = header_of(&response, header::CONTENT_SECURITY_POLICY);
        assert!(csp.contains("script-src 'self'") && csp.contains("default-src 'none'"), "{path}: {csp}");
        assert!(!csp.contains("unsafe"), "{path}: {csp}");
        assert_eq!(header_of(&response, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        assert_eq!(header_of(&response, header::CACHE_CONTROL), "no-cache");
        assert!(header_of(&response, header::ETAG).starts_with('"'), "{path}");
    }
    let deep = raw(&app, "/approvals/01a22d23-59fb-76c5-b415-da9b4132d875", &[]).await;
    assert_eq!(deep.status(), StatusCode::OK, "the approval URL given to MCP clients is the page");
    assert_eq!(header_of(&deep, header::CONTENT_TYPE), "text/html; charset=utf-8");
    let page = raw(&app, "/", &[]).await;
    let body = axum::body::to_bytes(page.into_body(), usize::MAX).await.unwrap();
    let html = String::from_utf8(body.to_vec()).unwrap();
    assert!(html.contains(r#"<script type="module" src="/console/app.js"></script>"#), "{html}");
}

#[tokio::test]
async fn an_unchanged_asset_answers_304_and_an_unknown_one_404() {
    let app = app().await;
    let first = raw(&app, "/console/app.js", &[]).await;
    let etag = header_of(&first, header::ETAG).to_owned();
    let again = raw(&app, "/console/app.js", &[("if-none-match", &etag)]).await;
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    let other = raw(&app, "/console/app.css", &[]).await;
    assert_ne!(header_of(&other, header::ETAG), etag, "each asset hashes its own bytes");
    let stale = raw(&app, "/console/app.js", &[("if-none-match", "\"0000000000000000\"")]).await;
    assert_eq!(stale.status(), StatusCode::OK);
    let (status, body) = get(&app, "/console/../Cargo.toml", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code(&body), "not_found");
    let (status, body) = get(&app, "/console/secrets.js", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(code(&body), "not_found");
}

#[tokio::test]
async fn the_api_still_needs_a_token_beside_the_open_console() {
    let app = app().await;
    for path in ["/v1/approvals", "/v1/approvals/events", "/v1/audit/verify", "/v1/drift", "/v1/tools"] {
        let (status, body) = get(&app, path, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(code(&body), "unauthenticated", "{path}");
    }
}

/// Reads SSE frames from `body` until `n` have arrived: `(event, data)`.
async fn frames(body: &mut axum::body::BodyDataStream, buffer: &mut String, n: usize) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    while out.len() < n {
        while let Some(cut) = buffer.find("\n\n") {
            let block: String = buffer.drain(..cut + 2).collect();
            let name = block.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or("message").to_owned();
            if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) {
                out.push((name, serde_json::from_str(data).unwrap()));
            }
        }
        if out.len() >= n {
            break;
        }
        // A guard against a hang, not a speed assertion: a frame is due within one poll.
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), body.next())
            .await
            .expect("no frame within 30 s")
            .expect("stream ended")
            .unwrap();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    out
}

#[tokio::test]
async fn the_approvals_stream_sends_the_list_then_each_change() {
    let app = app().await;
    let operator = token("operator-2");
    let (status, body) = get(&app, "/v1/approvals/events", Some(&token("requester-1"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(code(&body), "forbidden");

    let response = raw(&app, "/v1/approvals/events", &[("authorization", &format!("Bearer {operator}"))]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(header_of(&response, header::CONTENT_TYPE), "text/event-stream");
    let mut body = response.into_body().into_data_stream();
    let mut buffer = String::new();
    let first = frames(&mut body, &mut buffer, 1).await;
    assert_eq!(first[0].0, "approvals");
    assert_eq!(first[0].1, json!({"approvals": []}));

    let call =
        json!({"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7}});
    let (_, answer) = post(&app, "/v1/calls", Some(&token("requester-1")), &call).await;
    let id = answer["approval_id"].as_str().unwrap().to_owned();
    let added = frames(&mut body, &mut buffer, 1).await;
    assert_eq!(added[0].0, "approvals");
    let listed = added[0].1["approvals"].as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["plan"]["tool"], "scale_replicas");

    let (status, _) =
        post(&app, &format!("/v1/approvals/{id}/reject"), Some(&operator), &json!({"reason": "freeze"})).await;
    assert_eq!(status, StatusCode::OK);
    let gone = frames(&mut body, &mut buffer, 1).await;
    assert_eq!(gone[0].1, json!({"approvals": []}), "a rejected request leaves the list");
}

#[tokio::test]
async fn the_chain_status_counts_the_tenants_events_and_needs_an_audit_scope() {
    let app = app().await;
    let operator = token("operator-2");
    let (status, empty) = get(&app, "/v1/audit/verify", Some(&operator)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        (&empty["tenant"], &empty["ok"], &empty["verified"], &empty["broken"]),
        (&json!("tenant-a"), &json!(true), &json!(0), &Value::Null)
    );
    // An in-memory store keeps no head log: the tail is unanchored, and said so.
    assert_eq!(empty["tail"]["status"], "unanchored", "{empty}");
    let call = json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}});
    for _ in 0..3 {
        post(&app, "/v1/calls", Some(&token("requester-1")), &call).await;
    }
    let (_, audit) = get(&app, "/v1/audit", Some(&operator)).await;
    let events = audit["events"].as_array().unwrap().len() as u64;
    assert!(events >= 3, "{audit}");
    let (_, status_now) = get(&app, "/v1/audit/verify", Some(&operator)).await;
    assert_eq!(status_now["ok"], true);
    assert_eq!(status_now["verified"], events);
    let (status, body) = get(&app, "/v1/audit/verify", Some(&token("requester-1"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(code(&body), "forbidden");
}

#[tokio::test]
async fn the_drift_scan_is_read_only_and_checks_its_query() {
    let app = app().await;
    let requester = token("requester-1");
    let (status, scan) = get(&app, "/v1/drift", Some(&requester)).await;
    assert_eq!(status, StatusCode::OK, "{scan}");
    assert_eq!(scan["tenant"], "tenant-a");
    assert_eq!(scan["records"], 0);
    assert_eq!(scan["series"], json!([]));
    assert_eq!(scan["params"]["critical"], 4.0);
    let (status, _) = get(&app, "/v1/drift?metric=confidence&limit=10", Some(&requester)).await;
    assert_eq!(status, StatusCode::OK);
    for bad in ["/v1/drift?metric=mood", "/v1/drift?limit=0", "/v1/drift?limit=10001", "/v1/drift?tenant=tenant-b"] {
        let (status, body) = get(&app, bad, Some(&requester)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(code(&body), "bad_request");
    }
    let (status, body) = get(&app, "/v1/drift", Some(&token("operator-2"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "approvers alone do not read the decision log");
    assert_eq!(code(&body), "forbidden");
}

#[tokio::test]
async fn shutdown_ends_the_approvals_stream() {
    use std::sync::Arc;

    use bridle_runtime::runtime::{Env, RuntimeBuilder};
    use bridle_server::auth::AuthConfig;
    use bridle_server::limits::Limits;
    use bridle_server::{AppState, router};

    let config = bridle_runtime::bundled::checkout().unwrap();
    let runtime = RuntimeBuilder::new(Arc::new(config)).env(Env::default()).store_url("memory").build().await.unwrap();
    let state =
        AppState::new(runtime.engine.clone(), &AuthConfig::hs256(super::support::SECRET), Limits::default()).unwrap();
    let stop = state.mcp.cancel.clone();
    let app = router(state);
    let operator = token("operator-2");
    let response = raw(&app, "/v1/approvals/events", &[("authorization", &format!("Bearer {operator}"))]).await;
    let mut body = response.into_body().into_data_stream();
    let mut buffer = String::new();
    assert_eq!(frames(&mut body, &mut buffer, 1).await[0].0, "approvals");
    stop.cancel();
    // Keep-alive comments may come first; the stream must then end.
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Some(chunk) = body.next().await {
            let text = String::from_utf8(chunk.unwrap().to_vec()).unwrap();
            assert!(!text.contains("event: approvals"), "no frame after shutdown: {text}");
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream did not end on shutdown");
}
