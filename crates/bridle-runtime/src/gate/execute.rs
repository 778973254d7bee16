//! Gate step 10: run the call through the adapter with the tool's executor identity and timeout,
//! then hand a result to step 11 (`output.rs`) before it goes anywhere.
//!
//! Reads go straight to the adapter. Changes become jobs: reserved and dispatched in one
//! transaction (consuming the approval and appending `job_dispatched` in it), then succeeded,
//! failed or unknown, stored with the call's `tool_call` event (`Gate::call`). A change whose
//! outcome is unknown is never retried automatically.
//!
//! Run taint for a tool marked `untrusted_output`: a read taints its run after the adapter
//! answered; a job taints it before it is reserved, because once a side effect may have happened
//! a failing store must not leave a settled job whose result escaped untainted. (A reservation
//! refused after that leaves the run tainted: the safe side.)

use std::time::Instant;

use bridle_core::audit::{AuditRecord, Decision, EventKind, Timings};
use bridle_core::contract::{Mode, ToolContract};
use bridle_core::job::{Job, JobStatus};
use bridle_core::ports::{AdapterCall, AdapterError, Consume, Reserved};
use bridle_core::{Code, Principal, Rejection, RunContext};
use serde_json::{Value, json};

use super::binding::stored_answer;
use super::identity::Who;
use super::output;
use super::trace::Trace;
use super::{Gate, Proposal, Stop, Verdict, elapsed_us};

/// Executes a read.
pub(super) async fn read(
    gate: &Gate,
    principal: &Principal,
    run: &RunContext,
    who: &Who,
    tool: &ToolContract,
    args: &Value,
    t: &mut Trace,
) -> Result<(Verdict, Decision), Stop> {
    t.executor = Some(tool.executor.clone());
    let call = AdapterCall {
        tool: tool.name.clone(),
        tenant: principal.tenant.clone(),
        subject: principal.subject.clone(),
        run_id: run.run_id.clone(),
        incident: run.incident.clone(),
        arguments: args.clone(),
        identity: tool.executor.clone(),
        job_id: None,
    };
    let started = Instant::now();
    let answer = tokio::time::timeout(tool.timeout, gate.adapter.read(&call)).await;
    t.adapter_us += elapsed_us(started);
    match answer {
        Ok(Ok(result)) => {
            output::taint(gate, tool, principal, run, who, t).await?;
            let verdict = guarded(gate, tool, principal, run, result, t);
            output::taint_hit(gate, tool, principal, run, who, t).await?;
            Ok((verdict, Decision::Executed))
        }
        Ok(Err(e)) => Err(adapter_rejection(&e).into()),
        Err(_) => Err(timeout(tool).into()),
    }
}

/// Reserves, dispatches and settles a change (or a read that needed approval).
pub(super) async fn change(
    gate: &Gate,
    p: &Proposal<'_>,
    run: &RunContext,
    who: &Who,
    consume: Option<Consume>,
    t: &mut Trace,
) -> Result<(Verdict, Decision), Stop> {
    let Proposal { principal, req, tool, plan, plan_hash, .. } = p;
    let now = t.now;
    // Reserved and dispatched in one transaction: the job is inserted `dispatched`, with the
    // approval's consumption and the `job_dispatched` event, so nothing that is stored before
    // the side effect lacks its event and no reconciliation can settle it in between.
    // The job carries its call's id: the call's `tool_call` event, the job's `job_dispatched`
    // and any later `job_settled` share it, so the audit log links them without a reason text.
    let job = Job {
        id: t.call_id.clone(),
        tenant: principal.tenant.clone(),
        subject: principal.subject.clone(),
        idempotency_key: req.idempotency_key.clone(),
        plan: plan.clone(),
        plan_hash: plan_hash.clone(),
        executor: tool.executor.clone(),
        approval_id: consume.as_ref().map(|c| c.approval_id.clone()),
        status: JobStatus::Dispatched,
        outcome: None,
        created_at: now,
        updated_at: now,
    };
    output::taint(gate, tool, principal, run, who, t).await?;
    let jobs = &gate.stores.jobs;
    // Write-ahead: the dispatch is in the tenant's chain before the side effect, so a process
    // killed after the adapter acted still leaves the change audited.
    // INVARIANT: reservation, consumption and `job_dispatched` commit together or not at all.
    let event = gate.stores.evidence(vec![dispatched(gate, principal, run, &job, t)]);
    match jobs.reserve(&job, consume.as_ref(), event).await? {
        Reserved::Reserved => {}
        Reserved::ApprovalRefused(r) => {
            // A keyed call that lost the approval to its own earlier attempt gets that answer.
            if let Some(key) = &req.idempotency_key
                && let Some(existing) = jobs.find_by_key(&principal.tenant, &principal.subject, key).await?
            {
                return stored_answer(existing, plan_hash, t);
            }
            return Err(r.into());
        }
        // Another call with the same key won the race between step 8 and here.
        Reserved::KeyTaken(existing) => return stored_answer(*existing, plan_hash, t),
    }
    t.job_id = Some(job.id.clone());
    t.executor = Some(tool.executor.clone());
    // The adapter is told the approved plan's tenant, requester, run and incident.
    let call = AdapterCall {
        tool: tool.name.clone(),
        tenant: job.plan.tenant.clone(),
        subject: job.plan.subject.clone(),
        run_id: job.plan.run_id.clone(),
        incident: job.plan.incident.clone(),
        arguments: job.plan.arguments.clone(),
        identity: tool.executor.clone(),
        job_id: Some(job.id.clone()),
    };
    let started = Instant::now();
    // A read escalated to approval runs as a job too, but still through the read entry point.
    let answer = match tool.mode {
        Mode::Change => tokio::time::timeout(tool.timeout, gate.adapter.change(&call)).await,
        Mode::Read => tokio::time::timeout(tool.timeout, gate.adapter.read(&call)).await,
    };
    t.adapter_us += elapsed_us(started);
    let (status, verdict, decision) = match answer {
        Ok(Ok(result)) => (JobStatus::Succeeded, guarded(gate, tool, principal, run, result, t), Decision::Executed),
        Ok(Err(e)) => {
            let status = if matches!(e, AdapterError::Lost(_) | AdapterError::Timeout) {
                JobStatus::Unknown
            } else {
                JobStatus::Failed
            };
            (status, Verdict::Rejected { rejection: adapter_rejection(&e) }, Decision::Rejected)
        }
        Err(_) => (JobStatus::Unknown, Verdict::Rejected { rejection: timeout(tool) }, Decision::Rejected),
    };
    // Settled by `Gate::call` together with the call's own `tool_call` event (one transaction),
    // with the call's outcome as the answer a keyed retry gets.
    t.settle = Some(Settle { job_id: job.id.clone(), to: status });
    Ok((verdict, decision))
}

