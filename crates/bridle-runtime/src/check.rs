//! The workbench check: a model's answer comes in through the door ([`crate::intake`], gate
//! step 1) and each call it holds runs through the gate as the workbench principal.
//!
//! The answer text is never stored or audited: every call appends the gate's usual `tool_call`
//! event (tool, code, plan hash, timings), which carries no arguments.

use std::sync::Arc;

use bridle_core::answer::{Format, IntakeLimits, Span};
use bridle_core::config::Config;
use bridle_core::guard::GuardError;
use bridle_core::ports::InProcessTools;
use bridle_core::{Code, Principal, RunContext};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter;
use crate::engine::Engine;
use crate::gate::{CallRequest, Gate, Verdict};
use crate::intake::{CallError, Intake, Parse, intake};
use crate::store::Stores;

/// Name of the principal `bridle check` acts as.
pub const WORKBENCH_PRINCIPAL: &str = "workbench";

/// Accepted or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Read (parse) or executed (call).
    Ok,
    /// Refused, with a code.
    Rejected,
}

/// How reading the answer went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParseStatus {
    /// `ok` or `rejected`.
    pub status: Status,
    /// The intake code when rejected.
    pub code: Option<Code>,
    /// Format of the first call when read.
    pub format: Option<Format>,
    /// Why it was rejected (printed, not part of the JSON shape).
    #[serde(skip)]
    pub message: Option<String>,
}

/// One call and its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckedCall {
    /// The answer's own id of the call (OpenAI `id` / `call_id`, Anthropic `id`), when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool named.
    pub tool: String,
    /// Arguments as read.
    pub arguments: Value,
    /// `ok` or `rejected`.
    pub status: Status,
    /// Reject code.
    pub code: Option<Code>,
    /// Reject message.
    pub message: Option<String>,
    /// The tool's result when executed.
    pub result: Option<Value>,
    /// Where the call was read from (printed, not part of the JSON shape).
    #[serde(skip)]
    pub format: Option<Format>,
    /// Byte span in the answer (printed, not part of the JSON shape).
    #[serde(skip)]
    pub span: Option<Span>,
}

/// What `bridle check` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// Reading the answer.
    pub parse: ParseStatus,
    /// Each call read, in order (empty when reading failed).
    pub calls: Vec<CheckedCall>,
}

/// The configuration's workbench principal, if it has one.
pub fn workbench_principal(config: &Config) -> Option<Principal> {
    config.principals.get(WORKBENCH_PRINCIPAL).cloned()
}

/// A gate over `config` and `stores` with the in-process adapters (the application's `tools`,
/// memory) and the guard's scanner on `scan = true` arguments (limits from `[guard]`).
pub fn gate(config: Arc<Config>, stores: Stores, tools: Arc<dyn InProcessTools>) -> Result<Gate, GuardError> {
    Ok(engine(config, stores, tools)?.gate)
}

/// [`gate`] with the services beside it (the approval desk of `bridle approvals`).
pub fn engine(config: Arc<Config>, stores: Stores, tools: Arc<dyn InProcessTools>) -> Result<Engine, GuardError> {
    let (router, _memory) = adapter::in_process(&config, tools);
    Engine::builder(config, stores, router).build()
}

/// The report for an answer known to pass `limits.max_chars` before it was read to its end (a
/// caller that stops reading after `bytes_read` bytes): `answer_too_long`, and no call.
pub fn too_long_report(limits: &IntakeLimits, bytes_read: usize) -> CheckReport {
    let max = limits.max_chars;
    let message = format!(
        "the answer has more than `{max}` characters (reading stopped after {bytes_read} bytes); at most {max} are read"
    );
    let parse =
        ParseStatus { status: Status::Rejected, code: Some(Code::AnswerTooLong), format: None, message: Some(message) };
    CheckReport { parse, calls: Vec::new() }
}

/// Reads `answer` and runs each call through `gate` as `principal` in `run` (the door,
/// [`crate::intake`]), rendered as `bridle check` reports it.
pub async fn check(
    gate: &Gate,
    principal: &Principal,
    run: &RunContext,
    answer: &str,
    limits: &IntakeLimits,
) -> Result<CheckReport, CallError> {
    // Pasted text never reaches the audit log: the event keeps tool, code and plan hash.
    let base = CallRequest { metadata_only: true, ..CallRequest::default() };
    let intook = intake(gate, principal, run, Intake::Answer { text: answer, limits }, &base).await?;
    let format = match intook.parse {
        Parse::Rejected(r) => {
            let parse =
                ParseStatus { status: Status::Rejected, code: Some(r.code), format: None, message: Some(r.message) };
            return Ok(CheckReport { parse, calls: Vec::new() });
        }
        Parse::Read(format) => Some(format),
        Parse::Structured => None,
    };
    let calls = intook
        .calls
        .into_iter()
        .map(|call| {
            let (status, code, message, result) = match call.outcome.verdict {
                Verdict::Ok { result } => (Status::Ok, None, None, Some(result)),
                Verdict::Rejected { rejection } => {
                    (Status::Rejected, Some(rejection.code), Some(rejection.message), None)
                }
                Verdict::DryRun { would_reject } => match would_reject {
                    Some(r) => (Status::Rejected, Some(r.code), Some(r.message), None),
                    None => (Status::Ok, None, None, None),
                },
            };
            CheckedCall {
                tool_call_id: call.outcome.tool_call_id.clone(),
                tool: call.tool,
                arguments: call.arguments,
                status,
                code,
                message,
                result,
                format: call.read.map(|(f, _)| f),
                span: call.read.map(|(_, s)| s),
            }
        })
        .collect();
    Ok(CheckReport { parse: ParseStatus { status: Status::Ok, code: None, format, message: None }, calls })
}
