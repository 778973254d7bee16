//! `/v1/decisions/{id}/feedback` and `/v1/feedback`: outcomes of the caller's tenant's decisions
//! (an operator's rating 1–5, a score 0–1, a comment) collected through the runtime's feedback
//! loop, which masks the comment and fires `outcome_collected`; and the tenant's feedback,
//! newest first. A decision of another tenant is 404 `not_found`, exactly like an unknown one.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use bridle_core::feedback::{FeedbackInput, Source};
use bridle_runtime::feedback::collect;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::Caller;
use crate::AppState;
use crate::error::ApiError;
use crate::limits::JsonBody;

/// Scope for giving feedback.
pub const SCOPE_FEEDBACK_WRITE: &str = "feedback:write";
/// Scope for reading feedback.
pub const SCOPE_FEEDBACK_READ: &str = "feedback:read";
/// Feedback per page when none is asked for.
const DEFAULT_LIMIT: u32 = 100;
/// Largest page.
const MAX_LIMIT: u32 = 1000;

/// Who produced an outcome.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackSource {
    /// A person.
    Operator,
    /// A check that scored the outcome by itself.
    Automatic,
}

/// Body of `POST /v1/decisions/{id}/feedback`: a `rating`, a `score`, or both.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FeedbackBody {
    /// Operator rating, 1 (bad) to 5 (good). Read as a number, so `2.0` is the integer 2 as
    /// JSON Schema says (schemathesis sent it).
    #[schema(value_type = Option<i64>, minimum = 1, maximum = 5)]
    pub rating: Option<f64>,
    /// Score, 0 (bad) to 1 (good).
    #[schema(minimum = 0.0, maximum = 1.0)]
    pub score: Option<f64>,
    /// Free text, at most 2000 characters; secrets and personal data are masked before it is stored.
    #[schema(max_length = 2000, pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$")]
    pub comment: Option<String>,
    /// `operator` (default) or `automatic`.
    pub source: Option<FeedbackSource>,
}

/// `POST /v1/decisions/{id}/feedback`: what was stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeedbackStored {
    /// The Feedback (`feedback_id`, `decision_id`, `source`, `rating`, `score`, `comment` (masked),
    /// `rater`, `created_at`).
    #[schema(value_type = Object)]
    pub feedback: Value,
}

/// `GET /v1/feedback`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FeedbackList {
    /// The caller's tenant's Feedback, newest first.
    #[schema(value_type = Vec<Object>)]
    pub feedback: Vec<Value>,
}

/// Query of `GET /v1/feedback`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct FeedbackQuery {
    /// Only the feedback of this decision.
    pub decision_id: Option<String>,
    /// How many, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// Rates one of the caller's tenant's decisions.
#[utoipa::path(
    post, path = "/v1/decisions/{id}/feedback", operation_id = "addFeedback", tag = "feedback",
    params(("id" = String, Path, description = "decision id")),
    request_body = FeedbackBody,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "stored; `outcome_collected` fired", body = FeedbackStored),
        (status = 400, description = "no `rating` or `score`, a value out of bounds, or a malformed body (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `feedback:write` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "no such decision in the caller's tenant (`not_found`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<FeedbackBody>,
) -> Result<(StatusCode, Json<FeedbackStored>), ApiError> {
    caller.require_any(&[SCOPE_FEEDBACK_WRITE])?;
    let bad = |e: bridle_core::bounds::BoundError| ApiError::bad_request(e.to_string());
    // Decision ids are derived (`{thread}/{task}/{agent}`): the key bound, not the id one. An id
    // outside it names no decision of anyone's: 404, like an unknown one.
    if bridle_core::bounds::check_key("decision_id", &id).is_err() {
        return Err(ApiError::not_found("no decision with that id"));
    }
    if let Some(comment) = &body.comment {
        bridle_core::bounds::check_reason("comment", comment).map_err(bad)?;
    }
    let rating = match body.rating {
        None => None,
        Some(r) if r.fract() == 0.0 && (1.0..=5.0).contains(&r) => u8::try_from(r as i64).ok(),
        Some(r) => return Err(ApiError::bad_request(format!("`rating` must be an integer from 1 to 5, not {r}"))),
    };
    let input = FeedbackInput {
        rating,
        score: body.score,
        comment: body.comment,
        source: match body.source {
            Some(FeedbackSource::Automatic) => Source::Automatic,
            Some(FeedbackSource::Operator) | None => Source::Operator,
        },
    };
    let now = time::OffsetDateTime::now_utc();
    let stored =
        collect(state.gate.stores(), &state.loop_hooks, &caller.0.tenant, &id, &caller.0.subject, input, now).await;
    let (feedback, _) = stored?;
    Ok((StatusCode::CREATED, Json(FeedbackStored { feedback: serde_json::to_value(&feedback)? })))
}

/// The caller's tenant's feedback, newest first.
#[utoipa::path(
    get, path = "/v1/feedback", operation_id = "listFeedback", tag = "feedback",
    params(FeedbackQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"feedback\": [Feedback]}`", body = FeedbackList),
        (status = 400, description = "bad query (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `feedback:read` or `feedback:write` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<FeedbackQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<FeedbackList>, ApiError> {
    caller.require_any(&[SCOPE_FEEDBACK_READ, SCOPE_FEEDBACK_WRITE])?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!("`limit` must be between 1 and {MAX_LIMIT}")));
    }
    let records = state.gate.stores().feedback.feedback(&caller.0.tenant, query.decision_id.as_deref(), limit).await?;
    let feedback = records.iter().map(serde_json::to_value).collect::<Result<_, _>>()?;
    Ok(Json(FeedbackList { feedback }))
}
