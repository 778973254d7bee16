//! `GET /v1/audit`: the audit events of the caller's tenant, in chain order, a page at a time.
//! The tenant is the token's; no parameter can name another.

use axum::Json;
use axum::extract::{Query, State};
use bridle_core::approval::SCOPE_GRANT;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Caller;
use crate::AppState;
use crate::error::ApiError;

/// Scope for reading the audit log (approvers may read it too).
pub const SCOPE_AUDIT_READ: &str = "audit:read";
/// Page size when none is asked for.
const DEFAULT_LIMIT: u32 = 100;
/// Largest page.
const MAX_LIMIT: u32 = 1000;

/// Query of `GET /v1/audit`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Events after this sequence number (default 0: from the start); sequence numbers are
    /// stored as signed 64-bit integers, so at most `i64::MAX`.
    #[param(minimum = 0, maximum = 9_223_372_036_854_775_807_i64)]
    pub after: Option<u64>,
    /// Page size, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// One page of the caller's tenant's audit events.
#[utoipa::path(
    get, path = "/v1/audit", tag = "audit",
    params(AuditQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"events\": [AuditEvent], \"next_after\": seq | null}`; pass `next_after` as `after` for the next page", body = crate::openapi::AuditPage),
        (status = 400, description = "bad query (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `audit:read` or `approval:grant` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.require_any(&[SCOPE_AUDIT_READ, SCOPE_GRANT])?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let after = query.after.unwrap_or(0);
    if i64::try_from(after).is_err() {
        return Err(ApiError::bad_request(format!("`after` must be at most {}", i64::MAX)));
    }
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!("`limit` must be between 1 and {MAX_LIMIT}")));
    }
    let events =
        state.gate.stores().audit.events(&caller.0.tenant, after, limit).await.map_err(|e| ApiError::internal(&e))?;
    let next_after = (events.len() == limit as usize).then(|| events.last().map(|e| e.seq)).flatten();
    Ok(Json(json!({"events": events, "next_after": next_after})))
}

/// `GET /v1/audit/verify`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ChainStatus {
    /// The caller's tenant.
    pub tenant: String,
    /// True when every event links to the one before it and its hash matches its content.
    pub ok: bool,
    /// Events verified before the first broken link (all of them when `ok`).
    pub verified: u64,
    /// The first broken link `{tenant, seq, problem}`, null when `ok`.
    #[schema(value_type = Option<Object>, required = true)]
    pub broken: Option<bridle_core::audit::BrokenLink>,
}

/// Verifies the hash chain of the caller's tenant's audit log from its first event.
#[utoipa::path(
    get, path = "/v1/audit/verify", tag = "audit",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the chain's status; a broken chain is a 200 with `ok: false` and the first broken link", body = ChainStatus),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `audit:read` or `approval:grant` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn verify(State(state): State<AppState>, caller: Caller) -> Result<Json<ChainStatus>, ApiError> {
    caller.require_any(&[SCOPE_AUDIT_READ, SCOPE_GRANT])?;
    let tenant = caller.0.tenant.clone();
    let log = state.gate.stores().audit.clone();
    let mut verifier = bridle_core::audit::ChainVerifier::new(&tenant);
    loop {
        let page = log.events(&tenant, verifier.verified(), MAX_LIMIT).await.map_err(|e| ApiError::internal(&e))?;
        if page.is_empty() {
            break;
        }
        for event in &page {
            if let Err(broken) = verifier.push(event) {
                return Ok(Json(ChainStatus {
                    tenant,
                    ok: false,
                    verified: verifier.verified(),
                    broken: Some(broken),
                }));
            }
        }
    }
    Ok(Json(ChainStatus { tenant, ok: true, verified: verifier.verified(), broken: None }))
}
