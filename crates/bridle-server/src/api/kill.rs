//! `/v1/kill`: the kill switch of the caller's tenant (or of one agent within it). Setting needs
//! `kill:set`, lifting `kill:lift`; the tenant is always the token's, so no tenant can stop or
//! release another. Every replica sharing the store rejects the scope's calls with `killed` from
//! its next call on; runs of this server in scope are asked to stop. Global switches (`--all`,
//! an agent in every tenant) are the operator's `bridle kill`.

use axum::Json;
use axum::extract::State;
use bridle_core::kill::KillScope;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::Caller;
use crate::AppState;
use crate::error::ApiError;
use crate::limits::JsonBody;

/// Scope needed to set a kill switch.
pub const SCOPE_KILL_SET: &str = "kill:set";
/// Scope needed to lift one.
pub const SCOPE_KILL_LIFT: &str = "kill:lift";

/// Body of a kill or a lift; `{}` is enough (an emergency stop needs no reason).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KillBody {
    /// Only this registered agent's calls (within the caller's tenant); absent: every call of
    /// the tenant.
    #[schema(min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9_.:/@-]+$")]
    pub agent: Option<String>,
    /// Why (kept with the switch and in the audit log): at most 2,000 characters, no NUL or
    /// other control character but tab and line breaks. Absent or blank: `no reason given`.
    #[schema(max_length = 2000, pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$")]
    #[serde(default)]
    pub reason: Option<String>,
}

/// The scope and the reason to keep. A reason or agent that breaks its bound is a 400 and
/// nothing is changed.
fn scope(caller: &Caller, body: &KillBody) -> Result<(KillScope, String), ApiError> {
    let bad = |e: bridle_core::bounds::BoundError| ApiError::bad_request(e.to_string());
    let reason = body.reason.as_deref().unwrap_or_default();
    bridle_core::bounds::check_reason("reason", reason).map_err(bad)?;
    if let Some(agent) = &body.agent {
        bridle_core::bounds::require("agent", agent).map_err(bad)?;
        bridle_core::bounds::check_agent("agent", agent).map_err(bad)?;
    }
    Ok((KillScope { tenant: Some(caller.0.tenant.clone()), agent: body.agent.clone() }, reason.to_owned()))
}

/// Sets the kill switch of the caller's tenant (or of one agent in it).
#[utoipa::path(
    post, path = "/v1/kill", operation_id = "setKillSwitch", tag = "kill",
    request_body = KillBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"kill\": {switch, changed, unfinished: {pending_approvals, jobs, paused_runs, cancelled_runs}}}`", body = crate::openapi::KillAnswer),
        (status = 400, description = "a reason over 2,000 characters or holding a NUL or control character, a bad agent id (`bad_request`); the switch is unchanged", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `kill:set` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn set(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<KillBody>,
) -> Result<Json<Value>, ApiError> {
    caller.require_any(&[SCOPE_KILL_SET])?;
    let (scope, reason) = scope(&caller, &body)?;
    let who = caller.0.subject.clone();
    let report = match &state.runs {
        Some(runs) => runs.runtime().kill(&who, scope, &reason).await,
        None => state.kills.set(None, None, &who, scope, &reason).await,
    }?;
    Ok(Json(json!({"kill": report})))
}

/// Lifts the kill switch of exactly that scope in the caller's tenant.
#[utoipa::path(
    post, path = "/v1/kill/lift", operation_id = "liftKillSwitch", tag = "kill",
    request_body = KillBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"kill\": {switch, changed}}`; `changed` is false when no switch was on for exactly that scope", body = crate::openapi::KillAnswer),
        (status = 400, description = "a reason over 2,000 characters or holding a NUL or control character, a bad agent id (`bad_request`); the switch is unchanged", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `kill:lift` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn lift(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<KillBody>,
) -> Result<Json<Value>, ApiError> {
    caller.require_any(&[SCOPE_KILL_LIFT])?;
    let (scope, reason) = scope(&caller, &body)?;
    let report = state.kills.lift(&caller.0.subject, scope, &reason).await?;
    Ok(Json(json!({"kill": report})))
}

/// The switches covering the caller's tenant (its own and global ones).
#[utoipa::path(
    get, path = "/v1/kill", operation_id = "listKillSwitches", tag = "kill",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"switches\": [{tenant?, agent?, reason, set_by, set_at}]}`", body = crate::openapi::KillList),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `kill:set` or `kill:lift` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    caller.require_any(&[SCOPE_KILL_SET, SCOPE_KILL_LIFT])?;
    let all = state.gate.stores().kills.active_kills().await?;
    let tenant = caller.0.tenant.as_str();
    let mine: Vec<_> = all.into_iter().filter(|s| s.scope.tenant.as_deref().is_none_or(|t| t == tenant)).collect();
    Ok(Json(json!({"switches": mine})))
}
