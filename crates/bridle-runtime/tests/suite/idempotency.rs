//! Idempotency keys: a client that lost Bridle's reply retries and gets the stored result.

use bridle_core::Code;
use bridle_core::approval::ApprovalStatus;
use bridle_runtime::adapter::Fault;
use bridle_runtime::gate::CallRequest;
use serde_json::{Value, json};

use super::support::{H, run};

fn change(replicas: i64) -> Value {
    json!({"service": "checkout", "replicas": replicas, "resource_version": 7})
}

#[tokio::test]
async fn a_retry_with_the_same_key_returns_the_stored_result_and_consumes_nothing() {
    let h = H::checkout();
    let (me, r) = (h.who("requester-1"), run());
    h.approved("a-1", &change(3), &r).await;
    let call = CallRequest::new("scale_replicas", change(3)).with_approval("a-1").with_key("k-1");
    let first = h.gate.call(&me, &r, &call).await.unwrap();
    assert_eq!(first.code(), None);
    // A second approval for the same plan exists: a retry must not consume it.
    h.approved("a-2", &change(3), &r).await;
    let retry = h.gate.call(&me, &r, &CallRequest::new("scale_replicas", change(3)).with_key("k-1")).await.unwrap();
    assert!(retry.idempotent_replay);
    assert_eq!(retry.result(), first.result());
    assert_eq!(retry.job_id, first.job_id);
    assert_eq!(h.adapter.changes_applied(), 1);
    let a2 = h.gate.stores().approvals.get_request("tenant-a", "a-2").await.unwrap().unwrap();
    assert_eq!(a2.status, ApprovalStatus::Granted);
    let e = h.tool_calls().await.pop().unwrap();
    assert_eq!(e.record.decision, Some(bridle_core::audit::Decision::Replayed));
}

#[tokio::test]
async fn the_same_key_for_another_plan_is_a_conflict() {
    let h = H::checkout();
    let (me, r) = (h.who("requester-1"), run());
    h.approved("a-1", &change(3), &r).await;
    h.gate.call(&me, &r, &CallRequest::new("scale_replicas", change(3)).with_key("k-1")).await.unwrap();
    let other = h.gate.call(&me, &r, &CallRequest::new("scale_replicas", change(4)).with_key("k-1")).await.unwrap();
    assert_eq!(other.code(), Some(Code::IdempotencyConflict));
    // Keys belong to a subject: another subject (in a run of its own) may use the same key freely.
    let mut other_subject = me.clone();
    other_subject.subject = "requester-9".into();
    let own_run = bridle_core::RunContext::new("run-of-requester-9", "inc-42");
    let out = h
        .gate
        .call(&other_subject, &own_run, &CallRequest::new("scale_replicas", change(4)).with_key("k-1"))
        .await
        .unwrap();
    assert_eq!(out.code(), Some(Code::ApprovalRequired));
}

#[tokio::test]
async fn while_the_outcome_is_unknown_a_retry_gets_outcome_unknown() {
    let h = H::checkout();
    let (me, r) = (h.who("requester-1"), run());
    h.approved("a-1", &change(3), &r).await;
    h.adapter.inject(Fault::LoseResponse);
    let call = CallRequest::new("scale_replicas", change(3)).with_key("k-1");
    assert_eq!(h.gate.call(&me, &r, &call).await.unwrap().code(), Some(Code::OutcomeUnknown));
    let retry = h.gate.call(&me, &r, &call).await.unwrap();
    assert_eq!(retry.code(), Some(Code::OutcomeUnknown));
    assert!(!retry.idempotent_replay);
    assert_eq!(h.adapter.changes_applied(), 1, "never re-executed while unknown");
    h.reconciler.reconcile().await.unwrap();
    let settled = h.gate.call(&me, &r, &call).await.unwrap();
    assert!(settled.idempotent_replay);
    assert_eq!(settled.result().unwrap()["replicas"], 3);
    assert_eq!(h.adapter.changes_applied(), 1);
}
