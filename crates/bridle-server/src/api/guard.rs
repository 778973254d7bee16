//! `POST /v1/guard/scan`: the guard's detector on one text, held to its channel's length limit.
//! A block is a verdict (200), not an HTTP error; the text is neither stored nor logged.

use axum::Json;
use axum::extract::State;
use bridle_core::Code;
use bridle_core::guard::sanitize::Channel;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::Caller;
use crate::AppState;
use crate::error::ApiError;
use crate::limits::JsonBody;

/// A text to scan.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanBody {
    /// The text.
    pub text: String,
    /// Channel of the text (default `document`); each has its own length limit.
    pub channel: Option<ScanChannel>,
}

/// The channel a scanned text arrives on.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScanChannel {
    /// A chat message.
    Chat,
    /// A workflow argument (`scan = true`).
    Workflow,
    /// A document.
    Document,
}

/// Scans a text for injection and obfuscation.
#[utoipa::path(
    post, path = "/v1/guard/scan", operation_id = "scanText", tag = "guard",
    request_body = ScanBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{verdict: allow | block, code, score, categories, spans}`: `code` is \
            `injection_detected` or `input_too_long` on a block, else null; spans are byte offsets. \
            A block is a verdict, not an HTTP error.", body = crate::openapi::ScanAnswer),
        (status = 400, description = "malformed body or unknown channel (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 413, description = "body too large (`payload_too_large`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn scan(
    State(state): State<AppState>,
    _caller: Caller,
    JsonBody(body): JsonBody<ScanBody>,
) -> Result<Json<Value>, ApiError> {
    let channel = match body.channel {
        None | Some(ScanChannel::Document) => Channel::Document,
        Some(ScanChannel::Chat) => Channel::Chat,
        Some(ScanChannel::Workflow) => Channel::Workflow,
    };
    let guard = state.guard;
    let scanned = tokio::task::spawn_blocking(move || guard.detection(channel, &body.text)).await?;
    let d = match scanned {
        Ok(d) => d,
        Err(r) => {
            return Ok(Json(json!({
                "verdict": "block", "code": r.code, "message": r.message,
                "score": 1.0, "categories": [], "spans": [],
            })));
        }
    };
    let code = d.blocked().then_some(Code::InjectionDetected);
    Ok(Json(json!({
        "verdict": d.verdict, "code": code, "score": d.score, "categories": d.categories, "spans": d.spans,
    })))
}
