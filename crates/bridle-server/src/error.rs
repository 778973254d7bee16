//! The one error shape of the HTTP API, `{"error": {"code", "message"}}`, and the status each
//! stable code answers with. Errors become responses only here, at the edge; [`one_shape`] puts
//! every other refusal (axum's extractors and router, rmcp's transport checks) into the same shape.
//!
//! A gate verdict is not an error: a rejected call is a 200 carrying the verdict. This type is
//! for what stops a request before or around the gate (authentication, scopes, limits, unknown
//! ids, malformed input) and for a store that could not answer.

use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bridle_apps::lab::LabError;
use bridle_core::ports::StoreError;
use bridle_core::{Code, Rejection};
use bridle_runtime::GateError;
use bridle_runtime::approvals::ApprovalError;
use bridle_runtime::audit::VerifyError;
use bridle_runtime::feedback::CollectError;

use crate::runs::RunError;
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

    /// 422 with the rejection's own code: input past a lab's limits.
    pub fn unprocessable(rejection: Rejection) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, rejection.code, rejection.message)
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

/// The gate answered a call with no outcome (never expected: a call always has one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the gate answered no outcome")]
pub struct NoOutcome;

// The table: each error a handler meets, and the answer it becomes. Handlers use `?`; what
// cannot be evaluated (a store, a task, serialization) is a 500 whose cause is logged, not sent.

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        Self::internal(&e)
    }
}

impl From<GateError> for ApiError {
    fn from(e: GateError) -> Self {
        Self::internal(&e)
    }
}

impl From<VerifyError> for ApiError {
    fn from(e: VerifyError) -> Self {
        Self::internal(&e)
    }
}

impl From<serde_json::Error> for ApiError {
    fn from(e: serde_json::Error) -> Self {
        Self::internal(&e)
    }
}

impl From<tokio::task::JoinError> for ApiError {
    fn from(e: tokio::task::JoinError) -> Self {
        Self::internal(&e)
    }
}

impl From<bridle_runtime::intake::CallError> for ApiError {
    fn from(e: bridle_runtime::intake::CallError) -> Self {
        Self::internal(&e)
    }
}

impl From<NoOutcome> for ApiError {
    fn from(e: NoOutcome) -> Self {
        Self::internal(&e)
    }
}

/// The approvals desk: a refusal keeps its code ([`ApiError::refused`]).
impl From<ApprovalError> for ApiError {
    fn from(e: ApprovalError) -> Self {
        match e {
            ApprovalError::Refused(r) => Self::refused(&r),
            ApprovalError::Gate(e) => Self::internal(&e),
        }
    }
}

/// The labs: a limit passed is 422 with its code.
impl From<LabError> for ApiError {
    fn from(e: LabError) -> Self {
        match e {
            LabError::Invalid(r) => Self::unprocessable(r),
            LabError::Gate(e) => Self::internal(&e),
        }
    }
}

/// Feedback: out of bounds is 400, an unknown decision 404.
impl From<CollectError> for ApiError {
    fn from(e: CollectError) -> Self {
        match e {
            CollectError::Invalid(e) => Self::bad_request(e.to_string()),
            e @ CollectError::UnknownDecision(_) => Self::not_found(e.to_string()),
            CollectError::Store(e) => Self::internal(&e),
        }
    }
}

/// Runs: unknown is 404, a refusal 400 (`bad_request`) or 409 with its code.
impl From<RunError> for ApiError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::NotFound(message) => Self::not_found(message),
            RunError::Refused(r) if r.code == Code::BadRequest => Self::bad_request(r.message),
            RunError::Refused(r) => Self::new(StatusCode::CONFLICT, r.code, r.message),
            RunError::Internal(cause) => Self::internal(&cause),
        }
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

/// The stable code of an error status when no handler chose one: what axum's router and
/// extractors, rmcp's transport checks and `limits.rs`'s request-head limits answer with. Every
/// code here is in the README's code table.
pub fn code_for(status: StatusCode) -> Code {
    match status {
        StatusCode::UNAUTHORIZED => Code::Unauthenticated,
        StatusCode::FORBIDDEN => Code::Forbidden,
        StatusCode::NOT_FOUND => Code::NotFound,
        StatusCode::METHOD_NOT_ALLOWED => Code::MethodNotAllowed,
        StatusCode::NOT_ACCEPTABLE => Code::NotAcceptable,
        StatusCode::REQUEST_TIMEOUT => Code::RequestTimeout,
        StatusCode::LENGTH_REQUIRED => Code::LengthRequired,
        StatusCode::PAYLOAD_TOO_LARGE => Code::PayloadTooLarge,
        StatusCode::URI_TOO_LONG => Code::UriTooLong,
        StatusCode::UNSUPPORTED_MEDIA_TYPE => Code::UnsupportedMediaType,
        StatusCode::TOO_MANY_REQUESTS => Code::RateLimited,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => Code::HeadersTooLarge,
        s if s.is_server_error() => Code::InternalError,
        _ => Code::BadRequest,
    }
}

