//! Bridle's HTTP surface: the `/v1` API behind JWT authentication and request limits, the
//! OpenAPI document, health, and serving with graceful shutdown. It holds no domain rule of its
//! own: every decision is the gate's or the approvals desk's.

pub mod api;
pub mod auth;
pub mod console;
pub mod error;
pub mod limits;
pub mod mcp;
pub mod observe;
pub mod openapi;
pub mod serve;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router, middleware};
use bridle_runtime::Engine;
use bridle_runtime::approvals::ApprovalDesk;
use bridle_runtime::gate::Gate;
use bridle_runtime::guard::Guard;
use bridle_runtime::kill::KillService;
use bridle_runtime::runs;
use serde_json::{Value, json};

use crate::auth::{AuthConfig, AuthError, Verifier};
use crate::error::ApiError;
use crate::limits::{Limits, RateLimiter};

/// Why the server could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Token keys or settings are unusable.
    #[error("authentication: {0}")]
    Auth(#[from] AuthError),
    /// The guard could not be built.
    #[error("guard: {0}")]
    Guard(#[from] bridle_core::guard::GuardError),
}

/// What every handler shares: one `Arc`, so the copy axum makes for each middleware layer and
/// handler is one reference count, not a copy of every store and service handle (which cost a
/// loaded `bridle serve` about a tenth of its CPU). Fields read through `Deref`; a change while
/// building (`with_*`, `&mut state.mcp`) copies the shared part first if another handle holds it.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The fields of [`AppState`].
#[derive(Clone)]
pub struct Shared {
    /// The gate (with the guard's argument scanner installed by the engine builder).
    pub gate: Gate,
    /// The approval desk beside it.
    pub desk: ApprovalDesk,
    /// The kill switch service beside it.
    pub kills: KillService,
    /// Token verification.
    pub verifier: Arc<Verifier>,
    /// Request limits.
    pub limits: Limits,
    /// Per-principal rate limit.
    pub limiter: Arc<RateLimiter>,
    /// The guard facade for `/v1/guard/scan` (limits from `[guard]`).
    pub guard: Guard,
    /// The MCP endpoint `/mcp`: console URL, accepted hosts, shutdown.
    pub mcp: mcp::McpSettings,
    /// The Prometheus recorder rendered at `/metrics` (`None`: `/metrics` answers 404).
    pub metrics: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// Graph runs over the runtime (`None`: `/v1/runs…` answer 404 `not_found`).
    pub runs: Option<Arc<runs::Runs>>,
    /// The operator chat of `POST /v1/chat` (`None`: it answers 404 `not_found`; `bridle serve`
    /// always installs the runtime's, see [`AppState::with_chat`]).
    pub chat: Option<Arc<bridle_runtime::chat::desk::ChatDesk>>,
    /// Handlers of the feedback loop's events (`outcome_collected` from `/v1/decisions/{id}/feedback`).
    pub loop_hooks: Vec<Arc<dyn bridle_runtime::feedback::hooks::LoopHook>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl AppState {
    /// State over `engine` (a runtime's: its gate already scans `scan = true` arguments at
    /// step 4), verifying tokens as `auth` says, held to `limits`.
    pub fn new(engine: Engine, auth: &AuthConfig, limits: Limits) -> Result<Self, StartError> {
        let guard = Guard::from_settings(&engine.gate.config().guard)?;
        Ok(Self(Arc::new(Shared {
            gate: engine.gate,
            desk: engine.desk,
            kills: engine.kills,
            verifier: Arc::new(Verifier::new(auth)?),
            limits,
            limiter: Arc::new(RateLimiter::new(limits.rate_per_second, limits.burst)),
            guard,
            mcp: mcp::McpSettings::default(),
            metrics: None,
            runs: None,
            chat: None,
            loop_hooks: Vec::new(),
        })))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.0)
    }
}

impl AppState {
    /// Serves `handle` at `/metrics` (see [`observe::install_recorder`]).
    #[must_use]
    pub fn with_metrics(mut self, handle: metrics_exporter_prometheus::PrometheusHandle) -> Self {
        observe::init_series(self.gate.config().registry.iter().map(|t| t.name.as_str()));
        self.metrics = Some(handle);
        self
    }

    /// Tells `hooks` of the feedback loop's events.
    #[must_use]
    pub fn with_loop_hooks(mut self, hooks: Vec<Arc<dyn bridle_runtime::feedback::hooks::LoopHook>>) -> Self {
        self.loop_hooks = hooks;
        self
    }

    /// Serves `POST /v1/chat` with `desk` (the runtime's: [`bridle_runtime::runtime::Runtime::chat_desk`]).
    #[must_use]
    pub fn with_chat(mut self, desk: Arc<bridle_runtime::chat::desk::ChatDesk>) -> Self {
        self.chat = Some(desk);
        self
    }

    /// Serves `/v1/runs…` over `runs` (see [`runs::Runs`]).
    #[must_use]
    pub fn with_runs(mut self, runs: Arc<runs::Runs>) -> Self {
        self.runs = Some(runs);
        self
    }
}

/// The router served by `bridle serve`: `/healthz`, `/readyz`, `/openapi.json` and the console's
/// static files (`/`, `/console/*`) without a token, the
/// `/v1` API with one; every error answer in the one error shape (`error::one_shape`), outside
/// the JSON-RPC replies of `/mcp`. Layers, outermost first: observation, the request-head limits,
/// the error shape, the body limit, the timeout.
pub fn router(state: AppState) -> Router {
    let limits = state.limits;
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/openapi.json", get(openapi::openapi_json))
        .merge(console::routes())
        .merge(api::routes(&state))
        .merge(mcp::routes(&state))
        .merge(
            Router::new()
                .route("/metrics", get(observe::render))
                .route_layer(middleware::from_fn_with_state(state.clone(), api::authenticate)),
        )
        .fallback(error::fallback)
        .layer(middleware::from_fn_with_state(state.clone(), limits::timeout))
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .layer(middleware::from_fn_with_state(limits.max_body_bytes, error::one_shape))
        .layer(middleware::from_fn_with_state(state.clone(), limits::request_head))
        .layer(middleware::from_fn(observe::observe))
        .with_state(state)
}

/// Liveness (no token needed): the process is up and serving; it asks no store, so a store
/// outage never gets a replica restarted (that is [`readyz`]'s to report).
#[utoipa::path(
    get, path = "/healthz", operation_id = "health", tag = "meta",
    responses((status = 200, description = "`{\"status\": \"ok\", \"version\"}`", body = openapi::Health))
)]
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
}

