//! `bridle demo` on the in-memory store and on SQLite: seed 004's twelve lines, exactly.

use std::sync::Arc;

use bridle_runtime::store::Stores;

const EXPECTED: &str = "read: ok replicas=2 resource_version=7
denied: rejected reason=policy_denied
tenant_injection: rejected reason=schema_rejected
approval_missing: rejected reason=approval_required
approval_expired: rejected reason=approval_expired
plan_changed: rejected reason=plan_changed
stale_resource: rejected reason=resource_version_changed
valid_approval: ok replicas=3 resource_version=8
replay: rejected reason=approval_replayed
cancelled: rejected reason=cancelled
deadline: rejected reason=deadline_exceeded
budget: rejected reason=budget_exhausted
final replicas=3 resource_version=8
audit_events=12 executed=2 rejected=10
assertions=passed";

#[tokio::test]
async fn demo_prints_the_seed_output_in_memory() {
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    let report = bridle_apps::demo::run(config, Stores::memory()).await.unwrap();
    assert_eq!(report.lines.join("\n"), EXPECTED);
    assert_eq!(report.diverged, None);
}

#[tokio::test]
async fn demo_on_sqlite_leaves_a_verifiable_chain_and_refuses_a_second_run() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("demo.db").display());
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    let report = bridle_apps::demo::run(config.clone(), Stores::open(&url).await.unwrap()).await.unwrap();
    assert_eq!(report.lines.join("\n"), EXPECTED);
    let stores = Stores::open(&url).await.unwrap();
    let verified = bridle_runtime::audit::verify(stores.audit.as_ref()).await.unwrap();
    assert!(verified.ok());
    assert!(bridle_apps::demo::run(config, stores).await.is_err());
}