/// The move that settles a dispatched job, stored with the call's `tool_call` event.
pub(crate) struct Settle {
    /// The job.
    pub job_id: String,
    /// Its final (or `unknown`) status.
    pub to: JobStatus,
}

/// The `job_dispatched` event of `job` (its call id is the job's, which is the dispatching call's).
fn dispatched(gate: &Gate, principal: &Principal, run: &RunContext, job: &Job, t: &Trace) -> AuditRecord {
    AuditRecord {
        kind: EventKind::JobDispatched,
        call_id: job.id.clone(),
        at: gate.clock.now(),
        tenant: principal.tenant.clone(),
        subject: principal.subject.clone(),
        run_id: run.run_id.clone(),
        incident: run.incident.clone(),
        tool: job.plan.tool.clone(),
        policy_version: gate.config.policy.version().to_owned(),
        plan_hash: Some(job.plan_hash.0.clone()),
        executor_identity: Some(job.executor.clone()),
        approval_id: job.approval_id.clone(),
        approver: t.approver.clone(),
        decision: None,
        code: None,
        reason: Some("dispatched by the call of the same id".to_owned()),
        timings: Timings::default(),
        auth: None,
        versions: t.versions.clone(),
    }
}

/// Step 11: the masked (and for untrusted output, spotlighted) result, or its withholding.
fn guarded(
    gate: &Gate,
    tool: &ToolContract,
    principal: &Principal,
    run: &RunContext,
    result: Value,
    t: &mut Trace,
) -> Verdict {
    match output::finish(gate, tool, principal, run, result, t) {
        Ok(result) => Verdict::Ok { result },
        Err(rejection) => Verdict::Rejected { rejection },
    }
}

fn timeout(tool: &ToolContract) -> Rejection {
    Rejection::new(
        Code::AdapterTimeout,
        format!("`{}` did not answer within {} ms", tool.name, tool.timeout.as_millis()),
    )
}

fn adapter_rejection(e: &AdapterError) -> Rejection {
    match e {
        AdapterError::VersionChanged { expected, actual } => {
            Rejection::new(Code::ResourceVersionChanged, format!("the target changed since the plan was made: {e}"))
                .with_detail(json!({"expected": expected, "actual": actual}))
        }
        AdapterError::Timeout => Rejection::new(Code::AdapterTimeout, e.to_string()),
        AdapterError::Lost(_) => Rejection::new(
            Code::OutcomeUnknown,
            format!("{e}; the change may have happened: reconcile the job before anything else"),
        ),
        AdapterError::Failed(_) | AdapterError::IdentityRejected(_) => {
            Rejection::new(Code::AdapterFailed, e.to_string())
        }
        // A built-in tool's own error is the call's rejection, with the tool's code.
        AdapterError::Tool(rejection) => rejection.clone(),
    }
}
