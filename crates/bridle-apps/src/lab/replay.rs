//! The workbench labs' engine: the agent-loop lab replays a pasted transcript from the start,
//! running every call through the gate as the workbench principal (like `bridle check`, audited
//! as metadata only), under the stop rules of [`super::loop_lab`]. The planning and
//! prompt-injection labs are pure (`super::plan`, `super::judge`, `super::prompt`).
//!
//! Nothing of the pasted text is stored: the gate's `tool_call` events keep tool, code and plan
//! hash.

use bridle_core::answer::IntakeLimits;
use bridle_core::{Principal, Rejection, RunContext};
use bridle_runtime::gate::{CallRequest, Gate, Verdict};
use bridle_runtime::intake::{CallError, spawn_call};

use super::loop_lab::{LoopCall, LoopInput, LoopReport, Replay};

/// A lab that could not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The input is outside the lab's limits (`too_many_rounds`, `field_too_long`, …).
    #[error("{0}")]
    Invalid(Rejection),
    /// The gate could not evaluate a call (a store failed, or its task ended); nothing was
    /// allowed.
    #[error(transparent)]
    Gate(#[from] CallError),
}

/// Replays `input` through `gate` as `principal` in `run` and reports rounds, calls, the stop
/// and the final answer against the goal's references.
pub async fn replay_loop(
    gate: &Gate,
    principal: &Principal,
    run: &RunContext,
    input: LoopInput,
    limits: &IntakeLimits,
) -> Result<LoopReport, LabError> {
    let mut replay = Replay::new(input, *limits).map_err(LabError::Invalid)?;
    while let Some(calls) = replay.next_calls() {
        let mut done = Vec::with_capacity(calls.len());
        for call in calls {
            // Pasted text never reaches the audit log: the event keeps tool, code and plan hash.
            let request = CallRequest { metadata_only: true, ..CallRequest::new(&call.tool, call.arguments.clone()) };
            let outcome = spawn_call(gate, principal.clone(), run.clone(), request).await?;
            let (ok, code, result) = match outcome.verdict {
                Verdict::Ok { result } => (true, None, Some(result)),
                Verdict::Rejected { rejection } => (false, Some(rejection.code), None),
                Verdict::DryRun { would_reject } => (would_reject.is_none(), would_reject.map(|r| r.code), None),
            };
            done.push(LoopCall { tool: call.tool, arguments: call.arguments, ok, code, result });
        }
        replay.record(done);
    }
    Ok(replay.finish())
}
