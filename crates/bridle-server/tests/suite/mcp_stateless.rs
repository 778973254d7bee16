//! MCP 2026-07-28 at `/mcp`: the stateless revision beside the 2025-11-25 handshake. rmcp's own
//! client in its `Discover` lifecycle (no `initialize`, per-request `_meta` and headers) lists,
//! reads and runs the approval loop with plain identical retries; raw requests pin the wire:
//! `server/discover`, no session header, 405 on GET, the revision's errors for a missing or
//! unsupported version, `logging/setLevel` in one era and not the other; and a tool that declares
//! an output schema returns its result as structured content.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::support::{SECRET, get, post, token};

/// The router (with the workbench tools) on a loopback socket, and its `/mcp` URL.
async fn served() -> (Router, String) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    let runtime = RuntimeBuilder::new(config)
        .tools(Arc::new(bridle_tools::Workbench))
        .env(Env::default())
        .store_url("memory")
        .build()
        .await
        .unwrap();
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default()).unwrap();
    let app = router(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(bridle_server::serve::serve(listener, app.clone(), std::future::pending()));
    (app, format!("http://{addr}/mcp"))
}

/// An rmcp client of the stateless revision as `principal`: `server/discover`, then
/// self-contained requests.
async fn discover(url: &str, principal: &str) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token(principal));
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    ().serve_with_lifecycle(StreamableHttpClientTransport::from_config(config), lifecycle).await.unwrap()
}

async fn call(client: &RunningService<RoleClient, ()>, tool: &str, arguments: Value) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = arguments.as_object().cloned();
    client.call_tool(params).await.unwrap()
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

fn scale() -> Value {
    json!({"service": "checkout", "replicas": 3, "resource_version": 7})
}

/// The request `_meta` of the stateless revision.
fn meta(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}})
}

/// A raw JSON-RPC POST to `/mcp` with the revision's headers; the status, the response headers
/// and the JSON-RPC message (from a JSON body or the SSE stream's first data line).
async fn rpc(
    app: &Router,
    principal: &str,
    version: Option<&str>,
    method: &str,
    params: Value,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut req = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("host", "localhost")
        .header("authorization", format!("Bearer {}", token(principal)))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-method", method);
    if let Some(v) = version {
        req = req.header("mcp-protocol-version", v);
    }
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        req = req.header("mcp-name", name);
    }
    let response = app.clone().oneshot(req.body(Body::from(body.to_string())).unwrap()).await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let message = serde_json::from_str(&text).unwrap_or_else(|_| {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .find_map(|d| serde_json::from_str::<Value>(d.trim()).ok().filter(|v| v.get("id").is_some()))
            .unwrap_or(Value::Null)
    });
    (status, headers, message)
}

async fn executed_scales(app: &Router) -> usize {
    let (_, audit) = get(app, "/v1/audit", Some(&token("operator-2"))).await;
    let events = audit["events"].as_array().unwrap();
    let executed =
        |e: &&Value| e["kind"] == "tool_call" && e["tool"] == "scale_replicas" && e["decision"] == "executed";
    events.iter().filter(executed).count()
}

#[tokio::test]
async fn a_stateless_client_lists_reads_and_its_plain_retry_executes_once_after_the_grant() {
    let (app, url) = served().await;
    let client = discover(&url, "requester-1").await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert!(names.contains(&"scale_replicas") && names.contains(&"get_service_snapshot"), "{names:?}");
    let read = call(&client, "get_service_snapshot", json!({"service": "checkout"})).await;
    assert_eq!((read.is_error, structured(&read)["result"]["replicas"].clone()), (Some(false), json!(2)));

    // No run id anywhere: the run is the credential's, so the approval is a tool result (not an
    // `input_required` round trip) carrying the plan, and the identical retry is the same plan.
    let asked = call(&client, "scale_replicas", scale()).await;
    let body = structured(&asked);
    assert_eq!((asked.is_error, body["code"].as_str()), (Some(true), Some("approval_required")), "{body}");
    let id = body["approval_id"].as_str().unwrap().to_owned();
    assert!(body["approval_url"].as_str().unwrap().ends_with(&format!("/approvals/{id}")));
    assert_eq!(body["plan"]["tool"], "scale_replicas");
    assert_eq!(body["plan"]["arguments"], scale());
    let run = body["plan"]["run_id"].as_str().unwrap().to_owned();
    assert!(run.starts_with("mcp-"), "{run}");
    // Asking again before the grant finds the same pending request, in the same run.
    let again = call(&client, "scale_replicas", scale()).await;
    assert_eq!(
        (structured(&again)["approval_id"].as_str(), structured(&again)["plan"]["run_id"].as_str()),
        (Some(id.as_str()), Some(run.as_str()))
    );

    let (status, granted) =
        post(&app, &format!("/v1/approvals/{id}/approve"), Some(&token("operator-2")), &json!(null)).await;
    assert_eq!(status, StatusCode::OK, "{granted}");
    // A second stateless client of the same credential (another connection, maybe another
    // replica) retries: it executes once; the next identical retry needs a new approval.
    let other = discover(&url, "requester-1").await;
    let done = call(&other, "scale_replicas", scale()).await;
    assert_eq!(done.is_error, Some(false), "{done:?}");
    assert_eq!(structured(&done)["approval_id"], id.as_str());
    let spent = call(&client, "scale_replicas", scale()).await;
    assert_eq!(structured(&spent)["code"], "approval_required");
    assert_ne!(structured(&spent)["approval_id"], id.as_str());
    assert_eq!(executed_scales(&app).await, 1);
}

