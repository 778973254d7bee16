//! Races on SQLite: many concurrent calls, one approval, exactly one execution.

use std::sync::Arc;

use bridle_core::Code;
use bridle_runtime::gate::CallRequest;
use serde_json::json;

use super::support::{H, run};

async fn race(with_id: bool) {
    let dir = tempfile::tempdir().unwrap();
    let h = Arc::new(H::checkout_sqlite(&dir).await);
    let change = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
    h.approved("a-race", &change, &run()).await;
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (h, change) = (h.clone(), change.clone());
        tasks.push(tokio::spawn(async move {
            let mut call = CallRequest::new("scale_replicas", change);
            if with_id {
                call = call.with_approval("a-race");
            }
            h.gate.call(&h.who("requester-1"), &run(), &call).await
        }));
    }
    let mut codes = Vec::new();
    for t in tasks {
        codes.push(t.await.unwrap().expect("no store errors under contention").code());
    }
    let ok = codes.iter().filter(|c| c.is_none()).count();
    assert_eq!(ok, 1, "{codes:?}");
    assert_eq!(h.adapter.changes_applied(), 1);
    let others: Vec<_> = codes.iter().flatten().collect();
    assert_eq!(others.len(), 31);
    if with_id {
        assert!(others.iter().all(|c| **c == Code::ApprovalReplayed), "{others:?}");
    } else {
        // Without an id, a loser either lost the consumption race or, arriving after it,
        // found no usable approval and asked for a new one.
        assert!(others.iter().all(|c| matches!(c, Code::ApprovalReplayed | Code::ApprovalRequired)), "{others:?}");
    }
    assert_eq!(h.tool_calls().await.len(), 32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_calls_race_one_approval_on_sqlite() {
    race(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_identical_calls_race_the_approval_found_by_plan_hash() {
    race(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn batched_audit_keeps_one_event_per_call_and_an_intact_chain() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let stores = bridle_runtime::store::Stores::open(&url).await.unwrap().with_batched_audit(256);
    let h = Arc::new(H::new(bridle_runtime::bundled::checkout().unwrap(), stores));
    let mut tasks = Vec::new();
    for i in 0..200 {
        let h = h.clone();
        tasks.push(tokio::spawn(async move {
            let service = if i % 5 == 0 { "payments" } else { "checkout" };
            let call = CallRequest::new("get_service_snapshot", json!({"service": service}));
            h.gate.call(&h.who("requester-1"), &run(), &call).await.unwrap().code()
        }));
    }
    let mut denied = 0;
    for t in tasks {
        if t.await.unwrap() == Some(Code::PolicyDenied) {
            denied += 1;
        }
    }
    assert_eq!(denied, 40);
    let events = h.tool_calls().await;
    assert_eq!(events.len(), 200);
    let report = bridle_runtime::audit::verify(h.gate.stores().audit.as_ref()).await.unwrap();
    assert!(report.ok(), "{report:?}");
}
