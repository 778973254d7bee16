//! The MCP server (rmcp): `tools/list` shows the caller's exposed tools, `tools/call` goes
//! through the gate. Served over Streamable HTTP at `/mcp` (behind the API's bearer-token
//! middleware, see [`routes`]) and over stdio (`bridle mcp --stdio`, see [`serve_stdio`]). It holds
//! no domain rule: a rejection is the gate's, returned as a tool result with `isError: true` and
//! structured content `{code, message}`. No upstream tool annotation is read or passed on: the
//! tools listed are Bridle's own contracts.

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
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::AppState;
use crate::api::Caller;

/// `_meta` key naming the run a call belongs to (default: the MCP session id).
pub const RUN_ID_META: &str = "bridle/run_id";
/// `_meta` key naming the incident a call belongs to (default: none).
pub const INCIDENT_META: &str = "bridle/incident";
/// `_meta` key naming the registered agent a call is made for (default: none).
pub const AGENT_META: &str = "bridle/agent";
/// Header carrying the Streamable HTTP session id.
const SESSION_HEADER: &str = "mcp-session-id";

/// The protocol versions offered, oldest first; `initialize` settles on the newest the client
/// also speaks. 2026-07-28 is left out on purpose: it drops sessions, and a plan's run id is the
/// MCP session id.
pub const PROTOCOL_VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
];

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

    /// The Streamable HTTP session id, else this handler's own.
    fn session_id(&self, ctx: &RequestContext<RoleServer>) -> String {
        ctx.extensions
            .get::<Parts>()
            .and_then(|parts| parts.headers.get(SESSION_HEADER))
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map_or_else(|| self.session.to_string(), str::to_owned)
    }
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
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
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
        let run_id = match meta_string(&params, &ctx, RUN_ID_META)? {
            Some(id) => id,
            None => self.session_id(&ctx),
        };
        let incident = meta_string(&params, &ctx, INCIDENT_META)?.unwrap_or_default();
        let run = RunContext::new(&run_id, &incident);
        let agent = meta_string(&params, &ctx, AGENT_META)?;
        let request = CallRequest {
            tool: params.name.to_string(),
            arguments: Value::Object(params.arguments.clone().unwrap_or_default()),
            agent,
            ..CallRequest::default()
        };
        if let Err(e) = check_bounds(&run, &request) {
            return Ok(result::refusal(&e.rejection()).into());
        }
        // On a task of its own: a client that hangs up never cuts a gate call half-way.
        let outcome = spawn_call(&self.gate, principal, run, request).await.map_err(|e| match e {
            CallError::Task(e) => ErrorData::internal_error(format!("the gate call failed: {e}"), None),
            CallError::Gate(e) => ErrorData::internal_error(format!("the gate could not decide: {e}"), None),
        })?;
        Ok(result::tool_result(&outcome, &self.console).into())
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
