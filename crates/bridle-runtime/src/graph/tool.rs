//! Tool calls from inside a node: through the gate, with an idempotency key stable across
//! pauses and crashes, and the harness's hook events (`tool_call_decided`, then
//! `approval_requested`, `injection_detected` or `budget_exhausted` when the verdict says so);
//! and the taint of a run that took in content the gate did not see (a retrieved document).

use bridle_core::{Code, Principal, RunContext};
use serde_json::json;

use super::node::{NodeContext, NodeError};
use crate::gate::{CallOutcome, CallRequest, Gate};

/// Names of the harness's hook events fired here.
pub mod names {
    /// Every gate verdict.
    pub const TOOL_CALL_DECIDED: &str = "tool_call_decided";
    /// A call is waiting for a human's approval.
    pub const APPROVAL_REQUESTED: &str = "approval_requested";
    /// The guard refused an argument.
    pub const INJECTION_DETECTED: &str = "injection_detected";
    /// A budget ran out.
    pub const BUDGET_EXHAUSTED: &str = "budget_exhausted";
}

/// Calls a tool through the gate on behalf of the node. Without a key of its own, the call
/// gets the task's next call key. A verdict (executed or refused) is `Ok`; only a gate that
/// could not decide (a store failure) is an error, and a retryable one.
pub async fn call_tool(
    gate: &Gate,
    ctx: &NodeContext,
    principal: &Principal,
    run: &RunContext,
    mut request: CallRequest,
) -> Result<CallOutcome, NodeError> {
    if request.idempotency_key.is_none() && !request.dry_run {
        request.idempotency_key = Some(ctx.next_call_key());
    }
    // On a task of its own (the door's): a run cancelled or past its deadline never cuts the
    // call half-way; its key gives a resumed run the same answer.
    let outcome = crate::intake::spawn_call(gate, principal.clone(), run.clone(), request)
        .await
        .map_err(|e| NodeError::transient(Code::StateUnavailable, format!("the gate could not decide: {e}")))?;
    let code = outcome.code();
    let summary = json!({
        "tool": &outcome.tool,
        "call_id": &outcome.call_id,
        "code": code,
        "level": outcome.level,
        "approval_id": &outcome.approval_id,
        "replay": outcome.idempotent_replay,
    });
    ctx.emit(names::TOOL_CALL_DECIDED, summary.clone());
    let follow_up = match code {
        Some(Code::ApprovalRequired) => Some(names::APPROVAL_REQUESTED),
        Some(Code::InjectionDetected) => Some(names::INJECTION_DETECTED),
        Some(Code::BudgetExhausted) => Some(names::BUDGET_EXHAUSTED),
        _ => None,
    };
    if let Some(name) = follow_up {
        ctx.emit(name, summary);
    }
    Ok(outcome)
}

/// Records that the run took in untrusted content outside the gate (a retrieved document, a
/// pasted ticket): from now on every `change` in the run, and every change of the same agent (or
/// subject) within `[taint] window`, needs at least `approval`, in every process sharing the store. `what` names the source in the audit reason; never the content.
pub async fn took_in_untrusted(
    gate: &Gate,
    ctx: &NodeContext,
    principal: &Principal,
    run: &RunContext,
    what: &str,
) -> Result<(), NodeError> {
    let reason = format!("{what} read by node `{}` (task {})", ctx.node(), ctx.idempotency_key());
    let actor = gate.taint_actor(principal);
    let mark = bridle_core::ports::TaintMark {
        tenant: &principal.tenant,
        run_id: &run.run_id,
        actor: actor.as_deref(),
        reason: &reason,
        at: gate.now(),
    };
    gate.stores()
        .run_flags
        .taint(&mark)
        .await
        .map_err(|e| NodeError::transient(Code::StateUnavailable, format!("cannot record the run's taint: {e}")))
}
