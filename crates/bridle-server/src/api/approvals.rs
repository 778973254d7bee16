//! `/v1/approvals`: pending requests of the caller's tenant, one request's plan, and approving or
//! rejecting it through the approvals desk (which enforces approver ≠ requester, scopes and
//! levels). An id of another tenant is 404 `not_found`, exactly like an unknown id, so ids of
//! other tenants never leak; an approve or reject of such an id is audited in the caller's chain.

use axum::Json;
use axum::extract::{Path, State};
use bridle_core::approval::{self, ApprovalRequest, SCOPE_GRANT, SCOPE_SIGN_OFF};
use bridle_core::audit::OperatorAuth;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::Caller;
use crate::AppState;
use crate::error::ApiError;
use crate::limits::{JsonBody, NoBody};

/// Body of a rejection.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectBody {
    /// Why the plan is refused (shown to the requester, kept in the audit log); not blank, at
    /// most 2,000 characters, no NUL or other control character but tab and line breaks.
    #[schema(
        min_length = 1,
        max_length = 2000,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\s\x00-\x1F\x7F-\x9F][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    pub reason: String,
}

fn require_approver(caller: &Caller) -> Result<(), ApiError> {
    caller.require_any(&[SCOPE_GRANT, SCOPE_SIGN_OFF])
}

/// An id that breaks the id bound names no request of mine: not found, like an unknown one.
fn known_id(id: &str) -> Result<(), ApiError> {
    bridle_core::bounds::check_id("approval_id", id)
        .map_err(|_| ApiError::not_found("no approval request with that id"))
}

async fn load(state: &AppState, caller: &Caller, id: &str) -> Result<ApprovalRequest, ApiError> {
    known_id(id)?;
    state
        .gate
        .stores()
        .approvals
        .get_request(&caller.0.tenant, id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no approval `{id}`")))
}

fn answer(request: &ApprovalRequest) -> Result<Json<Value>, ApiError> {
    Ok(Json(json!({"approval": serde_json::to_value(request)?})))
}

/// Pending approval requests of the caller's tenant.
#[utoipa::path(
    get, path = "/v1/approvals", operation_id = "listApprovals", tag = "approvals",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"approvals\": [ApprovalRequest]}`: pending, unexpired requests of the caller's tenant", body = crate::openapi::ApprovalList),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `approval:grant` or `approval:sign_off` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn list(State(state): State<AppState>, caller: Caller) -> Result<Json<Value>, ApiError> {
    require_approver(&caller)?;
    let pending = state.desk.pending_approvals(&caller.0).await?;
    Ok(Json(json!({"approvals": with_risk(&state, &pending)?})))
}

/// `request` as JSON with what the approver weighs beside it, read now: its tool's `risk` tier
/// and `tool_info` (title and description, in Korean too when the contract has them; both absent
/// when the tool is no longer registered), its `change_hash` (the same change, whoever asks in
/// whichever run), and `same_change`: the other pending requests of `pending` with that hash.
fn shown(state: &AppState, request: &ApprovalRequest, pending: &[ApprovalRequest]) -> Result<Value, ApiError> {
    let mut value = serde_json::to_value(request)?;
    let Some(fields) = value.as_object_mut() else { return Ok(value) };
    if let Some(tool) = state.gate.config().registry.get(&request.plan.tool) {
        fields.insert("risk".to_owned(), Value::String(tool.risk.as_str().to_owned()));
        let mut info = json!({"title": tool.title, "description": tool.description});
        if let Some(info) = info.as_object_mut() {
            if let Some(title) = &tool.title_ko {
                info.insert("title_ko".to_owned(), Value::String(title.clone()));
            }
            if let Some(text) = &tool.description_ko {
                info.insert("description_ko".to_owned(), Value::String(text.clone()));
            }
        }
        fields.insert("tool_info".to_owned(), info);
    }
    let hash = approval::change_hash(&request.plan).map_err(bridle_runtime::GateError::from)?;
    let mut same = Vec::new();
    for other in pending.iter().filter(|o| o.id != request.id && o.plan.tool == request.plan.tool) {
        if approval::change_hash(&other.plan).is_ok_and(|h| h == hash) {
            same.push(json!({"id": other.id, "run_id": other.plan.run_id, "requester": other.requester}));
        }
    }
    fields.insert("change_hash".to_owned(), Value::String(hash));
    fields.insert("same_change".to_owned(), Value::Array(same));
    Ok(value)
}

/// [`shown`] for each request of a pending list.
fn with_risk(state: &AppState, pending: &[ApprovalRequest]) -> Result<Vec<Value>, ApiError> {
    pending.iter().map(|r| shown(state, r, pending)).collect()
}

/// One request: its plan (tool, arguments, tenant, subject, incident, run id), plan hash, level,
/// status, grants, expiry and context (reasons, agent and its source, a pipeline's evidence),
/// with the plan's diff against the current state of its resource (`compared` false: the tool
/// names no state to compare, or the read failed).
/// The state is read with the read tool's own identity (the caller needs no read scope); a
/// failed read leaves `current` null and says why in `diff_error`, never hiding the request.
#[utoipa::path(
    get, path = "/v1/approvals/{id}", operation_id = "getApproval", tag = "approvals",
    params(("id" = String, Path, description = "approval id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"approval\": ApprovalRequest, \"current\": {…}|null, \"diff\": [{field, current, proposed}], \"diff_error\"?: \"…\"}`", body = crate::openapi::ApprovalShown),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `approval:grant` or `approval:sign_off` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "no such approval in the caller's tenant (`not_found`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    require_approver(&caller)?;
    let request = load(&state, &caller, &id).await?;
    let pending = state.desk.pending_approvals(&caller.0).await?;
    let approval = shown(&state, &request, &pending)?;
    let (current, diff, diff_error, compared) = match state.desk.current_state(&request).await {
        Ok(None) => (Value::Null, Vec::new(), None, false),
        Ok(Some(current)) => {
            let diff = approval::diff(&request.plan.arguments, &current);
            (current, diff, None, true)
        }
        Err(reason) => (Value::Null, Vec::new(), Some(reason.to_string()), false),
    };
    let mut body = json!({"approval": approval, "current": current, "diff": diff, "compared": compared});
    if let (Some(reason), Some(fields)) = (diff_error, body.as_object_mut()) {
        fields.insert("diff_error".to_owned(), Value::String(reason));
    }
    Ok(Json(body))
}

