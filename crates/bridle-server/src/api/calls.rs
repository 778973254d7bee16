//! `POST /v1/calls`: a structured tool call, or a model's raw answer, through the door
//! (`bridle_runtime::intake`, gate step 1) as the caller, rendered in the API's shape. A
//! rejection is a 200 carrying the verdict: a verdict is an answer, not an HTTP error.

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bridle_core::bounds::{self, BoundError};
use bridle_core::{Code, RunContext};
use bridle_runtime::gate::{CallOutcome, CallRequest};
use bridle_runtime::intake::{Intake, Parse, intake};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::Caller;
use crate::AppState;
use crate::error::{ApiError, NoOutcome};
use crate::limits::JsonBody;

/// A tool call: either `tool` (+ `arguments`) or a raw model `answer`, never both.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallBody {
    /// Tool name (a structured call).
    pub tool: Option<String>,
    /// Arguments of a structured call (default `{}`).
    #[schema(value_type = Option<Object>)]
    pub arguments: Option<serde_json::Map<String, Value>>,
    /// A model's raw answer, as text or as the JSON its API returned.
    pub answer: Option<Answer>,
    /// The caller's own id of a structured call (an OpenAI `tool_call_id`, an Anthropic
    /// `tool_use_id`), echoed on its outcome. An answer's calls echo the ids written in it.
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_.:/@-]*$")]
    pub tool_call_id: Option<String>,
    /// Run id; part of the plan an approval binds. The run is bound to the subject of its first
    /// call (another subject naming it gets `run_not_owned`). Absent or empty: the server mints one
    /// (`run_id` in each outcome); send it back to continue the run, e.g. after an approval.
    #[serde(default)]
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_.:/@-]*$")]
    pub run_id: String,
    /// Incident id; part of the plan an approval binds.
    #[serde(default)]
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_.:/@-]*$")]
    pub incident: String,
    /// Client idempotency key (per tenant and subject); with an answer of several calls, call
    /// `n` (from 1) uses `KEY/n`.
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_.:/@-]*$")]
    pub idempotency_key: Option<String>,
    /// Approval to use; without one, an approval granted for the exact plan is looked up.
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_.:/@-]*$")]
    pub approval_id: Option<String>,
    /// Decide only: consume, create, store and execute nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// The registered agent (`[[agents]]` id) the call is made for: it must be registered and
    /// allowed the tool (else `policy_denied`), and its kill switch applies. A token with an
    /// `agent` claim (or a subject bound in `[[agents]] principals`) is that agent's whatever this
    /// says: naming another is `agent_mismatch`. Absent: the credential's agent, or none.
    #[schema(max_length = 64, pattern = r"^[A-Za-z0-9_.:/@-]*$")]
    pub agent: Option<String>,
}

/// A model's raw answer: text (JSON, fenced blocks, ReAct lines, native tool-call shapes), or
/// the JSON a model API returned: a Chat Completions message, a Responses API response or its
/// `output` items, an Anthropic message or its content blocks. Either way it is read by the
/// same parser under `[intake]` (JSON counted as its compact text).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum Answer {
    /// The answer's text.
    Text(String),
    /// One JSON object: a message, a response, a single call.
    Object(serde_json::Map<String, Value>),
    /// A JSON array of objects: output items, content blocks, calls.
    Items(Vec<serde_json::Map<String, Value>>),
}

impl Answer {
    /// The text the parser reads.
    fn text(&self) -> Result<std::borrow::Cow<'_, str>, serde_json::Error> {
        Ok(match self {
            Self::Text(text) => std::borrow::Cow::Borrowed(text),
            Self::Object(map) => std::borrow::Cow::Owned(serde_json::to_string(map)?),
            Self::Items(items) => std::borrow::Cow::Owned(serde_json::to_string(items)?),
        })
    }
}

