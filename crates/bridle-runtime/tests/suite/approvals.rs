//! Approvals end to end: who may grant, sign-off, the retry-after-approval flow, seed 004's
//! exercises (run id or tenant changed after approval; a lost response reconciled).

use bridle_core::Code;
use bridle_core::approval::ApprovalStatus;
use bridle_core::audit::EventKind;
use bridle_core::contract::ApprovalLevel;
use bridle_core::job::JobStatus;
use bridle_runtime::adapter::Fault;
use bridle_runtime::approvals::ApprovalError;
use bridle_runtime::gate::CallRequest;
use serde_json::{Value, json};

use super::support::{H, run};

fn change(replicas: i64) -> Value {
    json!({"service": "checkout", "replicas": replicas, "resource_version": 7})
}

fn refused(r: Result<bridle_core::approval::ApprovalRequest, ApprovalError>) -> Code {
    match r {
        Err(ApprovalError::Refused(r)) => r.code,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn an_agent_retries_the_identical_call_after_a_human_approves() {
    let h = H::checkout();
    let (me, r) = (h.who("requester-1"), run());
    let call = CallRequest::new("scale_replicas", change(3));
    let first = h.gate.call(&me, &r, &call).await.unwrap();
    assert_eq!(first.code(), Some(Code::ApprovalRequired));
    let id = first.approval_id.clone().unwrap();
    // Asking again while pending points at the same request instead of piling up new ones.
    let again = h.gate.call(&me, &r, &call).await.unwrap();
    assert_eq!(again.approval_id.as_deref(), Some(id.as_str()));
    let pending = h.desk.pending_approvals(&h.who("operator-2")).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].plan.arguments, change(3));
    h.desk.grant(&h.who("operator-2"), &id).await.unwrap();
    let done = h.gate.call(&me, &r, &call).await.unwrap();
    assert_eq!(done.code(), None);
    assert_eq!(done.approval_id.as_deref(), Some(id.as_str()));
    // The approval is spent: the same call again needs a new one.
    let next = h
        .gate
        .call(
            &me,
            &r,
            &CallRequest::new("scale_replicas", json!({"service": "checkout", "replicas": 3, "resource_version": 8})),
        )
        .await
        .unwrap();
    assert_eq!(next.code(), Some(Code::ApprovalRequired));
    assert_ne!(next.approval_id.as_deref(), Some(id.as_str()));
    let kinds: Vec<_> = h.events().await.iter().map(|e| e.record.kind).collect();
    assert!(kinds.contains(&EventKind::ApprovalRequested) && kinds.contains(&EventKind::ApprovalGranted));
}

#[tokio::test]
async fn who_may_grant() {
    let h = H::checkout();
    let r = run();
    h.requested("a-1", "requester-1", "scale_replicas", &change(3), &r, ApprovalLevel::Approval).await;
    assert_eq!(refused(h.desk.grant(&h.who("requester-1"), "a-1").await), Code::ApproverDenied, "no self-approval");
    assert_eq!(refused(h.desk.grant(&h.who("viewer-4"), "a-1").await), Code::ApproverDenied, "needs approval:grant");
    let mut foreign = h.who("operator-2");
    foreign.tenant = "tenant-b".into();
    assert_eq!(refused(h.desk.grant(&foreign, "a-1").await), Code::NotFound, "another tenant cannot see it");
    assert_eq!(refused(h.desk.reject(&foreign, "a-1", "mine").await), Code::NotFound);
    // Both attempts are audited in the caller's chain, never in the owner's.
    let attempts: Vec<_> =
        h.events().await.into_iter().filter(|e| e.record.code.as_deref() == Some("not_found")).collect();
    assert_eq!(attempts.len(), 2);
    assert!(attempts.iter().all(|e| e.record.tenant == "tenant-b" && e.record.subject == "operator-2"), "{attempts:?}");
    assert_eq!(
        attempts.iter().map(|e| e.record.kind).collect::<Vec<_>>(),
        [EventKind::ApprovalGranted, EventKind::ApprovalRejected]
    );
    let mut no_service = h.who("operator-2");
    no_service.services.clear();
    assert_eq!(refused(h.desk.grant(&no_service, "a-1").await), Code::ApproverDenied, "needs the service");
    let denied: Vec<_> =
        h.events().await.into_iter().filter(|e| e.record.code.as_deref() == Some("approver_denied")).collect();
    assert_eq!(denied.len(), 3, "refused grants are audited");
    let granted = h.desk.grant(&h.who("operator-2"), "a-1").await.unwrap();
    assert_eq!(granted.status, ApprovalStatus::Granted);
}

