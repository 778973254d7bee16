//! The MCP server (rmcp): `tools/list` shows the caller's exposed tools, `tools/call` goes
//! through the gate. Served over Streamable HTTP at `/mcp` (behind the API's bearer-token
//! middleware, see [`routes`]) and over stdio (`bridle mcp --stdio`, see [`serve_stdio`]). It holds
//! no domain rule: a rejection is the gate's, returned as a tool result with `isError: true` and
//! structured content `{code, message}`. No upstream tool annotation is read or passed on: the
//! tools listed are Bridle's own contracts.
//!
//! Both eras of the protocol are served on both transports. A 2025-11-25 (or older) client
//! opens a session with `initialize`; a 2026-07-28 client sends `server/discover` or goes
//! straight to its request, each request carrying its own `_meta` (protocol version, client
//! capabilities) and, over HTTP, the `MCP-Protocol-Version` / `Mcp-Method` headers, with no
//! session. rmcp validates the revision's envelope (missing or unsupported versions get the
//! revision's errors); this module decides only what Bridle needs from a request, and never
//! from the session: the principal from the bearer token, the run from [`run_of`].

pub mod result;

use std::borrow::Cow;
use std::sync::Arc;

use axum::Router;
use axum::http::request::Parts;
use axum::response::IntoResponse;
use bridle_core::{Principal, RunContext};
use bridle_runtime::gate::{CallRequest, Gate};
use bridle_runtime::intake::{CallError, spawn_call};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, DiscoverResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
// `logging/setLevel` is deprecated (SEP-2577), and still answered to handshake-era clients.
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::AppState;
use crate::api::Caller;

/// `_meta` key naming the run a call belongs to (default: see [`run_of`]).
pub const RUN_ID_META: &str = "bridle/run_id";
/// `_meta` key naming the incident a call belongs to (default: none).
pub const INCIDENT_META: &str = "bridle/incident";
/// `_meta` key naming the registered agent a call is made for (default: none).
pub const AGENT_META: &str = "bridle/agent";
/// Header carrying the Streamable HTTP session id.
const SESSION_HEADER: &str = "mcp-session-id";

/// The protocol versions served, oldest first. `initialize` settles on the newest handshake
/// revision the client also speaks (2025-11-25); 2026-07-28 has no handshake: a request naming it
/// in `_meta` is served statelessly (`server/discover` lists these versions).
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// Whether this request is of the stateless revision (2026-07-28 or later): its own `_meta`
/// names the version, or the stdio peer opened without a handshake.
fn is_stateless(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version().is_some_and(|v| !v.has_initialize())
}

/// How the MCP endpoint is reached and stopped.
#[derive(Debug, Clone)]
pub struct McpSettings {
    /// Base URL of the console, for the `approval_url` of `approval_required`
    /// (`{console}/approvals/{id}`).
    pub console: String,
    /// `Host` values `/mcp` accepts (DNS-rebinding protection); empty accepts any.
    pub allowed_hosts: Vec<String>,
    /// Cancelled on shutdown: ends open sessions and their SSE streams, and the console's
    /// approvals stream (`GET /v1/approvals/events`).
    pub cancel: CancellationToken,
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            console: format!("http://{}", crate::serve::DEFAULT_LISTEN),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            cancel: CancellationToken::new(),
        }
    }
}

/// Who is calling: one principal for the whole connection (stdio), or the one the HTTP
/// middleware authenticated for each request.
#[derive(Debug, Clone)]
enum Identity {
    Fixed(Principal),
    PerRequest,
}

/// The MCP handler: one per session.
#[derive(Clone)]
pub struct BridleMcp {
    gate: Gate,
    identity: Identity,
    console: Arc<str>,
    /// This handler's own session id, for transports without one on the wire (stdio).
    session: Arc<str>,
}

impl std::fmt::Debug for BridleMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BridleMcp").field("session", &self.session).finish_non_exhaustive()
    }
}

impl BridleMcp {
    /// A handler whose every call is made as `principal` (stdio: one token per process).
    pub fn for_principal(gate: Gate, principal: Principal, console: &str) -> Self {
        Self::new(gate, Identity::Fixed(principal), console)
    }

    /// A handler taking each request's principal from the HTTP authentication middleware.
    fn per_request(gate: Gate, console: &str) -> Self {
        Self::new(gate, Identity::PerRequest, console)
    }

