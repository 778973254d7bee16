//! MCP over Streamable HTTP at `/mcp`, driven by rmcp's own client over a socket: the
//! handshake and protocol version, principal-scoped tools/list, a read through the gate, the
//! approval loop (approve over the HTTP API, the identical call executes once), the `_meta`
//! run id, and the 401 without a token.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion, RequestMetaObject};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceExt, model::JsonObject};
use serde_json::{Value, json};

use super::support::{SECRET, code, get, post, token};

/// The router served on a loopback socket; the router itself answers the HTTP API in-process.
async fn served() -> (Router, String) {
    // The build's one TLS provider (reqwest has none of its own); plain HTTP needs it only to build.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    let runtime = RuntimeBuilder::new(config).env(Env::default()).store_url("memory").build().await.unwrap();
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default()).unwrap();
    let app = router(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let served = app.clone();
    tokio::spawn(bridle_server::serve::serve(listener, served, std::future::pending()));
    (app, format!("http://{addr}/mcp"))
}

/// An rmcp client session as `principal`.
async fn connect(url: &str, principal: &str) -> RunningService<RoleClient, ()> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token(principal));
    ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap()
}

fn object(value: Value) -> JsonObject {
    value.as_object().cloned().unwrap()
}

async fn call(
    client: &RunningService<RoleClient, ()>,
    tool: &str,
    arguments: Value,
    meta: Option<Value>,
) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = Some(object(arguments));
    if let Some(meta) = meta {
        params.meta = Some(RequestMetaObject(rmcp::model::MetaObject(object(meta))));
    }
    client.call_tool(params).await.unwrap()
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or(Value::Null)
}

fn scale() -> Value {
    json!({"service": "checkout", "replicas": 3, "resource_version": 7})
}

async fn tool_names(client: &RunningService<RoleClient, ()>) -> Vec<String> {
    let mut names: Vec<_> = client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    names.sort();
    names
}

/// Executed `scale_replicas` calls in the tenant's audit log.
async fn executed_scales(app: &Router) -> usize {
    let (_, audit) = get(app, "/v1/audit", Some(&token("operator-2"))).await;
    audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "tool_call" && e["tool"] == "scale_replicas" && e["decision"] == "executed")
        .count()
}

#[tokio::test]
async fn handshake_negotiates_2025_11_25_and_lists_the_callers_tools_with_schemas() {
    let (_app, url) = served().await;
    let requester = connect(&url, "requester-1").await;
    let info = requester.peer_info().unwrap();
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("bridle"));
    let tools = requester.list_all_tools().await.unwrap();
    let scale = tools.iter().find(|t| t.name == "scale_replicas").unwrap();
    assert!(scale.input_schema.contains_key("properties"), "{:?}", scale.input_schema);
    // Annotations come from the contract: a limited change, not declared idempotent.
    let hints = scale.annotations.clone().unwrap();
    assert_eq!(hints.title.as_deref(), Some("Scale replicas"));
    assert_eq!(
        (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint),
        (Some(false), Some(false), Some(false))
    );
    let snapshot = tools.iter().find(|t| t.name == "get_service_snapshot").unwrap();
    let hints = snapshot.annotations.clone().unwrap();
    assert_eq!((hints.read_only_hint, hints.destructive_hint), (Some(true), None));
    assert_eq!(tool_names(&requester).await, ["get_service_snapshot", "scale_replicas"]);
    // viewer-4 holds `service:read` only: the change tool is not even listed.
    let viewer = connect(&url, "viewer-4").await;
    assert_eq!(tool_names(&viewer).await, ["get_service_snapshot"]);
    // An approver has no tool scope at all.
    let operator = connect(&url, "operator-2").await;
    assert!(tool_names(&operator).await.is_empty());
}

#[tokio::test]
async fn a_read_tool_runs_through_the_gate() {
    let (_app, url) = served().await;
    let viewer = connect(&url, "viewer-4").await;
    let read = call(&viewer, "get_service_snapshot", json!({"service": "checkout"}), None).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    let body = structured(&read);
    assert_eq!(body["status"], "ok");
    assert_eq!(body["result"]["replicas"], 2);
    // A change outside the viewer's scopes is a tool error with the gate's code, not a protocol error.
    let denied = call(&viewer, "scale_replicas", scale(), None).await;
    assert_eq!(denied.is_error, Some(true));
    assert_eq!(structured(&denied)["code"], "policy_denied", "{denied:?}");
    let bad = call(&viewer, "get_service_snapshot", json!({"service": "checkout", "extra": 1}), None).await;
    assert_eq!(structured(&bad)["code"], "schema_rejected");
}