#[tokio::test]
async fn sign_off_needs_two_distinct_approvers_one_with_sign_off() {
    let h = H::checkout();
    let (me, r) = (h.who("requester-1"), run());
    h.requested("s-1", "requester-1", "scale_replicas", &change(3), &r, ApprovalLevel::SignOff).await;
    let one = h.desk.grant(&h.who("operator-2"), "s-1").await.unwrap();
    assert_eq!(one.status, ApprovalStatus::Pending);
    assert_eq!(refused(h.desk.grant(&h.who("operator-2"), "s-1").await), Code::ApproverDenied, "same approver twice");
    let call = CallRequest::new("scale_replicas", change(3)).with_approval("s-1");
    assert_eq!(h.gate.call(&me, &r, &call).await.unwrap().code(), Some(Code::ApprovalRequired));
    let two = h.desk.grant(&h.who("lead-3"), "s-1").await.unwrap();
    assert_eq!(two.status, ApprovalStatus::Granted);
    let out = h.gate.call(&me, &r, &call).await.unwrap();
    assert_eq!(out.code(), None);
    let e = h.tool_calls().await.pop().unwrap();
    assert_eq!(e.record.approver.as_deref(), Some("operator-2+lead-3"));
}

#[tokio::test]
async fn a_rejected_request_is_audited_with_its_reason_and_never_executes() {
    let h = H::checkout();
    let (me, r) = (h.who("requester-1"), run());
    h.requested("a-1", "requester-1", "scale_replicas", &change(3), &r, ApprovalLevel::Approval).await;
    h.desk.reject(&h.who("operator-2"), "a-1", "peak traffic; wait for the freeze to end").await.unwrap();
    let out = h.gate.call(&me, &r, &CallRequest::new("scale_replicas", change(3)).with_approval("a-1")).await.unwrap();
    assert_eq!(out.code(), Some(Code::ApprovalRequired));
    let e = h.events().await.into_iter().find(|e| e.record.kind == EventKind::ApprovalRejected).unwrap();
    assert_eq!(e.record.subject, "operator-2");
    assert_eq!(e.record.reason, None);
    let stored = h.gate.stores().approvals.get_request("tenant-a", "a-1").await.unwrap().unwrap();
    assert_eq!(stored.rejection_reason.as_deref(), Some("peak traffic; wait for the freeze to end"));
    assert_eq!(h.adapter.changes_applied(), 0);
}

#[tokio::test]
async fn exercise_1_read_only_principal_cannot_change() {
    let h = H::checkout();
    let out = h.gate.call(&h.who("viewer-4"), &run(), &CallRequest::new("scale_replicas", change(3))).await.unwrap();
    assert_eq!(out.code(), Some(Code::PolicyDenied));
    assert_eq!(h.adapter.changes_applied(), 0);
}

#[tokio::test]
async fn exercise_2_changing_run_or_tenant_after_approval_fails() {
    let h = H::checkout();
    let r = run();
    h.approved("a-1", &change(3), &r).await;
    let me = h.who("requester-1");
    let mut other_run = run();
    other_run.run_id = "run-102".into();
    let call = CallRequest::new("scale_replicas", change(3)).with_approval("a-1");
    assert_eq!(h.gate.call(&me, &other_run, &call).await.unwrap().code(), Some(Code::PlanChanged));
    let mut other_incident = run();
    other_incident.incident = "inc-43".into();
    assert_eq!(h.gate.call(&me, &other_incident, &call).await.unwrap().code(), Some(Code::PlanChanged));
    // The same subject in another tenant never reaches tenant-a's approval or resource.
    let mut moved = me.clone();
    moved.tenant = "tenant-b".into();
    let code = h.gate.call(&moved, &r, &call).await.unwrap().code();
    assert!(code.is_some(), "a changed tenant must not execute");
    let without_id = CallRequest::new("scale_replicas", change(3));
    assert_eq!(h.gate.call(&me, &other_run, &without_id).await.unwrap().code(), Some(Code::ApprovalRequired));
    assert_eq!(h.adapter.changes_applied(), 0);
    // The approval is still usable for its own plan.
    assert_eq!(h.gate.call(&me, &r, &call).await.unwrap().code(), None);
}