    fn new(gate: Gate, identity: Identity, console: &str) -> Self {
        Self {
            gate,
            identity,
            console: Arc::from(console.trim_end_matches('/')),
            session: Arc::from(uuid::Uuid::now_v7().to_string()),
        }
    }

    /// The caller of this request; never read from arguments or `_meta`.
    fn principal(&self, ctx: &RequestContext<RoleServer>) -> Result<Principal, ErrorData> {
        match &self.identity {
            Identity::Fixed(p) => Ok(p.clone()),
            Identity::PerRequest => ctx
                .extensions
                .get::<Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
                .map(|Caller(p)| p.clone())
                .ok_or_else(|| ErrorData::invalid_request("unauthenticated: missing bearer token", None)),
        }
    }

    /// The run a call without `_meta` `bridle/run_id` belongs to (never a request field):
    /// - stdio, either era: this process's run (one handler per connection);
    /// - a legacy Streamable HTTP session: the `Mcp-Session-Id`;
    /// - a stateless 2026-07-28 HTTP request: the credential's run ([`credential_run`]), so an
    ///   identical plain retry is the same plan and executes once its approval is granted.
    fn run_of(&self, principal: &Principal, agent: Option<&str>, ctx: &RequestContext<RoleServer>) -> String {
        if matches!(self.identity, Identity::Fixed(_)) {
            return self.session.to_string();
        }
        let session = ctx
            .extensions
            .get::<Parts>()
            .and_then(|parts| parts.headers.get(SESSION_HEADER))
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty());
        match session {
            Some(id) if !is_stateless(ctx) => id.to_owned(),
            _ => {
                let agent = principal.agent.as_deref().or(agent);
                let window = self.gate.config().limits.for_call(&principal.tenant, agent).deadline;
                credential_run(principal, window, std::time::SystemTime::now())
            }
        }
    }
}

/// The run of a credential's stateless calls: `mcp-`, 24 hex digits of SHA-256 over the
/// principal's tenant, subject and agent (stable across requests and replicas, distinct per
/// tenant), and, when its runs have a deadline (`[limits] run_deadline_ms`), `-N`, the index of
/// the deadline-long window `now` falls in. A run opened in window N cannot outlive its
/// deadline before window N + 1 opens the next, so a client that never names a run is never
/// locked out by an expired one; a retry that crosses a window boundary is a new plan and asks
/// for a new approval.
pub fn credential_run(
    principal: &Principal,
    window: Option<std::time::Duration>,
    now: std::time::SystemTime,
) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in [principal.tenant.as_str(), principal.subject.as_str(), principal.agent.as_deref().unwrap_or("")] {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    let hex: String = hash.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect();
    let since_epoch = now.duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
    match window.map(|w| w.as_millis()).filter(|w| *w > 0) {
        Some(w) => format!("mcp-{hex}-{}", since_epoch / w),
        None => format!("mcp-{hex}"),
    }
}

/// A `_meta` object as an OpenTelemetry propagation carrier (`traceparent`, `tracestate`).
struct MetaCarrier<'a>(&'a serde_json::Map<String, Value>);

impl opentelemetry::propagation::Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// The SERVER span of one `tools/call` (`tools/call TOOL`) with the MCP semantic-convention
/// attributes (`mcp.method.name`, `gen_ai.tool.name`, `jsonrpc.request.id`,
/// `mcp.protocol.version`); a `traceparent` in the request's `_meta` becomes its parent (else it
/// nests in the HTTP request's span). A result with `isError` sets `error.type` `tool_error` and
/// an ERROR status, a JSON-RPC error its code (see [`mark_error`]). A tool name that is not
/// registered is `(unregistered)`: no caller's free text becomes a span name.
fn call_span(params: &CallToolRequestParams, ctx: &RequestContext<RoleServer>, registered: bool) -> tracing::Span {
    let tool = if registered { params.name.as_ref() } else { "(unregistered)" };
    let version = ctx.protocol_version().map(|v| v.to_string()).unwrap_or_default();
    let span = tracing::info_span!(
        "mcp_request",
        otel.name = %format!("tools/call {tool}"),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        jsonrpc.request.id = %ctx.id,
        mcp.protocol.version = %version,
        otel.status_code = tracing::field::Empty,
        error.r#type = tracing::field::Empty,
    );
    let meta = params.meta.as_ref().map(|m| &m.0).filter(|m| m.contains_key("traceparent")).or_else(|| {
        let m = &ctx.meta.0;
        m.contains_key("traceparent").then_some(m)
    });
    if let Some(meta) = meta {
        let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&MetaCarrier(meta)));
        // Err: no OpenTelemetry layer is installed (export off).
        let _ = tracing_opentelemetry::OpenTelemetrySpanExt::set_parent(&span, parent);
    }
    span
}