#[tokio::test]
async fn runs_of_different_credentials_differ_and_meta_names_a_run() {
    let (app, url) = served().await;
    let lead = discover(&url, "lead-3").await;
    let requester = discover(&url, "requester-1").await;
    let mine = structured(&call(&requester, "scale_replicas", scale()).await);
    let theirs = structured(&call(&lead, "scale_replicas", scale()).await);
    assert_ne!(mine["plan"]["run_id"], theirs["plan"]["run_id"], "{mine} {theirs}");
    // `_meta` `bridle/run_id` and `bridle/incident` still name the run in this revision.
    let mut params = meta("2026-07-28");
    params["bridle/run_id"] = json!("run-5");
    params["bridle/incident"] = json!("inc-5");
    let (status, _, message) = rpc(
        &app,
        "requester-1",
        Some("2026-07-28"),
        "tools/call",
        json!({"name": "scale_replicas", "arguments": scale(), "_meta": params}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{message}");
    let content = &message["result"]["structuredContent"];
    assert_eq!(
        (content["plan"]["run_id"].as_str(), content["plan"]["incident"].as_str()),
        (Some("run-5"), Some("inc-5"))
    );
}

#[tokio::test]
async fn the_wire_of_the_revision_discover_no_session_405_and_version_errors() {
    let (app, _url) = served().await;
    let (status, headers, message) =
        rpc(&app, "requester-1", Some("2026-07-28"), "server/discover", json!({"_meta": meta("2026-07-28")})).await;
    assert_eq!(status, StatusCode::OK, "{message}");
    let result = &message["result"];
    let versions: Vec<&str> =
        result["supportedVersions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(versions.contains(&"2026-07-28") && versions.contains(&"2025-11-25"), "{result}");
    assert!(result["capabilities"]["tools"].is_object(), "{result}");
    assert!(result["capabilities"].get("logging").is_none(), "logging is a handshake-era capability: {result}");
    assert!(headers.get("mcp-session-id").is_none(), "no session in this revision");

    let (status, headers, message) =
        rpc(&app, "viewer-4", Some("2026-07-28"), "tools/list", json!({"_meta": meta("2026-07-28")})).await;
    assert_eq!(status, StatusCode::OK, "{message}");
    assert!(headers.get("mcp-session-id").is_none());
    let listed: Vec<&str> =
        message["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(listed, ["get_service_snapshot"], "the principal comes from the token on every request");

    // An unsupported version is refused with the revision's error, naming what is supported.
    let (_, _, message) =
        rpc(&app, "viewer-4", Some("2031-01-01"), "tools/list", json!({"_meta": meta("2031-01-01")})).await;
    assert_eq!(message["error"]["code"], -32022, "{message}");
    // A request of this revision without its `_meta` is refused, not served as a legacy one.
    let (_, _, message) = rpc(
        &app,
        "viewer-4",
        Some("2026-07-28"),
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    )
    .await;
    assert_eq!(message["error"]["code"], -32602, "{message}");
    assert!(message["error"]["message"].as_str().unwrap().contains("clientCapabilities"), "{message}");

    // `logging/setLevel` went away with the handshake.
    let (_, _, message) = rpc(
        &app,
        "viewer-4",
        Some("2026-07-28"),
        "logging/setLevel",
        json!({"level": "info", "_meta": meta("2026-07-28")}),
    )
    .await;
    assert_eq!(message["error"]["code"], -32601, "{message}");

    // GET (the legacy SSE stream) is not part of this revision.
    let req = Request::builder()
        .method(Method::GET)
        .uri("/mcp")
        .header("host", "localhost")
        .header("authorization", format!("Bearer {}", token("viewer-4")))
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(req).await.unwrap();
    assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
}

// `logging/setLevel` is deprecated (SEP-2577); handshake-era clients still send it.
#[allow(deprecated)]
#[tokio::test]
async fn a_legacy_session_sets_its_log_level() {
    let (_app, url) = served().await;
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(token("viewer-4"));
    let legacy = rmcp::ServiceExt::serve((), StreamableHttpClientTransport::from_config(config)).await.unwrap();
    assert_eq!(legacy.peer_info().unwrap().protocol_version, ProtocolVersion::V_2025_11_25);
    assert!(legacy.peer_info().unwrap().capabilities.logging.is_some());
    let level = rmcp::model::SetLevelRequestParams::new(rmcp::model::LoggingLevel::Warning);
    legacy.set_level(level).await.unwrap();
}

#[tokio::test]
async fn a_declared_output_schema_is_listed_and_the_result_is_the_structured_content() {
    let (_app, url) = served().await;
    for client in [discover(&url, "workbench").await, {
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(token("workbench"));
        rmcp::ServiceExt::serve((), StreamableHttpClientTransport::from_config(config)).await.unwrap()
    }] {
        let tools = client.list_all_tools().await.unwrap();
        let calculate = tools.iter().find(|t| t.name == "calculate").unwrap();
        let output = calculate.output_schema.clone().unwrap();
        assert_eq!(output.get("required"), Some(&json!(["value"])));
        let law = tools.iter().find(|t| t.name == "search_law").unwrap();
        assert!(law.output_schema.is_none(), "a tool that declares none lists none");
        let done = call(&client, "calculate", json!({"expression": "6*7"})).await;
        assert_eq!(done.is_error, Some(false), "{done:?}");
        assert_eq!(structured(&done), json!({"value": 42.0}));
        let outcome = done.meta.as_ref().and_then(|m| m.get("bridle/outcome")).cloned().unwrap_or_default();
        assert_eq!((outcome["status"].as_str(), outcome["call_id"].is_string()), (Some("ok"), true), "{outcome}");
        // A refusal keeps the error shape.
        let refused = call(&client, "calculate", json!({"expression": "6*7", "extra": 1})).await;
        assert_eq!((refused.is_error, structured(&refused)["code"].as_str()), (Some(true), Some("schema_rejected")));
    }
}
