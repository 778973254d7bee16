//! `POST /v1/check`: the workbench. A model's answer is read and each call runs through the gate
//! as the configuration's `workbench` principal, exactly as `bridle check` does: stateless,
//! audited as metadata only (tool, code, plan hash), nothing pasted is stored.

use axum::Json;
use axum::extract::State;
use bridle_core::RunContext;
use bridle_runtime::check::{WORKBENCH_PRINCIPAL, check as run_check, workbench_principal};
use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::Caller;
use crate::AppState;
use crate::error::ApiError;
use crate::limits::JsonBody;

/// A model answer to check.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckBody {
    /// The model's answer, as pasted.
    pub answer: String,
}

/// Checks an answer on the workbench.
#[utoipa::path(
    post, path = "/v1/check", operation_id = "checkAnswer", tag = "workbench",
    request_body = CheckBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{parse: {status, code, format}, calls: [{tool, arguments, status, code, message, result}]}`, \
            the shape of `bridle check --json`. Rejected calls are verdicts inside a 200.", body = crate::openapi::outcomes::CheckReport),
        (status = 400, description = "malformed body (`bad_request`, `json_too_deep`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "the configuration has no `workbench` principal (`not_found`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn check(
    State(state): State<AppState>,
    _caller: Caller,
    JsonBody(body): JsonBody<CheckBody>,
) -> Result<Json<Value>, ApiError> {
    let gate = &state.gate;
    let principal = workbench_principal(gate.config())
        .ok_or_else(|| ApiError::not_found("this configuration has no `workbench` principal"))?;
    let limits = gate.config().intake;
    // A run of its own per check, as `bridle check` does, so no run budget is shared. The calls
    // run on a task of their own (the door's): a request timeout never cuts one half-way.
    let run_id = format!("check-{}", time::OffsetDateTime::now_utc().unix_timestamp_nanos());
    let run = RunContext::new(&run_id, WORKBENCH_PRINCIPAL);
    let report = run_check(gate, &principal, &run, &body.answer, &limits).await?;
    Ok(Json(serde_json::to_value(report)?))
}
