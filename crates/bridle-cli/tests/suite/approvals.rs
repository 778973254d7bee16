//! `bridle approvals list|approve|reject` on a SQLite file: a pending request is created by the
//! gate through the library (as an agent's call would), then handled through the binary, and the
//! store is checked afterwards, including the identical call executing once approved.

use std::path::Path;
use std::sync::Arc;

use bridle_core::approval::ApprovalStatus;
use bridle_core::{Code, Principal, RunContext};
use bridle_runtime::gate::{CallRequest, Gate};
use bridle_runtime::store::Stores;
use serde_json::{Value, json};

use super::support::{bridle, text};

async fn gate(db: &str) -> Gate {
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    bridle_runtime::check::gate(config, Stores::open(db).await.unwrap()).unwrap()
}

fn who(gate: &Gate, name: &str) -> Principal {
    gate.config().principals[name].clone()
}

fn change(replicas: i64) -> CallRequest {
    CallRequest::new("scale_replicas", json!({"service": "checkout", "replicas": replicas, "resource_version": 7}))
}

/// Asks for `change(replicas)` as requester-1; returns the pending approval's id.
async fn pending(gate: &Gate, replicas: i64) -> String {
    let out =
        gate.call(&who(gate, "requester-1"), &RunContext::new("run-7", "inc-7"), &change(replicas)).await.unwrap();
    assert_eq!(out.code(), Some(Code::ApprovalRequired));
    out.approval_id.unwrap()
}

fn run(dir: &Path, db: &str, args: &[&str]) -> (bool, String, String) {
    let mut all = vec!["--db", db, "approvals"];
    all.extend_from_slice(args);
    let out = bridle(&all, dir);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

#[tokio::test]
async fn an_operator_lists_and_approves_and_the_identical_call_then_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let gate = gate(&db).await;
    let id = pending(&gate, 3).await;

    let (ok, out, err) = run(dir.path(), &db, &["list", "--as", "operator-2", "--json"]);
    assert!(ok, "{err}");
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert_eq!(lines[0]["approval_id"], id.as_str());
    assert_eq!(lines[0]["tool"], "scale_replicas");
    assert_eq!(lines[0]["requester"], "requester-1");
    assert_eq!(lines[0]["level"], "approval");
    assert_eq!(lines[0]["arguments"]["replicas"], 3);
    assert_eq!(lines[0]["plan_hash"].as_str().unwrap().len(), 64);

    let (ok, out, _) = run(dir.path(), &db, &["list", "--as", "operator-2"]);
    assert!(ok);
    let hash = lines[0]["plan_hash"].as_str().unwrap();
    let row = out.lines().find(|l| l.starts_with(&id)).unwrap();
    assert!(row.contains("scale_replicas") && row.contains("requester-1") && row.contains(&hash[..12]), "{row}");
    assert!(row.contains(r#""replicas":3"#), "{row}");

    // The requester cannot approve their own plan; a viewer holds no approval scope.
    for who in ["requester-1", "viewer-4"] {
        let (ok, _, err) = run(dir.path(), &db, &["approve", &id, "--as", who]);
        assert!(!ok && err.contains("approver_denied"), "{who}: {err}");
    }
    let (ok, out, err) = run(dir.path(), &db, &["approve", &id, "--as", "operator-2"]);
    assert!(ok, "{err}");
    assert!(out.contains("granted"), "{out}");

    let tenant = who(&gate, "operator-2").tenant;
    let stored = gate.stores().approvals.get_request(&tenant, &id).await.unwrap().unwrap();
    assert_eq!(stored.status, ApprovalStatus::Granted);
    assert_eq!(stored.grants[0].approver, "operator-2");
    // The agent's identical call now executes.
    let again = gate.call(&who(&gate, "requester-1"), &RunContext::new("run-7", "inc-7"), &change(3)).await.unwrap();
    assert_eq!(again.code(), None, "{again:?}");
    assert_eq!(again.result().unwrap()["replicas"], 3);
}

#[tokio::test]
async fn an_operator_rejects_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let gate = gate(&db).await;
    let id = pending(&gate, 4).await;

    let (ok, out, err) =
        run(dir.path(), &db, &["reject", &id, "--as", "operator-2", "--reason", "not during the freeze", "--json"]);
    assert!(ok, "{err}");
    let answer: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(answer["status"], "rejected");
    assert_eq!(answer["rejection_reason"], "not during the freeze");
    let tenant = who(&gate, "operator-2").tenant;
    let stored = gate.stores().approvals.get_request(&tenant, &id).await.unwrap().unwrap();
    assert_eq!(stored.status, ApprovalStatus::Rejected);

    let (ok, out, _) = run(dir.path(), &db, &["list", "--as", "operator-2"]);
    assert!(ok && out.contains("no pending approvals"), "{out}");
    // Rejecting twice is refused.
    let (ok, _, err) = run(dir.path(), &db, &["reject", &id, "--as", "operator-2", "--reason", "again"]);
    assert!(!ok && err.contains("refused"), "{err}");
}

#[test]
fn an_unknown_principal_is_named_with_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let (ok, _, err) = run(dir.path(), &db, &["list", "--as", "mallory"]);
    assert!(!ok);
    assert!(err.contains("no principal `mallory`") && err.contains("operator-2"), "{err}");
    let (ok, _, err) = run(dir.path(), &db, &["approve", "x", "--as", "operator-2"]);
    assert!(!ok && err.contains("refused"), "{err}");
}
