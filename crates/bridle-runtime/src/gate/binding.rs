//! Gate steps 8 and 9: idempotency keys, then the approval bound to this exact plan.
//!
//! Step 9 only decides here; consumption happens in step 10, in the same transaction that
//! reserves the job, so a lost race is caught atomically.

use bridle_core::agents::AgentSource;
use bridle_core::approval::{self, ApprovalRequest, ApprovalStatus};
use bridle_core::audit::{AuditRecord, Decision, EventKind, Timings};
use bridle_core::bounds;
use bridle_core::contract::ToolContract;
use bridle_core::job::{Job, JobStatus};
use bridle_core::level::CallSignals;
use bridle_core::level::{self, LevelDecision, Reason};
use bridle_core::plan::PlanHash;
use bridle_core::ports::{Consume, Created};
use bridle_core::{Code, Principal, Rejection};
use serde_json::{Value, json};

use super::identity::Who;
use super::trace::Trace;
use super::{CallOutcome, Gate, Proposal, Stop, Verdict};

/// Step 8: a key already used answers from the store, refuses, says the call is still running
/// (`in_progress`) or that its outcome is unknown (`outcome_unknown`). Called again when a keyed
/// call lost a race after this step (at step 9 or at reservation), so a retry that raced its
/// first attempt still gets that attempt's answer, never an approval refusal.
pub(super) async fn idempotent(
    gate: &Gate,
    principal: &Principal,
    key: &str,
    plan_hash: &PlanHash,
    t: &mut Trace,
) -> Result<Option<(Verdict, Decision)>, Stop> {
    match gate.stores.jobs.find_by_key(&principal.tenant, &principal.subject, key).await? {
        None => Ok(None),
        Some(job) => stored_answer(job, plan_hash, t).map(Some),
    }
}

/// The answer for a key held by `job`.
pub(super) fn stored_answer(job: Job, plan_hash: &PlanHash, t: &mut Trace) -> Result<(Verdict, Decision), Stop> {
    if &job.plan_hash != plan_hash {
        return Err(Rejection::new(Code::IdempotencyConflict, "the idempotency key was used for another plan")
            .with_detail(json!({"job_id": job.id}))
            .into());
    }
    t.job_id = Some(job.id.clone());
    t.approval_id.clone_from(&job.approval_id);
    t.executor = Some(job.executor.clone());
    let stored = job.outcome.as_ref().and_then(|o| o.parse::<CallOutcome>().ok());
    match stored {
        Some(stored) if job.status.is_final() => {
            t.idempotent_replay = true;
            // The stored result was guarded at step 11 when it ran; its report travels with it.
            t.output = stored.output;
            Ok((stored.verdict, Decision::Replayed))
        }
        // Still running: not an unknown outcome, just not finished yet.
        _ if matches!(job.status, JobStatus::Reserved | JobStatus::Dispatched) => Err(Rejection::new(
            Code::InProgress,
            format!(
                "the call with this idempotency key is still running (job `{}` is {}); retry it later for its result",
                job.id,
                job.status.as_str()
            ),
        )
        .with_detail(json!({"job_id": job.id, "status": job.status.as_str()}))
        .into()),
        _ => Err(Rejection::new(
            Code::OutcomeUnknown,
            format!("job `{}` is {}; its outcome must be reconciled before anything else", job.id, job.status.as_str()),
        )
        .with_detail(json!({"job_id": job.id, "status": job.status.as_str()}))
        .into()),
    }
}

/// Step 9: which approval this call consumes (`None` when its level is `auto`).
pub(super) async fn bind(gate: &Gate, p: &Proposal<'_>, who: &Who, t: &mut Trace) -> Result<Option<Consume>, Stop> {
    let Proposal { principal, req, tool, plan, plan_hash, level } = p;
    if level.level == bridle_core::contract::ApprovalLevel::Auto {
        return Ok(None);
    }
    let now = t.now;
    let missing = if level.human_choice { Code::HumanChoiceRequired } else { Code::ApprovalRequired };
    let ledger = &gate.stores.approvals;
    if let Some(id) = &req.approval_id {
        let request = ledger.get_request(&principal.tenant, id).await?;
        t.approval_id = Some(id.clone());
        t.approver = request.as_ref().and_then(ApprovalRequest::approvers);
        approval::bind(id, request.as_ref(), plan_hash, level.level, now).map_err(|mut r| {
            if r.code == Code::ApprovalRequired {
                r.code = missing;
            }
            r
        })?;
        return Ok(Some(Consume { approval_id: id.clone(), plan_hash: plan_hash.clone(), now }));
    }
    let found = ledger.find_for_plan(&principal.tenant, plan_hash, now).await?.filter(|r| r.level >= level.level);
    if let Some(r) = found {
        t.approval_id = Some(r.id.clone());
        if r.status == ApprovalStatus::Granted && approval::satisfies(level.level, &r.grants) {
            t.approver = r.approvers();
            return Ok(Some(Consume { approval_id: r.id, plan_hash: plan_hash.clone(), now }));
        }
        return Err(pending(missing, &r.id, &reasons(tool, level), p, "is waiting for a human").into());
    }
    if req.dry_run {
        return Err(Rejection::new(missing, "no approval exists for this plan (a real call would request one)").into());
    }
    // A keyed call whose first attempt consumed the approval after step 8 gets that attempt's
    // answer (the caller re-reads the key), not a fresh request for an executed plan.
    if let Some(key) = &req.idempotency_key
        && gate.stores.jobs.find_by_key(&principal.tenant, &principal.subject, key).await?.is_some()
    {
        return Err(Rejection::new(Code::ApprovalReplayed, "the keyed call was reserved meanwhile").into());
    }
    let id = uuid::Uuid::now_v7().to_string();
    let mut request = ApprovalRequest::new(
        id.clone(),
        plan.clone(),
        plan_hash.clone(),
        level.level,
        now,
        now + gate.config.approval_ttl,
    );
    // The approver is told why: the escalation rules that fired, or the tool's own default level.
    let why = reasons(tool, level);
    // What the approver sees beside the plan: the action history and who proposed it (built
    // only here, for a request that is created).
    let mut context = proposer_context(t.approval_context.take(), who, &req.signals);
    if let Some(fields) = context.as_object_mut() {
        fields.insert("reasons".to_owned(), json!(level::texts(&why)));
        fields.insert("why".to_owned(), json!(why));
    }
    request.context = Some(context);
    let event = requested_event(&request, gate.config.policy.version(), t, tool);
    // INVARIANT: the request commits with its `approval_requested` event, and a plan has at most
    // one live pending request: of concurrent identical calls one creates it (and notifies),
    // the others get the same id back.
    match ledger.create_request(&request, gate.stores.evidence(vec![event])).await? {
        Created::New => {
            crate::notify::announce(gate.notifier.as_ref(), &request);
            t.approval_id = Some(id.clone());
            Err(pending(missing, &id, &why, p, "was created").into())
        }
        Created::Existing(existing) => {
            t.approval_id = Some(existing.id.clone());
            Err(pending(missing, &existing.id, &why, p, "is waiting for a human").into())
        }
    }
}

