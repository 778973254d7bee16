//! The one error shape of the HTTP API, `{"error": {"code", "message"}}`, and the status each
//! stable code answers with. Errors become responses only here, at the edge.
//!
//! A gate verdict is not an error: a rejected call is a 200 carrying the verdict. This type is
//! for what stops a request before or around the gate (authentication, scopes, limits, unknown
//! ids, malformed input) and for a store that could not answer.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bridle_core::{Code, Rejection};
use serde_json::json;

/// An HTTP error with a stable code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable code.
    pub code: Code,
    /// Human-readable message (never a secret, never pasted text).
    pub message: String,
}

impl ApiError {
    /// An error with an explicit status.
    pub fn new(status: StatusCode, code: Code, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into() }
    }

    /// 401 `unauthenticated`.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, Code::Unauthenticated, message)
    }

    /// 403 `forbidden`: the token lacks the scope a route needs.
    pub fn forbidden(scope: &str) -> Self {
        Self::new(StatusCode::FORBIDDEN, Code::Forbidden, format!("this route needs the `{scope}` scope"))
    }

    /// 404 `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, Code::NotFound, message)
    }

    /// 400 `bad_request`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Code::BadRequest, message)
    }

    /// 500 `internal_error`: something could not be evaluated. The cause is logged, not sent.
    pub fn internal(cause: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "request could not be evaluated");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, Code::InternalError, "the request could not be evaluated")
    }

    /// A refusal of the approvals desk: `approver_denied` is 403, `not_found` (no such id in the
    /// caller's tenant) 404, `bad_request` (an id or reason out of bounds) 400, other refusals (expired, no longer pending) are 409; the rejection's
    /// own code is kept.
    pub fn refused(rejection: &Rejection) -> Self {
        let status = match rejection.code {
            Code::ApproverDenied => StatusCode::FORBIDDEN,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::BadRequest => StatusCode::BAD_REQUEST,
            _ => StatusCode::CONFLICT,
        };
        Self::new(status, rejection.code, rejection.message.clone())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code.as_str(), "message": self.message}});
        (self.status, Json(body)).into_response()
    }
}

/// Unknown routes answer in the same shape.
pub async fn fallback() -> ApiError {
    ApiError::not_found("no such route")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_their_code() {
        let denied = ApiError::refused(&Rejection::new(Code::ApproverDenied, "requester"));
        assert_eq!((denied.status, denied.code), (StatusCode::FORBIDDEN, Code::ApproverDenied));
        let expired = ApiError::refused(&Rejection::new(Code::ApprovalExpired, "late"));
        assert_eq!(expired.status, StatusCode::CONFLICT);
    }
}
