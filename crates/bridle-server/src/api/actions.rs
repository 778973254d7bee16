//! `POST /v1/actions/{job_id}/outcome`: an operator rates an executed action of their tenant a
//! success or a failure (the action history the gate weighs later proposals against), as
//! `bridle outcome` does; the note is masked and the rating audited as `action_outcome`.

use axum::Json;
use axum::extract::{Path, State};
use bridle_core::history::{Outcome, OutcomeSource, Rating};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::Caller;
use super::feedback::SCOPE_FEEDBACK_WRITE;
use crate::AppState;
use crate::error::ApiError;
use crate::limits::JsonBody;

/// Longest note, in characters.
const MAX_NOTE_CHARS: usize = 2000;

/// How an executed action turned out.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionOutcome {
    /// It did what it was for.
    Success,
    /// It did not (the gate escalates the same action for the same diagnosis afterwards).
    Failure,
}

/// Body of `POST /v1/actions/{job_id}/outcome`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OutcomeBody {
    /// The outcome.
    pub outcome: ActionOutcome,
    /// What was seen, at most 2000 characters; secrets and personal data are masked before it is stored.
    #[schema(max_length = 2000, pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$")]
    pub note: Option<String>,
}

/// The rated action.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutcomeStored {
    /// The action (`tenant`, `job_id`, `tool`, `diagnosis`, `equipment_class`, `equipment`,
    /// `executed_at`, `rating {outcome, source, rated_by, note, rated_at}`).
    #[schema(value_type = Object)]
    pub action: Value,
}

/// Rates an executed action of the caller's tenant.
#[utoipa::path(
    post, path = "/v1/actions/{job_id}/outcome", operation_id = "rateActionOutcome", tag = "feedback",
    params(("job_id" = String, Path, description = "the job that executed the action")),
    request_body = OutcomeBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "rated (a later rating replaces it); audited as `action_outcome`", body = OutcomeStored),
        (status = 400, description = "malformed body or a note over 2000 characters or holding a NUL or control character, a job id out of bounds (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `feedback:write` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "no executed action with that job in the caller's tenant (`not_found`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn rate(
    State(state): State<AppState>,
    caller: Caller,
    Path(job_id): Path<String>,
    JsonBody(body): JsonBody<OutcomeBody>,
) -> Result<Json<OutcomeStored>, ApiError> {
    caller.require_any(&[SCOPE_FEEDBACK_WRITE])?;
    if body.note.as_deref().is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS) {
        return Err(ApiError::bad_request(format!("`note` is longer than {MAX_NOTE_CHARS} characters")));
    }
    let bad = |e: bridle_core::bounds::BoundError| ApiError::bad_request(e.to_string());
    // A job id that breaks the id bound names no job of mine: not found, like an unknown one.
    bridle_core::bounds::check_id("job_id", &job_id)
        .map_err(|_| ApiError::not_found("no executed action with that job id"))?;
    if let Some(note) = &body.note {
        bridle_core::bounds::check_reason("note", note).map_err(bad)?;
    }
    let rating = Rating {
        outcome: match body.outcome {
            ActionOutcome::Success => Outcome::Success,
            ActionOutcome::Failure => Outcome::Failure,
        },
        source: OutcomeSource::Operator,
        rated_by: caller.0.subject.clone(),
        note: body.note,
        rated_at: time::OffsetDateTime::now_utc(),
    };
    let gate = state.gate.clone();
    let tenant = caller.0.tenant.clone();
    let job = job_id.clone();
    // On its own task: a request timeout never cuts the rating from its audit event.
    let task = tokio::spawn(async move { bridle_runtime::history::rate(&gate, &tenant, &job, &rating).await });
    let action = task.await??.ok_or_else(|| ApiError::not_found(format!("no executed action with job `{job_id}`")))?;
    Ok(Json(OutcomeStored { action: serde_json::to_value(action)? }))
}