#[tokio::test]
async fn exercise_3_a_lost_response_leaves_the_job_unknown_until_reconciled() {
    let h = H::checkout();
    let r = run();
    h.approved("a-1", &change(3), &r).await;
    h.adapter.inject(Fault::LoseResponse);
    let out = h
        .gate
        .call(&h.who("requester-1"), &r, &CallRequest::new("scale_replicas", change(3)).with_approval("a-1"))
        .await
        .unwrap();
    assert_eq!(out.code(), Some(Code::OutcomeUnknown));
    let job_id = out.job_id.clone().unwrap();
    let jobs = &h.gate.stores().jobs;
    assert_eq!(jobs.get_job(&job_id).await.unwrap().unwrap().status, JobStatus::Unknown);
    let settled = h.reconciler.reconcile().await.unwrap();
    assert_eq!(settled.len(), 1);
    assert_eq!((settled[0].from, settled[0].to), (JobStatus::Unknown, JobStatus::Succeeded));
    let job = jobs.get_job(&job_id).await.unwrap().unwrap();
    assert_eq!(job.status, JobStatus::Succeeded);
    assert_eq!(job.outcome.unwrap().value()["result"]["replicas"], 3);
    assert_eq!(h.adapter.changes_applied(), 1, "reconciling never re-executes");
    assert!(h.reconciler.reconcile().await.unwrap().is_empty());
    // The dispatch was audited before the side effect, the call's answer and the settlement
    // after it, all under one id: the job's is its call's.
    assert_eq!(job_id, out.call_id);
    let job_events: Vec<_> = h
        .events()
        .await
        .into_iter()
        .filter(|e| e.record.call_id == job_id)
        .map(|e| (e.record.kind, e.record.reason.clone().unwrap_or_default()))
        .collect();
    assert_eq!(job_events.len(), 3, "{job_events:?}");
    assert_eq!(job_events[0].0, EventKind::JobDispatched);
    assert_eq!(job_events[1].0, EventKind::ToolCall);
    assert_eq!(job_events[2], (EventKind::JobSettled, "reconciled: unknown → succeeded".to_owned()));
}

#[tokio::test]
async fn a_job_abandoned_by_a_dead_process_is_reconciled_after_its_grace() {
    let h = H::checkout();
    let r = run();
    h.approved("a-1", &change(3), &r).await;
    let me = h.who("requester-1");
    let call = CallRequest::new("scale_replicas", change(3)).with_approval("a-1");
    let job_id = h.gate.call(&me, &r, &call).await.unwrap().job_id.unwrap();
    // As if the process died between dispatch and answer: the job is back to `dispatched`.
    let jobs = &h.gate.stores().jobs;
    let now = h.clock_now();
    assert!(
        jobs.transition(&job_id, JobStatus::Succeeded, JobStatus::Dispatched, None, now, Vec::new()).await.unwrap()
    );
    assert!(h.reconciler.reconcile().await.unwrap().is_empty(), "within its tool's timeout + grace: in flight");
    // scale_replicas times out after 5 s; the default grace is 60 s.
    h.clock.set(now + time::Duration::seconds(64));
    assert!(h.reconciler.reconcile().await.unwrap().is_empty(), "still within");
    h.clock.set(now + time::Duration::seconds(66));
    let settled = h.reconciler.reconcile().await.unwrap();
    assert_eq!((settled.len(), settled[0].from, settled[0].to), (1, JobStatus::Dispatched, JobStatus::Succeeded));
    assert_eq!(h.adapter.changes_applied(), 1, "asked, never re-executed");
}

