//! The `/v1` HTTP API: every route needs a bearer token. The middleware here authenticates
//! (401 `unauthenticated`, also for two `Authorization` headers), then applies the caller's rate
//! limit (429 `rate_limited` with `Retry-After`); handlers get the [`Caller`] and never read a
//! tenant or subject from anything else.

pub mod actions;
pub mod approvals;
pub mod audit;
pub mod calls;
pub mod chat;
pub mod check;
pub mod drift;
pub mod feedback;
pub mod guard;
pub mod kill;
pub mod lab;
pub mod runs;
pub mod tools;

use axum::Router;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use bridle_core::{Code, Principal};

use crate::auth::AuthError;
use crate::error::ApiError;
use crate::{AppState, limits};

/// The `/v1` routes, behind authentication and the rate limit.
pub fn routes(state: &AppState) -> Router<AppState> {
    Router::new()
        .route("/v1/tools", get(tools::list))
        .route("/v1/calls", post(calls::call))
        .route("/v1/chat", post(chat::turn))
        .route("/v1/approvals", get(approvals::list))
        .route("/v1/approvals/events", get(approvals::events))
        .route("/v1/approvals/{id}", get(approvals::show))
        .route("/v1/approvals/{id}/approve", post(approvals::approve))
        .route("/v1/approvals/{id}/reject", post(approvals::reject))
        .route("/v1/audit", get(audit::list))
        .route("/v1/audit/verify", get(audit::verify))
        .route("/v1/drift", get(drift::scan))
        .route("/v1/guard/scan", post(guard::scan))
        .route("/v1/check", post(check::check))
        .route("/v1/lab/loop", post(lab::run_loop))
        .route("/v1/lab/plan", post(lab::plan))
        .route("/v1/lab/judge", post(lab::run_judge))
        .route("/v1/lab/prompt", post(lab::build_prompt))
        .route("/v1/runs", post(runs::start).get(runs::list))
        .route("/v1/runs/{id}", get(runs::show))
        .route("/v1/runs/{id}/events", get(runs::events))
        .route("/v1/runs/{id}/resume", post(runs::resume))
        .route("/v1/decisions", get(runs::decisions))
        .route("/v1/decisions/{id}/feedback", post(feedback::add))
        .route("/v1/feedback", get(feedback::list))
        .route("/v1/actions/{job_id}/outcome", post(actions::rate))
        .route("/v1/kill", post(kill::set).get(kill::list))
        .route("/v1/kill/lift", post(kill::lift))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate))
}

/// The authenticated principal of this request.
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| ApiError::unauthenticated("missing bearer token"))
    }
}

impl Caller {
    /// 403 `forbidden` unless the caller holds one of `scopes`.
    pub fn require_any(&self, scopes: &[&str]) -> Result<(), ApiError> {
        if scopes.iter().any(|s| self.0.has_scope(s)) {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            Code::Forbidden,
            format!(
                "this route needs one of the scopes {}",
                scopes.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
            ),
        ))
    }
}

/// Middleware: bearer token → [`Caller`], then one token from the caller's bucket. A refusal
/// (401, or 429 with `Retry-After`) drains the request body first (`limits::refuse`), so it
/// always reaches the client.
pub(crate) async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let verified = match bearer(&req) {
        Ok(token) => state.verifier.authenticate(token).await,
        Err(e) => Err(e),
    };
    let principal = match verified {
        Ok(p) => p,
        Err(e) => {
            tracing::debug!(reason = %e, "request refused: unauthenticated");
            return limits::refuse(req, &state.limits, ApiError::unauthenticated(e.to_string())).await;
        }
    };
    if !state.limiter.allow(&principal) {
        let error = ApiError::new(StatusCode::TOO_MANY_REQUESTS, Code::RateLimited, "too many requests; retry later");
        let mut response = limits::refuse(req, &state.limits, error).await;
        response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        return response;
    }
    req.extensions_mut().insert(Caller(principal));
    next.run(req).await
}

/// The bearer token of the one `Authorization` header. Two or more are refused (401): which one
/// a proxy or a library reads differs, so neither may silently win.
fn bearer(req: &Request) -> Result<&str, AuthError> {
    let mut values = req.headers().get_all(header::AUTHORIZATION).iter();
    let value = values.next().ok_or(AuthError::Missing)?;
    if values.next().is_some() {
        return Err(AuthError::Ambiguous);
    }
    let value = value.to_str().map_err(|_| AuthError::Missing)?;
    let (scheme, token) = value.split_once(' ').ok_or(AuthError::Missing)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
        return Err(AuthError::Missing);
    }
    Ok(token.trim())
}