/// Most bytes of pipeline evidence kept on an approval request (its JSON text).
const MAX_EVIDENCE_BYTES: usize = 16 * 1024;

/// What an approval request created for this call shows about who proposed it, beside what the
/// action history attached: `agent` as the credential names it (`source`: `claim`, `principal`),
/// or as the in-process pipeline that made the call named it (`pipeline`); an agent only the
/// request named is the caller's word, shown apart (`named_by_request`, `source: request`) and
/// never as the agent; `none` when nobody named one. A pipeline's evidence (`evidence`) is kept
/// when it is storable and at most [`MAX_EVIDENCE_BYTES`].
fn proposer_context(context: Option<Value>, who: &Who, signals: &CallSignals) -> Value {
    let mut context = context.filter(Value::is_object).unwrap_or_else(|| json!({}));
    let pipeline = signals.evidence.as_ref().and_then(|e| e.get("pipeline")).and_then(Value::as_str);
    let agent = match (&who.agent, who.source) {
        (Some(id), Some(source)) if source.by_credential() => json!({"id": id, "source": source.as_str()}),
        (Some(id), Some(AgentSource::Request)) if pipeline.is_some() => {
            json!({"id": id, "source": "pipeline", "pipeline": pipeline})
        }
        (Some(named), _) => json!({"id": null, "source": "request", "named_by_request": named}),
        (None, _) => json!({"id": null, "source": "none"}),
    };
    if let Some(fields) = context.as_object_mut() {
        fields.insert("agent".to_owned(), agent);
        if let Some(evidence) = &signals.evidence {
            let fits = serde_json::to_string(evidence).map_or(0, |s| s.len()) <= MAX_EVIDENCE_BYTES;
            let kept = if fits && bounds::check_json("evidence", evidence).is_ok() {
                evidence.clone()
            } else {
                json!({"pipeline": pipeline, "omitted": "the evidence was too large or not storable"})
            };
            fields.insert("evidence".to_owned(), kept);
        }
    }
    context
}

/// Why `tool` needs `level`: the escalation rules that fired, else the tool's own default level.
/// Never empty.
fn reasons(tool: &ToolContract, level: &LevelDecision) -> Vec<Reason> {
    if !level.reasons.is_empty() {
        return level.reasons.clone();
    }
    vec![Reason::ToolDefault { tool: tool.name.clone(), level: tool.approval }]
}

/// The refusal of a call waiting for a human: the request's id, level and reasons, and the plan
/// being approved with its hash, so the caller sees exactly what an operator is asked to grant.
fn pending(code: Code, id: &str, reasons: &[Reason], p: &Proposal<'_>, state: &str) -> Rejection {
    let texts = level::texts(reasons);
    let why = format!(" ({})", texts.join("; "));
    Rejection::new(code, format!("approval request `{id}` {state}; retry the identical call once it is granted{why}"))
        .with_detail(json!({
            "approval_id": id,
            "level": p.level.level.as_str(),
            "reasons": texts,
            "why": reasons,
            "plan": p.plan,
            "plan_hash": p.plan_hash,
        }))
}

fn requested_event(r: &ApprovalRequest, policy_version: &str, t: &Trace, tool: &ToolContract) -> AuditRecord {
    AuditRecord {
        kind: EventKind::ApprovalRequested,
        call_id: t.call_id.clone(),
        at: r.created_at,
        tenant: r.tenant.clone(),
        subject: r.requester.clone(),
        run_id: r.plan.run_id.clone(),
        incident: r.plan.incident.clone(),
        tool: tool.name.clone(),
        policy_version: policy_version.to_owned(),
        plan_hash: Some(r.plan_hash.0.clone()),
        executor_identity: None,
        approval_id: Some(r.id.clone()),
        approver: None,
        decision: None,
        code: None,
        reason: Some(format!("level {}", r.level.as_str())),
        timings: Timings::default(),
        auth: None,
        versions: t.versions.clone(),
    }
}