/// Marks a `tools/call` span as failed (the MCP semantic conventions' `error.type`).
fn mark_error(span: &tracing::Span, error_type: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", error_type);
}

/// A string `_meta` entry of the request (`None` when absent; an error when not a string).
fn meta_string(
    params: &CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
    key: &str,
) -> Result<Option<String>, ErrorData> {
    let value = params.meta.as_ref().and_then(|m| m.get(key)).or_else(|| ctx.meta.get(key));
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ErrorData::invalid_params(format!("`_meta` `{key}` must be a string"), None)),
    }
}

/// The bounds of `bridle_core::bounds` at the MCP edge (HTTP and stdio alike), before anything
/// is stored: `_meta` run id and incident are ids, the agent an agent id, no NUL in any argument
/// string or key. The gate checks the same again at its entry.
fn check_bounds(run: &RunContext, request: &CallRequest) -> Result<(), bridle_core::bounds::BoundError> {
    use bridle_core::bounds;
    bounds::check_id(RUN_ID_META, &run.run_id)?;
    bounds::check_id(INCIDENT_META, &run.incident)?;
    if let Some(agent) = &request.agent {
        bounds::check_agent(AGENT_META, agent)?;
    }
    bounds::check_json("arguments", &request.arguments)
}

impl ServerHandler for BridleMcp {
    // `logging` is deprecated (SEP-2577) but still the handshake era's capability, which
    // conformance clients of 2025-11-25 expect.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_logging().build())
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
            .with_server_info(Implementation::new("bridle", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Bridle decides in code whether each tool call may run. A refused call is a tool result with \
                 isError and structured content {code, message}; for approval_required, an operator approves \
                 approval_id at approval_url, then the identical call runs once. Send `_meta` `bridle/run_id` \
                 and `bridle/incident` to bind calls to a run and an incident.",
            )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(PROTOCOL_VERSIONS)
    }

    /// The revision's discovery: the versions served and the capabilities of the stateless
    /// revision (tools; `logging` is a handshake-era capability and is left out).
    async fn discover(&self, _ctx: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        let mut info = self.get_info();
        info.capabilities.logging = None;
        Ok(DiscoverResult::from_server_info(PROTOCOL_VERSIONS.to_vec(), info))
    }

    /// `logging/setLevel` of the handshake revisions: accepted (Bridle sends no log
    /// notifications; its logs go to the operator's collector). The stateless revision removed
    /// the method, so a 2026-07-28 request gets "method not found".
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if is_stateless(&ctx) {
            return Err(ErrorData::method_not_found::<rmcp::model::SetLevelRequestMethod>());
        }
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let principal = self.principal(&ctx)?;
        let config = self.gate.config();
        let exposed = config.registry.mcp_tools(&principal, &config.agents);
        let tools: Vec<Tool> = serde_json::from_value(exposed)
            .map_err(|e| ErrorData::internal_error(format!("tool definitions: {e}"), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let principal = self.principal(&ctx)?;
        let config = self.gate.config();
        let agent = meta_string(&params, &ctx, AGENT_META)?;
        let run_id = match meta_string(&params, &ctx, RUN_ID_META)? {
            Some(id) => id,
            None => self.run_of(&principal, agent.as_deref(), &ctx),
        };
        let incident = meta_string(&params, &ctx, INCIDENT_META)?.unwrap_or_default();
        let run = RunContext::new(&run_id, &incident);
        let request = CallRequest {
            tool: params.name.to_string(),
            arguments: Value::Object(params.arguments.clone().unwrap_or_default()),
            agent,
            ..CallRequest::default()
        };
        if let Err(e) = check_bounds(&run, &request) {
            return Ok(result::refusal(&e.rejection()).into());
        }
        let span = call_span(&params, &ctx, config.registry.get(&params.name).is_some());
        // On a task of its own: a client that hangs up never cuts a gate call half-way. The task
        // starts inside the request's span, so the gate's span nests in it.
        let call = span.in_scope(|| spawn_call(&self.gate, principal, run, request));
        let outcome = call.instrument(span.clone()).await.map_err(|e| {
            let error = match e {
                CallError::Task(e) => ErrorData::internal_error(format!("the gate call failed: {e}"), None),
                CallError::Gate(e) => ErrorData::internal_error(format!("the gate could not decide: {e}"), None),
            };
            mark_error(&span, &error.code.0.to_string());
            error
        })?;
        let output = config.registry.get(&params.name).and_then(|t| t.output_schema.clone());
        let result = result::tool_result(&outcome, &self.console, output.as_deref());
        if result.is_error == Some(true) {
            mark_error(&span, "tool_error");
        }
        Ok(result.into())
    }
}

/// `/mcp` (Streamable HTTP, sessions kept in memory) behind the API's authentication and rate
/// limit: no token is a 401 in the API's error shape before MCP sees the request.
pub fn routes(state: &AppState) -> Router<AppState> {
    let settings = &state.mcp;
    let gate = state.gate.clone();
    let console = settings.console.clone();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(settings.allowed_hosts.clone())
        .with_cancellation_token(settings.cancel.child_token())
        .with_max_request_body_bytes(state.limits.max_body_bytes);
    let service = StreamableHttpService::new(
        move || Ok(BridleMcp::per_request(gate.clone(), &console)),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    Router::new()
        .route_service("/mcp", service)
        .route_layer(axum::middleware::from_fn(session_closed_is_204))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), crate::api::authenticate))
}