#[tokio::test]
async fn a_failed_change_still_consumes_its_approval() {
    let h = H::checkout();
    let r = run();
    let stale = json!({"service": "checkout", "replicas": 3, "resource_version": 6});
    h.approved("a-stale", &stale, &r).await;
    let call = CallRequest::new("scale_replicas", stale).with_approval("a-stale");
    let me = h.who("requester-1");
    assert_eq!(h.gate.call(&me, &r, &call).await.unwrap().code(), Some(Code::ResourceVersionChanged));
    assert_eq!(h.gate.call(&me, &r, &call).await.unwrap().code(), Some(Code::ApprovalReplayed));
}

#[tokio::test]
async fn dry_run_decides_without_consuming_creating_or_executing() {
    let h = H::checkout();
    let r = run();
    let me = h.who("requester-1");
    let mut call = CallRequest::new("scale_replicas", change(3));
    call.dry_run = true;
    assert_eq!(h.gate.call(&me, &r, &call).await.unwrap().code(), Some(Code::ApprovalRequired));
    assert!(h.desk.pending_approvals(&me).await.unwrap().is_empty(), "a dry run creates no request");
    h.approved("a-1", &change(3), &r).await;
    let out = h.gate.call(&me, &r, &call).await.unwrap();
    assert_eq!(out.code(), None);
    assert!(matches!(out.verdict, bridle_runtime::Verdict::DryRun { would_reject: None }));
    assert_eq!(h.adapter.changes_applied(), 0);
    let e = h.tool_calls().await.pop().unwrap();
    assert_eq!(e.record.decision, Some(bridle_core::audit::Decision::DryRun));
    let a = h.gate.stores().approvals.get_request("tenant-a", "a-1").await.unwrap().unwrap();
    assert_eq!(a.status, ApprovalStatus::Granted, "still unused");
    call.dry_run = false;
    assert_eq!(h.gate.call(&me, &r, &call).await.unwrap().code(), None);
}

#[tokio::test]
async fn an_approval_reads_the_current_state_with_the_read_tools_identity() {
    let h = H::checkout();
    h.requested("a-diff", "requester-1", "scale_replicas", &change(3), &run(), ApprovalLevel::Approval).await;
    let request = h.gate.stores().approvals.get_request("tenant-a", "a-diff").await.unwrap().unwrap();
    let current = h.desk.current_state(&request).await.unwrap().unwrap();
    assert_eq!(current["replicas"], 2, "{current}");
    let diff = bridle_core::approval::diff(&request.plan.arguments, &current);
    let fields: Vec<_> = diff.iter().map(|c| (c.field.as_str(), c.current.clone(), c.proposed.clone())).collect();
    assert_eq!(fields, [("replicas", json!(2), json!(3)), ("resource_version", json!(7), json!(7))]);
    assert_eq!(h.adapter.snapshot("tenant-a", "checkout").unwrap()["replicas"], 2, "nothing was changed");
    // A tool without a state rule has nothing to compare with.
    let args = json!({"service": "checkout"});
    h.requested("a-read", "requester-1", "get_service_snapshot", &args, &run(), ApprovalLevel::Approval).await;
    let read = h.gate.stores().approvals.get_request("tenant-a", "a-read").await.unwrap().unwrap();
    assert_eq!(h.desk.current_state(&read).await, Ok(None));
}

#[tokio::test]
async fn an_unreadable_state_is_a_reason_not_an_error() {
    let h = H::fab();
    let mut me = h.who("engineer");
    me.services.insert("etch-02".into());
    let args = json!({"equipment": "etch-02", "temp_celsius": 380});
    let expires = h.clock_now() + time::Duration::minutes(10);
    let draft = bridle_runtime::approvals::ApprovalDraft {
        id: "a-down",
        tool: "set_temperature",
        arguments: &args,
        level: ApprovalLevel::Approval,
        expires_at: expires,
    };
    let request = h.desk.request_approval(&me, &run(), &draft).await.unwrap();
    let reason = h.desk.current_state(&request).await.unwrap_err().to_string();
    assert!(reason.contains("cannot read the current state"), "{reason}");
}
