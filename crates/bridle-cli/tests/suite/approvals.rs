//! `bridle approvals list|approve|reject` on a SQLite file: a pending request is created by the
//! gate through the library (as an agent's call would), then handled through the binary, and the
//! store is checked afterwards, including the identical call executing once approved. Operators
//! authenticate with a token (`--token` / `BRIDLE_TOKEN`); `--as` works on SQLite only.

use std::path::Path;
use std::sync::Arc;

use bridle_core::approval::ApprovalStatus;
use bridle_core::{Code, Principal, RunContext};
use bridle_runtime::gate::{CallRequest, Gate};
use bridle_runtime::store::Stores;
use serde_json::{Value, json};

use super::support::{PgSchema, bridle, bridle_env, text};

async fn gate(db: &str) -> Gate {
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    bridle_runtime::check::gate(config, Stores::open(db).await.unwrap(), std::sync::Arc::new(bridle_tools::Workbench))
        .unwrap()
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

// ---- issue 20 point 6: operators act with their own credential ----

const SECRET: &str = "approvals-test-secret-of-at-least-32-bytes";

fn token(dir: &Path, subject: &str, scopes: &str) -> String {
    let args =
        ["token", "issue", "--subject", subject, "--tenant", "tenant-a", "--services", "checkout", "--scopes", scopes];
    let out = bridle_env(&args, dir, b"", &[("BRIDLE_JWT_SECRET", SECRET)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// `bridle --db DB approvals ARGS` verifying tokens with the test secret, BRIDLE_TOKEN = `env_token`.
fn run_with(dir: &Path, db: &str, args: &[&str], env_token: Option<&str>) -> (bool, String, String) {
    let mut all = vec!["--db", db, "approvals"];
    all.extend_from_slice(args);
    let mut env = vec![("BRIDLE_JWT_SECRET", SECRET)];
    if let Some(t) = env_token {
        env.push(("BRIDLE_TOKEN", t));
    }
    let out = bridle_env(&all, dir, b"", &env);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// The approval events of the store, as exported.
fn approval_events(dir: &Path, db: &str) -> Vec<Value> {
    let out = bridle(&["audit", "export", "--db", db], dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["kind"] == "approval_granted" || e["kind"] == "approval_rejected")
        .collect()
}

#[test]
fn regression_as_is_refused_on_postgres_for_list_approve_and_reject() {
    let dir = tempfile::tempdir().unwrap();
    // Refused before any connection: no PostgreSQL is needed to see it.
    let db = "postgres://nobody@127.0.0.1:1/none";
    for args in [
        &["list", "--as", "operator-2"][..],
        &["approve", "a-1", "--as", "operator-2"][..],
        &["reject", "a-1", "--as", "operator-2", "--reason", "no"][..],
    ] {
        let (ok, _, err) = run(dir.path(), db, args);
        assert!(!ok, "{args:?}");
        assert!(
            err.contains("refused: unauthenticated") && err.contains("`--as`") && err.contains("--token"),
            "{args:?}: {err}"
        );
        let mut json = args.to_vec();
        json.push("--json");
        let (ok, out, _) = run(dir.path(), db, &json);
        let answer: Value = serde_json::from_str(out.trim()).unwrap();
        assert!(!ok && answer["code"] == "unauthenticated", "{out}");
    }
    // The same goes for `postgresql://` and a URL from BRIDLE_STORE_URL.
    let out = bridle_env(
        &["approvals", "list", "--as", "operator-2"],
        dir.path(),
        b"",
        &[("BRIDLE_STORE_URL", "postgresql://nobody@127.0.0.1:1/none")],
    );
    assert!(!out.status.success() && text(&out.stderr).contains("refused: unauthenticated"), "{}", text(&out.stderr));
}

#[tokio::test]
async fn a_token_approves_as_its_subject_and_approver_is_never_the_requester() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let gate = gate(&db).await;
    let id = pending(&gate, 3).await;

    // The requester's own token, even holding the grant scope, cannot approve their plan.
    let requester = token(dir.path(), "requester-1", "approval:grant");
    let (ok, _, err) = run_with(dir.path(), &db, &["approve", &id, "--token", &requester], None);
    assert!(!ok && err.contains("approver_denied"), "{err}");
    // A token without an approver scope cannot list.
    let viewer = token(dir.path(), "viewer-4", "service:read");
    let (ok, _, err) = run_with(dir.path(), &db, &["list"], Some(&viewer));
    assert!(!ok && err.contains("refused: forbidden"), "{err}");
    // A token no server would accept is refused.
    let forged = format!("{}x", token(dir.path(), "operator-9", "approval:grant"));
    let (ok, _, err) = run_with(dir.path(), &db, &["approve", &id, "--token", &forged], None);
    assert!(!ok && err.contains("refused: unauthenticated: invalid token"), "{err}");
    // No credential at all.
    let (ok, _, err) = run_with(dir.path(), &db, &["list"], None);
    assert!(!ok && err.contains("--token T` or BRIDLE_TOKEN"), "{err}");

    // An operator the configuration does not even name approves with their token (BRIDLE_TOKEN).
    let operator = token(dir.path(), "operator-9", "approval:grant");
    let (ok, out, err) = run_with(dir.path(), &db, &["list", "--json"], Some(&operator));
    assert!(ok && out.contains(&id), "{out}{err}");
    let (ok, out, err) = run_with(dir.path(), &db, &["approve", &id], Some(&operator));
    assert!(ok && out.contains("granted"), "{out}{err}");
    let tenant = who(&gate, "operator-2").tenant;
    let stored = gate.stores().approvals.get_request(&tenant, &id).await.unwrap().unwrap();
    assert_eq!(stored.status, ApprovalStatus::Granted);
    assert_eq!(stored.grants[0].approver, "operator-9", "the token's subject");

    let events = approval_events(dir.path(), &db);
    let denied = events.iter().find(|e| e["subject"] == "requester-1").unwrap();
    assert_eq!(
        (denied["code"].as_str(), denied["auth"].as_str()),
        (Some("approver_denied"), Some("token")),
        "{denied}"
    );
    let granted = events.iter().find(|e| e["subject"] == "operator-9").unwrap();
    assert_eq!(
        (granted["decision"].as_str(), granted["auth"].as_str()),
        (Some("executed"), Some("token")),
        "{granted}"
    );
    let verify = bridle(&["audit", "verify", "--db", &db], dir.path());
    assert!(verify.status.success(), "{}", text(&verify.stdout));
}

#[tokio::test]
async fn as_keeps_working_on_sqlite_and_its_events_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let gate = gate(&db).await;
    let (first, second) = (pending(&gate, 3).await, pending(&gate, 4).await);
    let (ok, _, err) = run(dir.path(), &db, &["approve", &first, "--as", "operator-2"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(dir.path(), &db, &["reject", &second, "--as", "operator-2", "--reason", "not now"]);
    assert!(ok, "{err}");
    // `--as` wins over an inherited BRIDLE_TOKEN; `--as` and `--token` together are refused.
    let (ok, _, err) = run_with(dir.path(), &db, &["list", "--as", "operator-2"], Some("not-a-token"));
    assert!(ok, "{err}");
    let (ok, _, err) = run(dir.path(), &db, &["list", "--as", "operator-2", "--token", "t"]);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
    let events = approval_events(dir.path(), &db);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(|e| e["auth"] == "as" && e["subject"] == "operator-2"), "{events:?}");
}

#[tokio::test]
async fn a_token_approves_on_postgres_where_as_is_refused() {
    let Some(schema) = PgSchema::fresh("approvals").await else { return };
    let db = schema.url.clone();
    let dir = tempfile::tempdir().unwrap();
    let gate = gate(&db).await;
    let id = pending(&gate, 3).await;
    let (ok, _, err) = run(dir.path(), &db, &["approve", &id, "--as", "operator-2"]);
    assert!(!ok && err.contains("refused: unauthenticated"), "{err}");
    let operator = token(dir.path(), "operator-2", "approval:grant");
    let (ok, out, err) = run_with(dir.path(), &db, &["approve", &id, "--token", &operator], None);
    assert!(ok && out.contains("granted"), "{out}{err}");
    let events = approval_events(dir.path(), &db);
    assert_eq!(events.len(), 1, "the refused `--as` wrote nothing: {events:?}");
    assert_eq!(events[0]["auth"], "token");
    drop(gate);
    schema.drop().await;
}
