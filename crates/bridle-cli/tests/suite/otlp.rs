//! OTLP trace export end to end: `bridle serve` with `OTEL_EXPORTER_OTLP_ENDPOINT` naming a fake
//! collector (axum on 127.0.0.1:0 taking `POST /v1/traces`) exports, for one tool call over HTTP,
//! a protobuf `ExportTraceServiceRequest` with the request's `http_request` span and the
//! `gate_call` span nested in it, the MCP request's span, a graph run's node spans and the model
//! calls inside them; the spans still queued are sent when SIGTERM stops the server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

use super::support::text;

const SECRET: &str = "otlp-test-secret-otlp-test-secret-0123";

fn bridle(args: &[&str], cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridle"));
    // Logs turned down: the exported spans keep a filter of their own (`BRIDLE_TRACE_FILTER`).
    cmd.args(args).current_dir(cwd).env("BRIDLE_JWT_SECRET", SECRET).env("RUST_LOG", "warn");
    for var in ["BRIDLE_CONFIG", "BRIDLE_STORE_URL", "BRIDLE_LISTEN", "BRIDLE_JWT_PUBLIC_KEY", "BRIDLE_JWT_JWKS"] {
        cmd.env_remove(var);
    }
    for var in ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"] {
        cmd.env_remove(var);
    }
    cmd
}

/// The caller's trace: W3C trace context it sends as `traceparent`.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";

/// A plain HTTP/1.1 POST of JSON carrying `traceparent`; returns the status line and the body.
fn http_post(addr: &str, path: &str, token: &str, body: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         traceparent: 00-{TRACE_ID}-{PARENT_SPAN}-01\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.lines().next().unwrap_or_default().to_owned();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// The trace an MCP client sends in the request's `_meta` (2026-07-28, stateless).
const MCP_TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const MCP_PARENT_SPAN: &str = "b7ad6b7169203331";

/// A stateless MCP `tools/call` of `get_service_snapshot` over HTTP with `traceparent` in `_meta`.
fn mcp_call(addr: &str, token: &str) -> String {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "get_service_snapshot", "arguments": {"service": "checkout"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "traceparent": format!("00-{MCP_TRACE_ID}-{MCP_PARENT_SPAN}-01")}}})
    .to_string();
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n\
         Mcp-Name: get_service_snapshot\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// Every span of every export, with the content types the exports came with.
