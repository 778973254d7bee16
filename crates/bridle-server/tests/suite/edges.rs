//! One error shape at every edge (issue 19, point 5): axum's own rejections, `/mcp`'s transport
//! checks, the request-head limits, the declared body type, `nbf`, two `Authorization` headers,
//! and the rate limiter's answers. The hyper-level ones are driven over a real TCP connection.

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use bridle_server::auth::encode_hs256;
use bridle_server::limits::Limits;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::support::{SECRET, app, app_with, token};

/// Sends `req` through the router; the status, headers and body bytes.
async fn exchange(app: &Router, req: Request<Body>) -> (StatusCode, HeaderMap, Vec<u8>) {
    let response = app.clone().oneshot(req).await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, headers, bytes.to_vec())
}

/// Asserts the answer is `status` in the error shape with `code`, served as JSON.
#[track_caller]
fn assert_shape(answer: &(StatusCode, HeaderMap, Vec<u8>), status: StatusCode, code: &str) {
    let (got, headers, body) = answer;
    let text = String::from_utf8_lossy(body);
    assert_eq!(*got, status, "{text}");
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    assert!(content_type.starts_with("application/json"), "content type `{content_type}` for {status}: {text}");
    let body: Value = serde_json::from_slice(body).unwrap_or_else(|e| panic!("{status}: not JSON ({e}): {text}"));
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert_eq!(body.as_object().map(serde_json::Map::len), Some(1), "{body}");
}

fn request(method: Method, uri: &str, bearer: Option<&str>) -> axum::http::request::Builder {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = bearer {
        req = req.header(header::AUTHORIZATION, format!("Bearer {t}"));
    }
    req
}

