//! The door (gate step 1): a structured call, or a model's raw answer read by the intake parser,
//! becomes calls, and each runs through the gate on a task of its own. HTTP (`/v1/calls`,
//! `/v1/check`), MCP, `bridle check`, chat, workflows and pipelines all come in here; each edge
//! only renders [`Intook`] (or the outcomes) in its own shape.
//!
//! On a task of its own ([`on_own_task`]): a caller that hangs up, a request timeout or a turn
//! deadline never cuts a gate call half-way; the call finishes and is audited, and a retry with
//! the same idempotency key gets its result.

use std::future::Future;

use bridle_core::answer::{Format, IntakeLimits, ParsedCall, Span, parse_answer};
use bridle_core::{Principal, Rejection, RunContext};
use serde_json::Value;
use tracing::Instrument;

use crate::gate::{CallOutcome, CallRequest, Gate, GateError};

/// What a caller hands the door.
#[derive(Debug, Clone, Copy)]
pub enum Intake<'a> {
    /// One structured call.
    Call {
        /// Tool name.
        tool: &'a str,
        /// Arguments.
        arguments: &'a Value,
        /// The caller's own id of the call, echoed on its outcome.
        tool_call_id: Option<&'a str>,
    },
    /// A model's raw answer (JSON, fenced blocks, ReAct lines, native tool-call shapes), read
    /// under `limits`.
    Answer {
        /// The answer text.
        text: &'a str,
        /// How much of it is read.
        limits: &'a IntakeLimits,
    },
}

/// How the input was read.
#[derive(Debug, Clone, PartialEq)]
pub enum Parse {
    /// A structured call: nothing to read.
    Structured,
    /// An answer read; the format of its first call.
    Read(Format),
    /// An answer refused by the parser (no call ran).
    Rejected(Rejection),
}

/// One call that came in, and the gate's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    /// Tool named.
    pub tool: String,
    /// Arguments as read.
    pub arguments: Value,
    /// Where an answer's call was read from (`None` for a structured call).
    pub read: Option<(Format, Span)>,
    /// The gate's answer.
    pub outcome: CallOutcome,
}

/// The door's one response shape: how the input was read, and each call's outcome in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Intook {
    /// Reading.
    pub parse: Parse,
    /// Each call, in order (empty when reading failed).
    pub calls: Vec<Admitted>,
}

/// A gate call that could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The gate could not decide (a store failed). Never an allow.
    #[error(transparent)]
    Gate(#[from] GateError),
    /// The call's task ended without an answer (it panicked or was cancelled).
    #[error("{0}")]
    Task(String),
}

/// Runs `input` through `gate` as `principal` in `run`. Every call takes `base`'s approval id,
/// dry-run flag, agent and audit mode; an answer of several calls numbers `base`'s idempotency
/// key per call (`KEY/1`, `KEY/2` …). The calls run in order, on one task of their own.
pub async fn intake(
    gate: &Gate,
    principal: &Principal,
    run: &RunContext,
    input: Intake<'_>,
    base: &CallRequest,
) -> Result<Intook, CallError> {
    let (parse, read): (Parse, Vec<ParsedCall>) = match input {
        Intake::Call { tool, arguments, tool_call_id } => {
            let request = CallRequest { tool: tool.to_owned(), arguments: arguments.clone(), ..base.clone() };
            let mut outcome = single(on_own_task(gate, principal.clone(), run.clone(), vec![request]).await?)?;
            outcome.tool_call_id = tool_call_id.map(str::to_owned);
            let admitted = Admitted { tool: tool.to_owned(), arguments: arguments.clone(), read: None, outcome };
            return Ok(Intook { parse: Parse::Structured, calls: vec![admitted] });
        }
        Intake::Answer { text, limits } => match parse_answer(text, limits) {
            Ok(parsed) => (Parse::Read(parsed.format), parsed.calls),
            Err(r) => return Ok(Intook { parse: Parse::Rejected(r), calls: Vec::new() }),
        },
    };
    let several = read.len() > 1;
    let requests = read
        .iter()
        .enumerate()
        .map(|(n, call)| CallRequest {
            tool: call.tool.clone(),
            arguments: call.arguments.clone(),
            idempotency_key: match &base.idempotency_key {
                Some(key) if several => Some(format!("{key}/{}", n + 1)),
                other => other.clone(),
            },
            ..base.clone()
        })
        .collect();
    let outcomes = on_own_task(gate, principal.clone(), run.clone(), requests).await?;
    let calls = read
        .into_iter()
        .zip(outcomes)
        .map(|(call, mut outcome)| {
            outcome.tool_call_id = call.call_id;
            Admitted { tool: call.tool, arguments: call.arguments, read: Some((call.format, call.span)), outcome }
        })
        .collect();
    Ok(Intook { parse, calls })
}

fn single(mut outcomes: Vec<CallOutcome>) -> Result<CallOutcome, CallError> {
    outcomes.pop().ok_or_else(|| CallError::Task("the gate answered no outcome".to_owned()))
}

/// One call through `gate` on a task of its own (see [`on_own_task`]).
pub fn spawn_call(
    gate: &Gate,
    principal: Principal,
    run: RunContext,
    request: CallRequest,
) -> impl Future<Output = Result<CallOutcome, CallError>> + Send + 'static {
    let task = on_own_task(gate, principal, run, vec![request]);
    async move { single(task.await?) }
}

/// Runs `requests` in order through `gate` on a task spawned now, before the returned future is
/// first polled: dropping the future (a timeout, a client gone) leaves the calls to finish and
/// be audited. The gate's `gate_call` spans nest in the caller's span.
pub fn on_own_task(
    gate: &Gate,
    principal: Principal,
    run: RunContext,
    requests: Vec<CallRequest>,
) -> impl Future<Output = Result<Vec<CallOutcome>, CallError>> + Send + 'static {
    let gate = gate.clone();
    let task = tokio::spawn(
        async move {
            let mut outcomes = Vec::with_capacity(requests.len());
            for request in &requests {
                outcomes.push(gate.call(&principal, &run, request).await?);
            }
            Ok::<_, GateError>(outcomes)
        }
        .in_current_span(),
    );
    async move { Ok(task.await.map_err(|e| CallError::Task(e.to_string()))??) }
}