fn spans(exports: &[(String, Vec<u8>)]) -> Vec<Span> {
    let mut all = Vec::new();
    for (_, body) in exports {
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for resource in request.resource_spans {
            let attributes = resource.resource.map(|r| r.attributes).unwrap_or_default();
            let service = attributes.iter().find(|kv| kv.key == "service.name").and_then(|kv| kv.value.clone());
            assert_eq!(service.and_then(|v| v.value), Some(AnyValue::StringValue("bridle-fab-prod".into())));
            let version = attributes.iter().find(|kv| kv.key == "service.version").and_then(|kv| kv.value.clone());
            assert!(version.is_some_and(|v| v.value.is_some()), "service.version");
            let env = attributes.iter().find(|kv| kv.key == "deployment.environment").and_then(|kv| kv.value.clone());
            assert_eq!(env.and_then(|v| v.value), Some(AnyValue::StringValue("prod".into())));
            all.extend(resource.scope_spans.into_iter().flat_map(|s| s.spans));
        }
    }
    all
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key == key).and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
        AnyValue::StringValue(s) => Some(s.clone()),
        other => Some(format!("{other:?}")),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_call_exports_its_http_request_and_gate_call_spans_over_otlp() {
    // The collector.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, Vec<u8>)>();
    let collector = axum::Router::new().route(
        "/v1/traces",
        post(move |headers: HeaderMap, body: Bytes| {
            let kind = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
            let _ = tx.send((kind, body.to_vec()));
            async { StatusCode::OK }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let collector_addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, collector).await });

    let dir = tempfile::tempdir().unwrap();
    let issued = bridle(
        &["token", "issue", "--subject", "requester-1", "--tenant", "tenant-a", "--services", "checkout"],
        dir.path(),
    )
    .args(["--scopes", "service:read,runs:start", "--ttl", "1h"])
    .output()
    .unwrap();
    assert!(issued.status.success(), "{}", text(&issued.stderr));
    let token = text(&issued.stdout).trim().to_owned();

    let mut server = bridle(&["serve", "--listen", "127.0.0.1:0"], dir.path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{collector_addr}"))
        .env("OTEL_SERVICE_NAME", "bridle-fab-prod")
        .env("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).unwrap().to_owned();

    let call = r#"{"tool": "get_service_snapshot", "arguments": {"service": "checkout"}}"#;
    let (status, body) = tokio::task::spawn_blocking({
        let (addr, token) = (addr.clone(), token.clone());
        move || http_post(&addr, "/v1/calls", &token, call)
    })
    .await
    .unwrap();
    assert!(status.contains("200"), "{status} {body}");
    // A graph run: its agents call the (scripted) model.
    let run = r#"{"pipeline": "analysis", "input": {"entity": "checkout-service", "data": {"signals": ["p99 up"]}}}"#;
    let (status, body) = tokio::task::spawn_blocking({
        let (addr, token) = (addr.clone(), token.clone());
        move || http_post(&addr, "/v1/runs", &token, run)
    })
    .await
    .unwrap();
    assert!(status.starts_with("HTTP/1.1 20"), "{status} {body}");
    let mcp = tokio::task::spawn_blocking({
        let (addr, token) = (addr.clone(), token.clone());
        move || mcp_call(&addr, &token)
    })
    .await
    .unwrap();
    assert!(mcp.starts_with("HTTP/1.1 200") && mcp.contains("structuredContent"), "{mcp}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, _) =
        tokio::task::spawn_blocking(move || http_post(&addr, "/v1/calls", "not-a-token", call)).await.unwrap();
    assert!(status.contains("401"), "{status}");

    // SIGTERM: the queued spans are exported before the process exits.
    let killed = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || server.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}");

    let mut exports = Vec::new();
    while let Ok(Some(export)) = tokio::time::timeout(Duration::from_millis(200), rx.recv()).await {
        exports.push(export);
    }
    assert!(!exports.is_empty(), "the collector got nothing");
    assert!(exports.iter().all(|(kind, _)| kind == "application/x-protobuf"), "{exports:?}");
    let spans = spans(&exports);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    let gate = spans.iter().find(|s| s.name == "gate_call").unwrap_or_else(|| panic!("no gate_call in {names:?}"));
    let parent = spans.iter().find(|s| s.span_id == gate.parent_span_id);
    let request = parent.unwrap_or_else(|| panic!("gate_call's parent was not exported: {names:?}"));
    assert_eq!(request.name, "POST /v1/calls", "gate_call nests in the request's span, named METHOD ROUTE");
    assert_eq!(gate.trace_id, request.trace_id, "one trace");
    // The caller's trace continues: its trace id, its span as the parent.
    assert_eq!(hex(&request.trace_id), TRACE_ID);
    assert_eq!(hex(&request.parent_span_id), PARENT_SPAN);
    assert_eq!(request.kind, 2, "SPAN_KIND_SERVER");
    assert_eq!(attribute(request, "http.request.method").as_deref(), Some("POST"));
    assert_eq!(attribute(request, "http.route").as_deref(), Some("/v1/calls"));
    assert_eq!(attribute(request, "http.response.status_code").as_deref(), Some("IntValue(200)"));
    assert_ne!(request.status.as_ref().map_or(0, |s| s.code), 2, "a 200 is not an error");
    assert_eq!(attribute(gate, "tool").as_deref(), Some("get_service_snapshot"));
    assert_eq!(attribute(gate, "bridle.code").as_deref(), Some("ok"));
    assert_eq!(attribute(gate, "bridle.level").as_deref(), Some("auto"));
    assert!(attribute(gate, "call_id").is_some_and(|id| !id.is_empty()));
    // The refused request: its own span, status ERROR, the status as error.type.
    let refused = spans
        .iter()
        .find(|s| attribute(s, "http.response.status_code").as_deref() == Some("IntValue(401)"))
        .unwrap_or_else(|| panic!("no 401 span in {names:?}"));
    assert_eq!(refused.status.as_ref().map(|s| s.code), Some(2), "STATUS_CODE_ERROR");
    assert_eq!(attribute(refused, "error.type").as_deref(), Some("401"));
    // The MCP call: its own SERVER span in the trace its `_meta` named, the gate's span inside.
    let mcp = spans
        .iter()
        .find(|s| attribute(s, "mcp.method.name").as_deref() == Some("tools/call"))
        .unwrap_or_else(|| panic!("no MCP span in {names:?}"));
    assert_eq!(mcp.name, "tools/call get_service_snapshot");
    assert_eq!((hex(&mcp.trace_id), hex(&mcp.parent_span_id)), (MCP_TRACE_ID.to_owned(), MCP_PARENT_SPAN.to_owned()));
    assert_eq!(mcp.kind, 2, "SPAN_KIND_SERVER");
    assert_eq!(attribute(mcp, "gen_ai.tool.name").as_deref(), Some("get_service_snapshot"));
    assert_eq!(attribute(mcp, "mcp.protocol.version").as_deref(), Some("2026-07-28"));
    assert_eq!(attribute(mcp, "jsonrpc.request.id").as_deref(), Some("7"));
    assert!(
        spans.iter().any(|s| s.name == "gate_call" && s.parent_span_id == mcp.span_id),
        "the gate's span nests in the MCP span"
    );
    // Each model call: a CLIENT span with the gen_ai attributes; an answer carries its model and
    // token usage, a failure (the bundled scripted model has no reply for some agents, and the
    // run degrades) its stable code and an ERROR status.
    let calls: Vec<&Span> =
        spans.iter().filter(|s| attribute(s, "gen_ai.operation.name").as_deref() == Some("chat")).collect();
    assert!(!calls.is_empty(), "no model call span in {names:?}");
    for call in calls {
        assert_eq!(call.kind, 3, "SPAN_KIND_CLIENT");
        assert_eq!(attribute(call, "gen_ai.system").as_deref(), Some("bridle.scripted"));
        assert_eq!(attribute(call, "gen_ai.request.model").as_deref(), Some("scripted"));
        assert_eq!(call.name, "chat scripted");
        assert!(attribute(call, "gen_ai.agent.name").is_some());
        if call.status.as_ref().is_some_and(|s| s.code == 2) {
            assert!(attribute(call, "error.type").is_some_and(|c| c.starts_with("llm_")), "{call:?}");
        } else {
            assert!(
                attribute(call, "gen_ai.usage.input_tokens").is_some_and(|t| t.starts_with("IntValue(")),
                "{call:?}"
            );
            assert!(attribute(call, "gen_ai.response.model").is_some(), "{call:?}");
        }
    }
    // Each node of the run: an INTERNAL span named for the node, with the graph, run, step and
    // outcome; the model calls a node makes nest in it.
    let nodes: Vec<&Span> = spans.iter().filter(|s| attribute(s, "bridle.node").is_some()).collect();
    assert!(nodes.len() >= 2, "no graph node spans in {names:?}");
    for node in &nodes {
        assert_eq!(node.kind, 1, "SPAN_KIND_INTERNAL");
        assert_eq!(node.name, format!("node {}", attribute(node, "bridle.node").unwrap()));
        assert_eq!(attribute(node, "bridle.graph").as_deref(), Some("seed001-analysis"));
        assert!(attribute(node, "bridle.run_id").is_some_and(|r| !r.is_empty()));
        let outcome = attribute(node, "bridle.outcome").unwrap_or_default();
        assert!(["ok", "degraded", "paused", "failed"].contains(&outcome.as_str()), "{node:?}");
    }
    assert!(
        spans
            .iter()
            .filter(|s| attribute(s, "gen_ai.operation.name").as_deref() == Some("chat"))
            .all(|call| nodes.iter().any(|n| n.span_id == call.parent_span_id)),
        "every model call of the run nests in its node's span"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