/// Adds the caller's grant.
#[utoipa::path(
    post, path = "/v1/approvals/{id}/approve", operation_id = "approveApproval", tag = "approvals",
    params(("id" = String, Path, description = "approval id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"approval\": ApprovalRequest}` after the grant (`granted` once the level is met)", body = crate::openapi::ApprovalAnswer),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "no approver scope (`forbidden`), or the desk refused this approver, e.g. the requester (`approver_denied`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "no such approval in the caller's tenant (`not_found`)", body = crate::openapi::ErrorBody),
        (status = 409, description = "expired or no longer pending (`approval_expired`, …)", body = crate::openapi::ErrorBody),
        (status = 413, description = "a body past the limit; the route takes none and ignores one within it (`payload_too_large`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    _: NoBody,
) -> Result<Json<Value>, ApiError> {
    require_approver(&caller)?;
    known_id(&id)?;
    // The desk answers an id outside the caller's tenant with `not_found` and audits the attempt.
    answer(&state.desk.grant_via(&caller.0, &id, OperatorAuth::Token).await?)
}

/// Rejects a pending request with a reason.
#[utoipa::path(
    post, path = "/v1/approvals/{id}/reject", operation_id = "rejectApproval", tag = "approvals",
    params(("id" = String, Path, description = "approval id")),
    request_body = RejectBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"approval\": ApprovalRequest}`, now `rejected`", body = crate::openapi::ApprovalAnswer),
        (status = 400, description = "missing or blank reason, a reason or id out of bounds (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "no approver scope (`forbidden`), or the desk refused this approver (`approver_denied`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "no such approval in the caller's tenant (`not_found`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn reject(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RejectBody>,
) -> Result<Json<Value>, ApiError> {
    require_approver(&caller)?;
    known_id(&id)?;
    if body.reason.trim().is_empty() {
        return Err(ApiError::bad_request("a rejection needs a `reason`"));
    }
    bridle_core::bounds::check_reason("reason", &body.reason).map_err(|e| ApiError::bad_request(e.to_string()))?;
    answer(&state.desk.reject_via(&caller.0, &id, &body.reason, OperatorAuth::Token).await?)
}

/// How often the events stream looks at the pending list.
const EVENTS_POLL: std::time::Duration = std::time::Duration::from_millis(750);

/// One Server-Sent Event of `GET /v1/approvals/events`.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct ApprovalsFrame {
    /// `approvals` (the pending list changed; the first frame is the list as it stands) or
    /// `error` (the list could not be read; the stream ends).
    pub event: String,
    /// `{"approvals": [ApprovalRequest]}` or `{"error": {"code", "message"}}`, as JSON text.
    pub data: String,
}

/// The pending list of the caller's tenant as Server-Sent Events: the list as it stands first,
/// then the whole list again each time it changes (a request added, granted, rejected or
/// expired, whoever did it). The stream stays open until the client leaves or the server shuts
/// down.
#[utoipa::path(
    get, path = "/v1/approvals/events", operation_id = "streamApprovalEvents", tag = "approvals",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`text/event-stream`: `event: approvals`, `data: {\"approvals\": [ApprovalRequest]}` now and on every change", body = ApprovalsFrame, content_type = "text/event-stream"),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `approval:grant` or `approval:sign_off` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn events(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<
    axum::response::sse::Sse<
        impl futures_util::Stream<Item = Result<axum::response::sse::Event, std::convert::Infallible>>,
    >,
    ApiError,
> {
    use axum::response::sse::{Event, KeepAlive, Sse};
    require_approver(&caller)?;
    // The first read answers here, so a store failure is an HTTP error rather than a stream.
    let first = state.desk.pending_approvals(&caller.0).await?;
    let seed = (state, caller.0, Some(first), String::new(), false);
    let stream = futures_util::stream::unfold(seed, |(state, principal, mut ready, mut last, done)| async move {
        if done {
            return None;
        }
        loop {
            let pending = match ready.take() {
                Some(p) => p,
                None => {
                    // Shutdown ends the stream, so an open console never holds `bridle serve` up.
                    let stop = state.mcp.cancel.clone();
                    tokio::select! {
                        () = tokio::time::sleep(EVENTS_POLL) => {}
                        () = stop.cancelled() => return None,
                    }
                    match state.desk.pending_approvals(&principal).await {
                        Ok(p) => p,
                        Err(e) => {
                            let e = ApiError::from(e);
                            let body = json!({"error": {"code": e.code.as_str(), "message": e.message}});
                            let frame = Event::default().event("error").data(body.to_string());
                            return Some((Ok(frame), (state, principal, None, last, true)));
                        }
                    }
                }
            };
            let listed = with_risk(&state, &pending).unwrap_or_default();
            let body = json!({"approvals": listed}).to_string();
            if body != last {
                last.clone_from(&body);
                let frame = Event::default().event("approvals").data(body);
                return Some((Ok(frame), (state, principal, None, last, false)));
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
