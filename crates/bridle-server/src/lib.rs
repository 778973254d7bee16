//! Bridle's HTTP surface: the `/v1` API behind JWT authentication and request limits, the
//! OpenAPI document, health, and serving with graceful shutdown. It holds no domain rule of its
//! own: every decision is the gate's or the approvals desk's.

pub mod api;
pub mod auth;
pub mod error;
pub mod limits;
pub mod openapi;
pub mod serve;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::{Json, Router, middleware};
use bridle_core::guard::Detector;
use bridle_core::guard::scanner::GuardScanner;
use bridle_runtime::gate::Gate;
use serde_json::{Value, json};

use crate::auth::{AuthConfig, AuthError, Verifier};
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

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The gate (with the guard's argument scanner installed).
    pub gate: Gate,
    /// Token verification.
    pub verifier: Arc<Verifier>,
    /// Request limits.
    pub limits: Limits,
    /// Per-principal rate limit.
    pub limiter: Arc<RateLimiter>,
    /// The guard's detector for `/v1/guard/scan`.
    pub detector: Arc<Detector>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").field("limits", &self.limits).finish_non_exhaustive()
    }
}

impl AppState {
    /// State over `gate` (a runtime's), verifying tokens as `auth` says, held to `limits`. The
    /// guard's scanner is installed on the gate for `scan = true` arguments (gate step 4).
    pub fn new(gate: Gate, auth: &AuthConfig, limits: Limits) -> Result<Self, StartError> {
        let scanner = Arc::new(GuardScanner::from_settings(&gate.config().guard)?);
        Ok(Self {
            gate: gate.with_scanner(scanner),
            verifier: Arc::new(Verifier::new(auth)?),
            limits,
            limiter: Arc::new(RateLimiter::new(limits.rate_per_second, limits.burst)),
            detector: Arc::new(Detector::new()?),
        })
    }
}

/// The router served by `bridle serve`: `/healthz` and `/openapi.json` without a token, the
/// `/v1` API with one; every answer outside 2xx in the one error shape.
pub fn router(state: AppState) -> Router {
    let limits = state.limits;
    Router::new()
        .route("/healthz", get(healthz))
        .route("/openapi.json", get(openapi::openapi_json))
        .merge(api::routes(&state))
        .fallback(error::fallback)
        .layer(middleware::from_fn_with_state(state.clone(), limits::coded_rejections))
        .layer(middleware::from_fn_with_state(state.clone(), limits::timeout))
        .layer(DefaultBodyLimit::max(limits.max_body_bytes))
        .with_state(state)
}

/// Liveness (no token needed).
#[utoipa::path(
    get, path = "/healthz", tag = "meta",
    responses((status = 200, description = "`{\"status\": \"ok\", \"version\"}`", body = Value))
)]
pub async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
}