#[tokio::test]
async fn a_path_segment_that_does_not_decode_is_400_in_the_error_shape() {
    let app = app().await;
    let t = token("operator-2");
    // `%FF` is not UTF-8: axum's `Path` extractor refused it with a text/plain 400.
    for uri in ["/v1/approvals/%FF", "/v1/approvals/%FF/reject", "/v1/runs/%C3%28", "/console/%FF"] {
        let method = if uri.ends_with("reject") { Method::POST } else { Method::GET };
        let req = request(method, uri, Some(&t))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(r#"{"reason": "no"}"#))
            .unwrap();
        assert_shape(&exchange(&app, req).await, StatusCode::BAD_REQUEST, "bad_request");
    }
}

#[tokio::test]
async fn a_query_that_does_not_decode_is_400_in_the_error_shape() {
    let app = app().await;
    let t = token("operator-2");
    for uri in ["/v1/audit?after=x", "/v1/audit?limit=%FF", "/v1/tools?format=%", "/v1/audit?after=-1"] {
        let req = request(Method::GET, uri, Some(&t)).body(Body::empty()).unwrap();
        assert_shape(&exchange(&app, req).await, StatusCode::BAD_REQUEST, "bad_request");
    }
}

#[tokio::test]
async fn a_method_a_route_does_not_take_is_405_method_not_allowed_with_allow() {
    let app = app().await;
    for (method, uri) in [(Method::DELETE, "/v1/calls"), (Method::PUT, "/v1/tools"), (Method::POST, "/healthz")] {
        let req = request(method, uri, Some(&token("requester-1"))).body(Body::empty()).unwrap();
        let answer = exchange(&app, req).await;
        assert_shape(&answer, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
        assert!(answer.1.get(header::ALLOW).is_some(), "{uri}: the Allow header is kept");
    }
}

#[tokio::test]
async fn text_plain_or_no_content_type_on_a_json_route_is_415() {
    let app = app().await;
    let t = token("requester-1");
    let call = r#"{"tool": "get_service_snapshot", "arguments": {"service": "checkout"}}"#;
    for declared in [None, Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("application/jsonx")] {
        let mut req = request(Method::POST, "/v1/calls", Some(&t));
        if let Some(d) = declared {
            req = req.header(header::CONTENT_TYPE, d);
        }
        let answer = exchange(&app, req.body(Body::from(call)).unwrap()).await;
        assert_shape(&answer, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
    }
    // Nothing ran: the audit log of the tenant is empty.
    let req = request(Method::GET, "/v1/audit", Some(&token("operator-2"))).body(Body::empty()).unwrap();
    let (_, _, audit) = exchange(&app, req).await;
    assert_eq!(serde_json::from_slice::<Value>(&audit).unwrap()["events"], json!([]));
    // JSON with parameters or a `+json` type is JSON.
    for declared in ["application/json; charset=utf-8", "APPLICATION/JSON", "application/vnd.bridle+json"] {
        let req = request(Method::POST, "/v1/calls", Some(&t)).header(header::CONTENT_TYPE, declared);
        let (status, _, body) = exchange(&app, req.body(Body::from(call)).unwrap()).await;
        assert_eq!(status, StatusCode::OK, "{declared}: {}", String::from_utf8_lossy(&body));
    }
}

#[tokio::test]
async fn a_body_that_is_not_json_is_400_whatever_its_declared_type() {
    let app = app().await;
    let t = token("viewer-4");
    for declared in [None, Some("text/plain"), Some("application/json"), Some("application/octet-stream")] {
        for body in [&b"{not json"[..], b"", b"\xff\xfe", b"text=hello"] {
            let mut req = request(Method::POST, "/v1/guard/scan", Some(&t));
            if let Some(d) = declared {
                req = req.header(header::CONTENT_TYPE, d);
            }
            let answer = exchange(&app, req.body(Body::from(body.to_vec())).unwrap()).await;
            assert_shape(&answer, StatusCode::BAD_REQUEST, "bad_request");
        }
    }
    // Too deep is still `json_too_deep`, declared or not.
    let deep = format!("{{\"text\": {}1{}}}", "[".repeat(500), "]".repeat(500));
    let req = request(Method::POST, "/v1/guard/scan", Some(&t)).header(header::CONTENT_TYPE, "text/plain");
    assert_shape(&exchange(&app, req.body(Body::from(deep)).unwrap()).await, StatusCode::BAD_REQUEST, "json_too_deep");
}

fn claims_with_nbf(nbf: i64) -> Value {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    json!({"sub": "viewer-4", "tenant": "tenant-a", "services": ["checkout"], "scopes": ["service:read"],
           "exp": now + 3600, "iss": "bridle", "aud": "bridle", "nbf": nbf})
}

#[tokio::test]
async fn a_token_with_a_future_nbf_is_401() {
    let app = app().await;
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let future = encode_hs256(SECRET, &claims_with_nbf(now + 3600)).unwrap();
    let req = request(Method::GET, "/v1/tools", Some(&future)).body(Body::empty()).unwrap();
    let answer = exchange(&app, req).await;
    assert_shape(&answer, StatusCode::UNAUTHORIZED, "unauthenticated");
    assert!(String::from_utf8_lossy(&answer.2).contains("nbf"), "the message says why");
    // A malformed `nbf` is refused too.
    let mut odd = claims_with_nbf(0);
    odd["nbf"] = json!("tomorrow");
    let odd = encode_hs256(SECRET, &odd).unwrap();
    let req = request(Method::GET, "/v1/tools", Some(&odd)).body(Body::empty()).unwrap();
    assert_shape(&exchange(&app, req).await, StatusCode::UNAUTHORIZED, "unauthenticated");
    // Within the 30 s leeway, or in the past, the token is valid.
    for nbf in [now + 10, now - 60] {
        let fine = encode_hs256(SECRET, &claims_with_nbf(nbf)).unwrap();
        let req = request(Method::GET, "/v1/tools", Some(&fine)).body(Body::empty()).unwrap();
        assert_eq!(exchange(&app, req).await.0, StatusCode::OK, "nbf {}", nbf - now);
    }
}

#[tokio::test]
async fn two_authorization_headers_are_401_and_neither_wins() {
    let app = app().await;
    let (good, other) = (token("requester-1"), token("viewer-4"));
    for pair in [[good.as_str(), "not-a-jwt"], ["not-a-jwt", good.as_str()], [good.as_str(), other.as_str()]] {
        let req = Request::builder()
            .uri("/v1/tools")
            .header(header::AUTHORIZATION, format!("Bearer {}", pair[0]))
            .header(header::AUTHORIZATION, format!("Bearer {}", pair[1]))
            .body(Body::empty())
            .unwrap();
        let answer = exchange(&app, req).await;
        assert_shape(&answer, StatusCode::UNAUTHORIZED, "unauthenticated");
        assert!(String::from_utf8_lossy(&answer.2).contains("more than one"), "the message says why");
    }
    // On `/mcp` too.
    let req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header(header::AUTHORIZATION, format!("Bearer {good}"))
        .header(header::AUTHORIZATION, format!("Bearer {other}"))
        .body(Body::empty())
        .unwrap();
    assert_shape(&exchange(&app, req).await, StatusCode::UNAUTHORIZED, "unauthenticated");
}

fn initialize(version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()
}

fn mcp_post(host: &str) -> axum::http::request::Builder {
    mcp_post_as(host, "application/json")
}

fn mcp_post_as(host: &str, content_type: &str) -> axum::http::request::Builder {
    request(Method::POST, "/mcp", Some(&token("requester-1")))
        .header(header::HOST, host)
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header(header::CONTENT_TYPE, content_type)
}

#[tokio::test]
async fn the_mcp_host_check_answers_in_the_error_shape() {
    let app = app().await;
    // DNS-rebinding protection: a Host outside the accepted ones was a text/plain 403.
    let req = mcp_post("evil.example").body(Body::from(initialize("2025-11-25"))).unwrap();
    assert_shape(&exchange(&app, req).await, StatusCode::FORBIDDEN, "forbidden");
    // A Host that is no authority at all was a text/plain 400.
    let req = mcp_post("local host:x").body(Body::from(initialize("2025-11-25"))).unwrap();
    assert_shape(&exchange(&app, req).await, StatusCode::BAD_REQUEST, "bad_request");
}

#[tokio::test]
async fn the_mcp_transport_refusals_answer_in_the_error_shape() {
    let app = app().await;
    // No `Accept` for both JSON and SSE: rmcp's 406.
    let req = request(Method::POST, "/mcp", Some(&token("requester-1")))
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(initialize("2025-11-25")))
        .unwrap();
    assert_shape(&exchange(&app, req).await, StatusCode::NOT_ACCEPTABLE, "not_acceptable");
    // A text/plain body: rmcp's 415.
    let req = mcp_post_as("localhost", "text/plain");
    let answer = exchange(&app, req.body(Body::from(initialize("2025-11-25"))).unwrap()).await;
    assert_shape(&answer, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
    // A body past the limit: rmcp's 413.
    let limits = Limits { max_body_bytes: 4096, ..Limits::default() };
    let small = app_with(limits).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "a".repeat(8192)}}).to_string();
    let answer = exchange(&small, mcp_post("localhost").body(Body::from(big)).unwrap()).await;
    assert_shape(&answer, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
}

#[tokio::test]
async fn json_rpc_error_replies_on_mcp_keep_the_json_rpc_shape() {
    let app = app().await;
    // A protocol-version header that contradicts the body: a JSON-RPC error, not ours.
    let req = mcp_post("localhost").header("mcp-protocol-version", "2025-03-26");
    let (status, headers, body) = exchange(&app, req.body(Body::from(initialize("2025-06-18"))).unwrap()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{}", String::from_utf8_lossy(&body));
    assert!(headers[header::CONTENT_TYPE].to_str().unwrap().starts_with("application/json"));
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert!(body["error"]["code"].is_i64(), "a JSON-RPC numeric code: {body}");
}

#[tokio::test]
async fn the_request_head_limits_answer_in_the_error_shape_in_process() {
    let app = app().await;
    let long = format!("/v1/tools?pad={}", "a".repeat(9000));
    let req = request(Method::GET, &long, Some(&token("viewer-4"))).body(Body::empty()).unwrap();
    assert_shape(&exchange(&app, req).await, StatusCode::URI_TOO_LONG, "uri_too_long");
    let mut req = request(Method::GET, "/v1/tools", Some(&token("viewer-4")));
    for i in 0..150 {
        req = req.header(format!("x-pad-{i}"), "1");
    }
    assert_shape(
        &exchange(&app, req.body(Body::empty()).unwrap()).await,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "headers_too_large",
    );
    // Unauthenticated routes are held to them too.
    let req = request(Method::GET, &long.replace("/v1/tools", "/healthz"), None).body(Body::empty()).unwrap();
    assert_shape(&exchange(&app, req).await, StatusCode::URI_TOO_LONG, "uri_too_long");
}

#[tokio::test]
async fn every_code_the_edge_answers_with_is_in_the_readme_table() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    for n in 400..600u16 {
        let Ok(status) = StatusCode::from_u16(n) else { continue };
        let code = bridle_server::error::code_for(status);
        assert!(readme.contains(&format!("`{code}`")), "README does not list `{code}` (status {n})");
    }
}

#[tokio::test]
async fn every_operation_has_a_unique_id_and_a_tag() {
    let app = app().await;
    let (_, _, doc) = exchange(&app, request(Method::GET, "/openapi.json", None).body(Body::empty()).unwrap()).await;
    let doc: Value = serde_json::from_slice(&doc).unwrap();
    let mut ids = std::collections::BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let id = operation["operationId"].as_str().unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(ids.insert(id.to_owned()), "operationId `{id}` of {method} {path} is used twice");
            assert!(operation["tags"].as_array().is_some_and(|t| !t.is_empty()), "{method} {path} has no tag");
        }
    }
    assert!(ids.len() >= 30, "{ids:?}");
}

#[tokio::test]
async fn head_limit_media_type_and_ambiguous_token_answers_were_undocumented() {
    let app = app().await;
    let (_, _, doc) = exchange(&app, request(Method::GET, "/openapi.json", None).body(Body::empty()).unwrap()).await;
    let doc: Value = serde_json::from_slice(&doc).unwrap();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            for status in ["414", "431"] {
                assert!(responses.contains_key(status), "{method} {path} does not document {status}");
            }
            if operation.get("requestBody").is_some() {
                assert!(responses.contains_key("415"), "{method} {path} does not document 415");
            }
            if operation.get("security").is_some() {
                let unauthenticated = responses["401"]["description"].as_str().unwrap_or_default();
                assert!(unauthenticated.contains("Authorization"), "{method} {path}: {unauthenticated}");
            }
        }
    }
}