/// Runs the call(s) through the gate.
#[utoipa::path(
    post, path = "/v1/calls", operation_id = "createCall", tag = "calls",
    request_body = CallBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The gate's verdict. A structured call answers one CallOutcome \
            (`call_id`, `tool`, `status`: `ok` | `rejected` | `dry_run`, `result` or `rejection {code, message}`, \
            `plan_hash`, `level`, `approval_id` and, while it waits for a human, `approval_url`, `job_id`, …); an answer gives `{parse, calls: [CallOutcome]}`. \
            Gate rejections (`approval_required` with its approval id, `policy_denied`, `schema_rejected` …) \
            are 200 responses carrying the verdict, never HTTP errors.", body = crate::openapi::outcomes::CallAnswer),
        (status = 400, description = "malformed body (`bad_request`, `json_too_deep`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 413, description = "body too large (`payload_too_large`)", body = crate::openapi::ErrorBody),
        (status = 429, description = "rate limited (`rate_limited`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn call(
    State(state): State<AppState>,
    Caller(caller): Caller,
    JsonBody(body): JsonBody<CallBody>,
) -> Result<Response, ApiError> {
    check_bounds(&body).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let run_id = if body.run_id.is_empty() { bridle_runtime::gate::mint_run_id() } else { body.run_id.clone() };
    let run = RunContext::new(&run_id, &body.incident);
    let base = CallRequest {
        approval_id: body.approval_id.clone(),
        idempotency_key: body.idempotency_key.clone(),
        dry_run: body.dry_run,
        agent: body.agent.clone(),
        ..CallRequest::default()
    };
    let arguments;
    let text;
    let input = match (&body.tool, &body.answer) {
        (Some(tool), None) => {
            arguments = Value::Object(body.arguments.clone().unwrap_or_default());
            Intake::Call { tool, arguments: &arguments, tool_call_id: body.tool_call_id.as_deref() }
        }
        (None, Some(answer)) => {
            if body.arguments.is_some() || body.tool_call_id.is_some() {
                return Err(ApiError::bad_request(
                    "`arguments` and `tool_call_id` go with `tool`; an answer's calls carry their own ids",
                ));
            }
            text = answer.text()?;
            Intake::Answer { text: &text, limits: &state.gate.config().intake }
        }
        _ => return Err(ApiError::bad_request("give exactly one of `tool` and `answer`")),
    };
    let intook = intake(&state.gate, &caller, &run, input, &base).await?;
    let console = state.mcp.console.trim_end_matches('/');
    let mut outcomes = intook.calls.iter().map(|c| Shown::new(&c.outcome, console));
    let body = match intook.parse {
        Parse::Structured => serde_json::to_vec(&outcomes.next_back().ok_or(NoOutcome)?)?,
        Parse::Read(format) => {
            serde_json::to_vec(&Read { parse: json!({"status": "ok", "format": format}), calls: outcomes.collect() })?
        }
        Parse::Rejected(r) => serde_json::to_vec(&Read {
            parse: json!({"status": "rejected", "code": r.code, "message": r.message}),
            calls: Vec::new(),
        })?,
    };
    Ok(([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response())
}

/// An outcome as the API answers it, written straight into the response body (no `Value` tree
/// in between): the gate's fields and, for one waiting for a human, where it is decided
/// (`approval_url`: the console's `/approvals/{id}`, as MCP answers carry it).
#[derive(Serialize)]
struct Shown<'a> {
    #[serde(flatten)]
    outcome: &'a CallOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    approval_url: Option<String>,
}

impl<'a> Shown<'a> {
    fn new(outcome: &'a CallOutcome, console: &str) -> Self {
        let waiting = matches!(outcome.code(), Some(Code::ApprovalRequired | Code::HumanChoiceRequired));
        let approval_url =
            outcome.approval_id.as_ref().filter(|_| waiting).map(|id| format!("{console}/approvals/{id}"));
        Self { outcome, approval_url }
    }
}

/// The answer to a model's raw answer: how it was read, and each call's outcome.
#[derive(Serialize)]
struct Read<'a> {
    parse: Value,
    calls: Vec<Shown<'a>>,
}

/// The bounds of `bridle_core::bounds` on the body, before anything is stored: ids (run id,
/// incident, idempotency key, approval id) at most 128 characters of letters, digits and
/// `-_.:/@`, an agent id at most 64, no NUL in any argument string or key. The gate checks its
/// `CallRequest` again at entry; here a refusal is a 400 and nothing reaches a store.
fn check_bounds(body: &CallBody) -> Result<(), BoundError> {
    bounds::check_id("run_id", &body.run_id)?;
    bounds::check_id("incident", &body.incident)?;
    for (field, value) in [
        ("idempotency_key", &body.idempotency_key),
        ("approval_id", &body.approval_id),
        ("tool_call_id", &body.tool_call_id),
    ] {
        if let Some(v) = value {
            bounds::check_id(field, v)?;
        }
    }
    if let Some(agent) = &body.agent {
        bounds::check_agent("agent", agent)?;
    }
    if let Some(arguments) = &body.arguments {
        bounds::check_object("arguments", arguments)?;
    }
    Ok(())
}