/// How long `/readyz` waits for the store before calling it unavailable (below the usual
/// load-balancer check timeout, and below the PostgreSQL pool's own acquire timeout).
pub const READY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Readiness (no token needed): 200 while the store answers one cheap read that needs its
/// schema ([`bridle_core::ports::StoreHealth::ping`]), else 503 `store_unavailable`; a load
/// balancer sends traffic only to ready replicas. The cause is logged, never sent (a driver's
/// text may name a host or user).
#[utoipa::path(
    get, path = "/readyz", operation_id = "readiness", tag = "meta",
    responses(
        (status = 200, description = "`{\"status\": \"ready\"}`: the store answered", body = openapi::Ready),
        (status = 503, description = "the store did not answer within 2 s, or its schema is gone (`store_unavailable`)", body = openapi::ErrorBody),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let cause = match tokio::time::timeout(READY_TIMEOUT, state.gate.stores().health.ping()).await {
        Ok(Ok(())) => return Ok(Json(json!({"status": "ready"}))),
        Ok(Err(e)) => e.to_string(),
        Err(_) => format!("no answer within {} ms", READY_TIMEOUT.as_millis()),
    };
    tracing::warn!(error = %cause, "not ready: the store did not answer");
    Err(ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        bridle_core::Code::StoreUnavailable,
        "the store did not answer; this replica should not be sent traffic",
    ))
}