#[tokio::test]
async fn approval_required_then_approved_over_http_executes_exactly_once() {
    let (app, url) = served().await;
    let requester = connect(&url, "requester-1").await;
    let first = call(&requester, "scale_replicas", scale(), None).await;
    assert_eq!(first.is_error, Some(true));
    let body = structured(&first);
    assert_eq!(body["code"], "approval_required", "{body}");
    assert!(body["message"].is_string());
    let id = body["approval_id"].as_str().unwrap().to_owned();
    assert!(body["approval_url"].as_str().unwrap().ends_with(&format!("/approvals/{id}")), "{body}");
    // The plan's run id is the MCP session id.
    let (_, shown) = get(&app, &format!("/v1/approvals/{id}"), Some(&token("operator-2"))).await;
    let run_id = shown["approval"]["plan"]["run_id"].as_str().unwrap();
    assert!(!run_id.is_empty(), "{shown}");
    assert_eq!(shown["approval"]["plan"]["incident"], "");

    let (status, granted) =
        post(&app, &format!("/v1/approvals/{id}/approve"), Some(&token("operator-2")), &json!(null)).await;
    assert_eq!(status, StatusCode::OK, "{granted}");
    let done = call(&requester, "scale_replicas", scale(), None).await;
    assert_eq!(done.is_error, Some(false), "{done:?}");
    assert_eq!(structured(&done)["approval_id"], id.as_str());
    assert!(structured(&done)["job_id"].is_string());
    // Spent: the same call asks for a new approval and does not run again.
    let again = call(&requester, "scale_replicas", scale(), None).await;
    assert_eq!(structured(&again)["code"], "approval_required");
    assert_ne!(structured(&again)["approval_id"], id.as_str());
    assert_eq!(executed_scales(&app).await, 1);
    let read = call(&requester, "get_service_snapshot", json!({"service": "checkout"}), None).await;
    assert_eq!(structured(&read)["result"]["replicas"], 3);
}

#[tokio::test]
async fn meta_run_id_and_incident_bind_the_plan_across_sessions() {
    let (app, url) = served().await;
    let meta = json!({"bridle/run_id": "run-77", "bridle/incident": "inc-9"});
    let first = connect(&url, "requester-1").await;
    let asked = call(&first, "scale_replicas", scale(), Some(meta.clone())).await;
    let id = structured(&asked)["approval_id"].as_str().unwrap().to_owned();
    let (_, shown) = get(&app, &format!("/v1/approvals/{id}"), Some(&token("operator-2"))).await;
    assert_eq!(shown["approval"]["plan"]["run_id"], "run-77");
    assert_eq!(shown["approval"]["plan"]["incident"], "inc-9");
    post(&app, &format!("/v1/approvals/{id}/approve"), Some(&token("operator-2")), &json!(null)).await;
    // Another session, same run and incident: the same plan, so the approval applies.
    let second = connect(&url, "requester-1").await;
    let done = call(&second, "scale_replicas", scale(), Some(meta)).await;
    assert_eq!(done.is_error, Some(false), "{done:?}");
    let bad = CallToolRequestParams::new("get_service_snapshot");
    let mut bad = bad;
    bad.arguments = Some(object(json!({"service": "checkout"})));
    bad.meta = Some(RequestMetaObject(rmcp::model::MetaObject(object(json!({"bridle/run_id": 5})))));
    assert!(second.call_tool(bad).await.is_err(), "a non-string run id is invalid params");
}

#[tokio::test]
async fn no_token_is_401_in_the_api_error_shape() {
    let (app, url) = served().await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (status, body) = post(&app, "/mcp", None, &initialize).await;
    assert_eq!((status, code(&body)), (StatusCode::UNAUTHORIZED, "unauthenticated"));
    let (status, body) = post(&app, "/mcp", Some("not-a-jwt"), &initialize).await;
    assert_eq!((status, code(&body)), (StatusCode::UNAUTHORIZED, "unauthenticated"));
    // The rmcp client without a token fails to connect.
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
    assert!(().serve(StreamableHttpClientTransport::from_config(config)).await.is_err());
}