/// Longest text of a foreign refusal kept as the message, characters.
const MAX_MESSAGE_CHARS: usize = 300;

/// Most bytes of a foreign refusal's body read to make its message (its texts are one line).
const MAX_FOREIGN_BODY: usize = 16 * 1024;

/// Whether `headers` declare a JSON body (`application/json`, with or without parameters).
pub(crate) fn is_json_response(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"))
}

/// Middleware: any answer outside 1xx–3xx that is not JSON (a text/plain rejection of axum's
/// `Path` or `Query` extractors, its router's 405, rmcp's Host check, 406 or 415 on `/mcp`) is
/// rewritten into `{"error": {"code", "message"}}` with [`code_for`] its status; its other headers
/// (`Allow`, `Retry-After` …) are kept. JSON answers pass untouched: the API's own errors, and the
/// JSON-RPC error replies of `/mcp`, which keep the JSON-RPC shape.
// INVARIANT: no answer of `bridle serve` with an error status leaves the router without a JSON body.
pub async fn one_shape(State(max_body): State<usize>, req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json_response(response.headers()) {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, MAX_FOREIGN_BODY).await.ok();
    let message = match status {
        StatusCode::PAYLOAD_TOO_LARGE => format!("the body exceeds {max_body} bytes"),
        StatusCode::METHOD_NOT_ALLOWED => "method not allowed on this route".to_owned(),
        // A server error's own text may name internals: it is logged, never sent.
        s if s.is_server_error() => {
            let cause = text.as_deref().map(String::from_utf8_lossy).unwrap_or_default();
            tracing::error!(status = s.as_u16(), error = %cause, "request could not be evaluated");
            "the request could not be evaluated".to_owned()
        }
        s => text.as_deref().and_then(one_line).unwrap_or_else(|| default_message(s)),
    };
    let mut answer = ApiError::new(status, code_for(status), message).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().append(name.clone(), value.clone());
        }
    }
    answer
}

/// A foreign body as a one-line message of at most [`MAX_MESSAGE_CHARS`] characters (`None`
/// when it holds no text).
fn one_line(body: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(body);
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_MESSAGE_CHARS)
        .collect::<String>()
        .trim()
        .to_owned();
    (!line.is_empty()).then_some(line)
}

fn default_message(status: StatusCode) -> String {
    status.canonical_reason().map_or_else(|| format!("refused with status {}", status.as_u16()), str::to_lowercase)
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

    #[test]
    fn the_from_table_keeps_codes_and_hides_causes() {
        let store = ApiError::from(StoreError::Unavailable("postgres://secret@db".to_owned()));
        assert_eq!((store.status, store.code), (StatusCode::INTERNAL_SERVER_ERROR, Code::InternalError));
        assert!(!store.message.contains("secret"), "{}", store.message);
        let lab = ApiError::from(LabError::Invalid(Rejection::new(Code::TooManyRounds, "at most 10 rounds")));
        assert_eq!((lab.status, lab.code), (StatusCode::UNPROCESSABLE_ENTITY, Code::TooManyRounds));
        let unknown = ApiError::from(CollectError::UnknownDecision("d-1".to_owned()));
        assert_eq!((unknown.status, unknown.message.as_str()), (StatusCode::NOT_FOUND, "no decision `d-1`"));
        let bad = ApiError::from(RunError::Refused(Rejection::new(Code::BadRequest, "no pipeline `x`")));
        assert_eq!((bad.status, bad.code), (StatusCode::BAD_REQUEST, Code::BadRequest));
        let stale = ApiError::from(RunError::Refused(Rejection::new(Code::StaleCheckpoint, "moved on")));
        assert_eq!((stale.status, stale.code), (StatusCode::CONFLICT, Code::StaleCheckpoint));
        let denied = ApiError::from(ApprovalError::Refused(Rejection::new(Code::ApproverDenied, "requester")));
        assert_eq!((denied.status, denied.code), (StatusCode::FORBIDDEN, Code::ApproverDenied));
    }

    #[test]
    fn every_error_status_has_a_server_code() {
        for n in 400..600u16 {
            let Ok(status) = StatusCode::from_u16(n) else { continue };
            let code = code_for(status);
            assert_eq!(code == Code::InternalError, n >= 500, "{n} → {code}");
        }
        assert_eq!(code_for(StatusCode::URI_TOO_LONG), Code::UriTooLong);
        assert_eq!(code_for(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE), Code::HeadersTooLarge);
        assert_eq!(code_for(StatusCode::IM_A_TEAPOT), Code::BadRequest);
    }

    #[test]
    fn foreign_texts_become_one_bounded_line() {
        assert_eq!(one_line(b"Invalid URL: bad\r\nsecond").as_deref(), Some("Invalid URL: bad  second"));
        assert_eq!(one_line(b"  \n"), None);
        assert_eq!(one_line("é".repeat(1_000).as_bytes()).map(|l| l.chars().count()), Some(MAX_MESSAGE_CHARS));
    }
}
