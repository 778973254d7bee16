//! The gate as a table: principal × tool × approval state → code and audit record.

use bridle_core::Code;
use bridle_core::audit::Decision;
use bridle_runtime::gate::CallRequest;
use serde_json::{Value, json};
use time::Duration;

use super::support::{H, run};

#[derive(Debug, Clone, Copy)]
enum Approval {
    /// No approval exists.
    None,
    /// A request exists but nobody granted it.
    Pending,
    /// Granted for exactly this plan; the call names no id (looked up by plan hash).
    GrantedLookup,
    /// Granted for exactly this plan; the call names it.
    Granted,
    /// Granted for replicas 4; the call names it with replicas 3.
    OtherPlan,
    /// Granted, then expired.
    Expired,
    /// Granted and already used once.
    Consumed,
}

struct Row {
    who: &'static str,
    tool: &'static str,
    args: Value,
    approval: Approval,
    code: Option<Code>,
    decision: Decision,
    executor: Option<&'static str>,
}

fn change(replicas: i64) -> Value {
    json!({"service": "checkout", "replicas": replicas, "resource_version": 7})
}

fn rows() -> Vec<Row> {
    let read = json!({"service": "checkout"});
    let row = |who, tool, args, approval, code, decision, executor| Row {
        who,
        tool,
        args,
        approval,
        code,
        decision,
        executor,
    };
    use Approval as A;
    use Decision::{Executed, Rejected};
    vec![
        row("requester-1", "get_service_snapshot", read.clone(), A::None, None, Executed, Some("reader-identity")),
        row(
            "requester-1",
            "get_service_snapshot",
            json!({"service": "payments"}),
            A::None,
            Some(Code::PolicyDenied),
            Rejected,
            None,
        ),
        row("viewer-4", "get_service_snapshot", read.clone(), A::None, None, Executed, Some("reader-identity")),
        row("viewer-4", "scale_replicas", change(3), A::None, Some(Code::PolicyDenied), Rejected, None),
        row("operator-2", "get_service_snapshot", read.clone(), A::None, Some(Code::PolicyDenied), Rejected, None),
        row(
            "lead-3",
            "get_service_snapshot",
            json!({"service": "payments"}),
            A::None,
            Some(Code::PolicyDenied),
            Rejected,
            None,
        ),
        row("requester-1", "delete_everything", read.clone(), A::None, Some(Code::UnknownTool), Rejected, None),
        row(
            "requester-1",
            "get_service_snapshot",
            json!({"service": "checkout", "tenant": "tenant-b"}),
            A::None,
            Some(Code::SchemaRejected),
            Rejected,
            None,
        ),
        row(
            "requester-1",
            "scale_replicas",
            json!({"service": "checkout", "replicas": "3", "resource_version": 7}),
            A::None,
            Some(Code::SchemaRejected),
            Rejected,
            None,
        ),
        row("requester-1", "scale_replicas", change(9), A::None, Some(Code::OutOfRange), Rejected, None),
        row("requester-1", "scale_replicas", change(0), A::None, Some(Code::OutOfRange), Rejected, None),
        row("requester-1", "scale_replicas", change(5), A::Granted, Some(Code::DeltaTooLarge), Rejected, None),
        row("requester-1", "scale_replicas", change(3), A::None, Some(Code::ApprovalRequired), Rejected, None),
        row("requester-1", "scale_replicas", change(3), A::Pending, Some(Code::ApprovalRequired), Rejected, None),
        row("requester-1", "scale_replicas", change(3), A::GrantedLookup, None, Executed, Some("changer-identity")),
        row("requester-1", "scale_replicas", change(3), A::Granted, None, Executed, Some("changer-identity")),
        row("requester-1", "scale_replicas", change(3), A::OtherPlan, Some(Code::PlanChanged), Rejected, None),
        row("requester-1", "scale_replicas", change(3), A::Expired, Some(Code::ApprovalExpired), Rejected, None),
        row("requester-1", "scale_replicas", change(3), A::Consumed, Some(Code::ApprovalReplayed), Rejected, None),
        row("viewer-4", "scale_replicas", change(3), A::Granted, Some(Code::PolicyDenied), Rejected, None),
    ]
}

#[tokio::test]
async fn matrix() {
    for (i, row) in rows().into_iter().enumerate() {
        let h = H::checkout();
        let run = run();
        let mut req = CallRequest::new(row.tool, row.args.clone());
        match row.approval {
            Approval::None => {}
            Approval::Pending => {
                let first = h.gate.call(&h.who("requester-1"), &run, &req).await.unwrap();
                assert_eq!(first.code(), Some(Code::ApprovalRequired));
            }
            Approval::GrantedLookup => {
                h.approved("a-1", &row.args, &run).await;
            }
            Approval::Granted => {
                let args = if row.tool == "scale_replicas" { row.args.clone() } else { change(3) };
                req = req.with_approval(&h.approved("a-1", &args, &run).await);
            }
            Approval::OtherPlan => req = req.with_approval(&h.approved("a-1", &change(4), &run).await),
            Approval::Expired => {
                req = req.with_approval(&h.approved("a-1", &row.args, &run).await);
                h.clock.set(super::support::T0 + Duration::minutes(20));
            }
            Approval::Consumed => {
                req = req.with_approval(&h.approved("a-1", &row.args, &run).await);
                let first = h.gate.call(&h.who("requester-1"), &run, &req).await.unwrap();
                assert_eq!(first.code(), None, "row {i}: the first use succeeds");
            }
        }
        let before = h.tool_calls().await.len();
        let out = h.gate.call(&h.who(row.who), &run, &req).await.unwrap();
        assert_eq!(out.code(), row.code, "row {i}: {} {} {:?}: {out:?}", row.who, row.tool, row.approval);
        let calls = h.tool_calls().await;
        assert_eq!(calls.len(), before + 1, "row {i}: exactly one audit event per call");
        let e = &calls.last().unwrap().record;
        assert_eq!(e.call_id, out.call_id, "row {i}");
        assert_eq!(e.decision, Some(row.decision), "row {i}");
        assert_eq!(e.code.as_deref(), row.code.map(Code::as_str), "row {i}");
        assert_eq!(e.subject, row.who, "row {i}");
        assert_eq!(e.tenant, "tenant-a", "row {i}");
        assert_eq!((e.run_id.as_str(), e.incident.as_str()), ("run-101", "inc-42"), "row {i}");
        assert_eq!(e.executor_identity.as_deref(), row.executor, "row {i}");
        assert_eq!(e.policy_version, h.config.policy.version(), "row {i}");
        // A plan hash exists exactly when the call passed policy.
        let past_policy =
            !matches!(row.code, Some(Code::PolicyDenied | Code::UnknownTool | Code::SchemaRejected | Code::OutOfRange));
        assert_eq!(e.plan_hash.is_some(), past_policy, "row {i}");
        if row.decision == Decision::Executed && row.tool == "scale_replicas" {
            assert_eq!(e.approver.as_deref(), Some("operator-2"), "row {i}");
            assert!(e.approval_id.is_some(), "row {i}");
        }
    }
}

#[tokio::test]
async fn every_event_chains() {
    let h = H::checkout();
    let run = run();
    for row in rows() {
        let _ = h.gate.call(&h.who(row.who), &run, &CallRequest::new(row.tool, row.args)).await.unwrap();
    }
    let report = bridle_runtime::audit::verify(h.gate.stores().audit.as_ref()).await.unwrap();
    assert!(report.ok(), "{report:?}");
    assert!(report.tenants[0].1 >= 20);
}