/// rmcp answers a session's `DELETE` with 202; clients (the Python SDK among them) expect 200
/// or 204 once a session is closed, so it becomes 204.
async fn session_closed_is_204(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let is_delete = req.method() == axum::http::Method::DELETE;
    let response = next.run(req).await;
    if is_delete && response.status() == axum::http::StatusCode::ACCEPTED {
        return axum::http::StatusCode::NO_CONTENT.into_response();
    }
    response
}

/// Serves MCP on stdin/stdout as `principal` until the client closes the stream. Stdout carries
/// protocol messages only.
pub async fn serve_stdio(gate: Gate, principal: Principal, console: &str) -> Result<(), McpError> {
    let running = BridleMcp::for_principal(gate, principal, console)
        .serve(rmcp::transport::io::stdio())
        .await
        .map_err(|e| McpError(e.to_string()))?;
    running.waiting().await.map_err(|e| McpError(e.to_string()))?;
    Ok(())
}

/// The stdio server could not start or ended abnormally.
#[derive(Debug, thiserror::Error)]
#[error("mcp: {0}")]
pub struct McpError(String);

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn principal(tenant: &str, subject: &str, agent: Option<&str>) -> Principal {
        Principal {
            subject: subject.into(),
            tenant: tenant.into(),
            services: Default::default(),
            scopes: Default::default(),
            agent: agent.map(str::to_owned),
        }
    }

    #[test]
    fn a_credential_run_is_stable_per_identity_and_windowed_by_the_run_deadline() {
        let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let a = credential_run(&principal("t", "s", None), None, now);
        assert_eq!(a, credential_run(&principal("t", "s", None), None, now + Duration::from_secs(86_400 * 365)));
        assert!(a.starts_with("mcp-") && a.len() == 28, "{a}");
        // Tenant, subject and agent each separate runs; a shifted boundary does not collide.
        for other in [
            principal("u", "s", None),
            principal("t", "z", None),
            principal("t", "s", Some("x")),
            principal("ts", "", None),
        ] {
            assert_ne!(a, credential_run(&other, None, now), "{other:?}");
        }
        assert_eq!(bridle_core::bounds::check_id("run", &a), Ok(()));
        // With a one-hour deadline, the run changes each hour, never within one.
        let hour = Some(Duration::from_secs(3600));
        let start = UNIX_EPOCH + Duration::from_secs(3600 * 500_000);
        let first = credential_run(&principal("t", "s", None), hour, start);
        assert_eq!(first, credential_run(&principal("t", "s", None), hour, start + Duration::from_secs(3599)));
        assert_ne!(first, credential_run(&principal("t", "s", None), hour, start + Duration::from_secs(3600)));
        assert!(first.starts_with(&a) && first.ends_with("-500000"), "{first}");
    }
}
