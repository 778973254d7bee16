//! Governance through the store: the agent registry at the policy step, the four versions on
//! every record, and the kill switch holding across two runtimes sharing one SQLite file or one
//! PostgreSQL database.

use std::sync::Arc;

use bridle_core::Code;
use bridle_core::audit::{EventKind, verify_chain};
use bridle_core::kill::KillScope;
use bridle_core::{Principal, RunContext};
use bridle_runtime::cancel::CancelState;
use bridle_runtime::runtime::{Env, Runtime, RuntimeBuilder};
use bridle_runtime::{CallRequest, Verdict};
use serde_json::json;

use super::support::{H, postgres_url, rejection, run};

fn snapshot() -> CallRequest {
    CallRequest::new("get_service_snapshot", json!({"service": "checkout"}))
}

#[tokio::test]
async fn a_call_names_a_registered_agent_or_is_denied_at_policy() {
    let h = H::checkout();
    let requester = h.who("requester-1");
    let r = run();
    // Registered, in its set: executes.
    let ok = h.gate.call(&requester, &r, &snapshot().for_agent("incident-responder")).await.unwrap();
    assert!(matches!(ok.verdict, Verdict::Ok { .. }), "{ok:?}");
    // Unregistered agent.
    let ghost = h.gate.call(&requester, &r, &snapshot().for_agent("ghost")).await.unwrap();
    let rej = rejection(&ghost);
    assert_eq!(rej.code, Code::PolicyDenied);
    assert_eq!(rej.detail.get("agent_rule"), Some(&json!("agent_not_registered")));
    // A tool outside the agent's set, although the principal could not call it either: the
    // agent rule decides first.
    let calc = CallRequest::new("calculate", json!({"expression": "1+1"})).for_agent("incident-responder");
    let rej = rejection(&h.gate.call(&h.who("workbench"), &r, &calc).await.unwrap());
    assert_eq!(rej.code, Code::PolicyDenied);
    assert_eq!(rej.detail.get("agent_rule"), Some(&json!("tool_not_allowed_for_agent")));
    // The same call naming no agent is decided by the principal's policy alone, as before (it
    // passes policy; this fixture's memory adapter has no workbench tools).
    let plain = CallRequest::new("calculate", json!({"expression": "1+1"}));
    let plain = h.gate.call(&h.who("workbench"), &r, &plain).await.unwrap();
    assert_eq!(plain.code(), Some(Code::AdapterFailed), "{plain:?}");
}

#[tokio::test]
async fn every_event_carries_agent_model_prompt_tool_schema_and_policy_versions() {
    let dir = tempfile::TempDir::new().unwrap();
    let h = H::checkout_sqlite(&dir).await;
    let requester = h.who("requester-1");
    let agent = h.config.agents.get("incident-responder").unwrap().clone();
    h.gate.call(&requester, &run(), &snapshot().for_agent("incident-responder")).await.unwrap();
    // A change: a tool call event and its approval request, both versioned.
    let change =
        CallRequest::new("scale_replicas", json!({"service": "checkout", "replicas": 3, "resource_version": 7}));
    let out = h.gate.call(&requester, &run(), &change.for_agent("incident-responder")).await.unwrap();
    assert_eq!(out.code(), Some(Code::ApprovalRequired));
    h.gate.call(&requester, &run(), &snapshot()).await.unwrap();
    let events = h.events().await;
    assert_eq!(verify_chain("tenant-a", &events), Ok(4));
    let schema_hash = h.config.registry.schema_hash();
    assert_eq!(schema_hash.len(), 64);
    for e in events.iter().take(3) {
        let v = &e.record.versions;
        assert_eq!(v.agent_id.as_deref(), Some("incident-responder"), "{e:?}");
        assert_eq!(v.model.as_deref(), Some(agent.model.as_str()));
        assert_eq!(v.prompt_hash.as_deref(), Some(agent.prompt_hash.as_str()));
        assert_eq!(v.tool_schema_hash.as_deref(), Some(schema_hash));
        assert_eq!(e.record.policy_version, h.config.policy.version());
    }
    assert_eq!(events[1].record.kind, EventKind::ApprovalRequested);
    // On no agent's behalf: the tool-schema and policy versions only.
    let last = &events[3].record;
    assert_eq!((last.versions.agent_id.as_ref(), last.versions.model.as_ref()), (None, None));
    assert_eq!(last.versions.tool_schema_hash.as_deref(), Some(schema_hash));
    // The export shows them.
    let line = serde_json::to_value(&events[0]).unwrap();
    for field in ["agent_id", "model", "prompt_hash", "tool_schema_hash", "policy_version"] {
        assert!(line.get(field).is_some_and(|v| v.is_string()), "{field} in {line}");
    }
}

#[test]
fn the_tool_schema_hash_changes_with_any_contract() {
    let a = bridle_runtime::bundled::checkout().unwrap();
    let text = bridle_runtime::bundled::CHECKOUT_TOML.replace("max = 5", "max = 6");
    let b = bridle_core::config::load(&text, &|p: &str| {
        bridle_runtime::bundled::checkout_file(p).ok_or_else(|| format!("no `{p}`"))
    })
    .unwrap();
    assert_ne!(a.registry.schema_hash(), b.registry.schema_hash());
    assert_eq!(a.registry.schema_hash(), bridle_runtime::bundled::checkout().unwrap().registry.schema_hash());
}

async fn runtime(url: &str) -> Runtime {
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    RuntimeBuilder::new(config)
        .tools(std::sync::Arc::new(bridle_tools::Workbench))
        .env(Env::default())
        .store_url(url)
        .build()
        .await
        .unwrap()
}

fn who(rt: &Runtime, name: &str) -> Principal {
    rt.config.principals[name].clone()
}

/// Kill on `a`, the very next call on `b` is `killed`; lifted on `b`, `a` calls again.
async fn kill_holds_across_replicas(a: Runtime, b: Runtime) {
    let requester = who(&a, "requester-1");
    let r = RunContext::new("run-kill", "inc-9");
    assert!(matches!(b.engine.gate.call(&requester, &r, &snapshot()).await.unwrap().verdict, Verdict::Ok { .. }));
    // Unfinished work: a pending approval, and a run of `a` in flight.
    let change =
        CallRequest::new("scale_replicas", json!({"service": "checkout", "replicas": 3, "resource_version": 7}));
    assert_eq!(b.engine.gate.call(&requester, &r, &change).await.unwrap().code(), Some(Code::ApprovalRequired));
    let config = a.run_config_for("tenant-a/run-live", &["incident-responder"]);
    let other = a.run_config_for("tenant-b/run-live", &[]);

    let report = a.kill("ops-lead", KillScope::tenant("tenant-a"), "bad deploy").await.unwrap();
    assert!(report.changed);
    assert_eq!(report.unfinished.pending_approvals.len(), 1, "{report:?}");
    assert_eq!(report.unfinished.cancelled_runs, ["tenant-a/run-live"]);
    assert_eq!(config.cancel.state(), CancelState::CancelRequested);
    assert_eq!(other.cancel.state(), CancelState::Running);

    let killed = b.engine.gate.call(&requester, &r, &snapshot()).await.unwrap();
    let rej = rejection(&killed);
    assert_eq!(rej.code, Code::Killed);
    assert!(rej.message.contains("bad deploy"), "{}", rej.message);
    // Another tenant is not covered.
    let viewer_b = Principal::new("viewer-b", "tenant-b", &["checkout"], &["service:read"]);
    assert_ne!(b.engine.gate.call(&viewer_b, &r, &snapshot()).await.unwrap().code(), Some(Code::Killed));

    // An agent switch covers only that agent's calls.
    b.lift_kill("ops-lead", KillScope::tenant("tenant-a"), "fixed").await.unwrap();
    a.kill("ops-lead", KillScope::agent("incident-responder"), "prompt regression").await.unwrap();
    let as_agent = b.engine.gate.call(&requester, &r, &snapshot().for_agent("incident-responder")).await.unwrap();
    assert_eq!(as_agent.code(), Some(Code::Killed));
    assert!(matches!(b.engine.gate.call(&requester, &r, &snapshot()).await.unwrap().verdict, Verdict::Ok { .. }));
    let lifted = b.lift_kill("ops-lead", KillScope::agent("incident-responder"), "rolled back").await.unwrap();
    assert!(lifted.changed);
    assert!(!b.lift_kill("ops-lead", KillScope::agent("incident-responder"), "again").await.unwrap().changed);
    let again = a.engine.gate.call(&requester, &r, &snapshot().for_agent("incident-responder")).await.unwrap();
    assert!(matches!(again.verdict, Verdict::Ok { .. }), "{again:?}");

    a.shutdown().await;
    b.shutdown().await;
}

async fn kill_events(url: &str) -> Vec<EventKind> {
    let stores = bridle_runtime::store::Stores::open(url).await.unwrap();
    let events = bridle_runtime::audit::export(stores.audit.as_ref(), Some("tenant-a")).await.unwrap();
    verify_chain("tenant-a", &events).unwrap();
    events
        .iter()
        .map(|e| e.record.kind)
        .filter(|k| matches!(k, EventKind::KillSwitchSet | EventKind::KillSwitchLifted))
        .collect()
}

const KILL_SEQUENCE: [EventKind; 4] =
    [EventKind::KillSwitchSet, EventKind::KillSwitchLifted, EventKind::KillSwitchSet, EventKind::KillSwitchLifted];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_kill_on_one_replica_holds_on_the_other_at_its_next_call() {
    let dir = tempfile::TempDir::new().unwrap();
    let url = format!("sqlite://{}", dir.path().join("shared.db").display());
    kill_holds_across_replicas(runtime(&url).await, runtime(&url).await).await;
    assert_eq!(kill_events(&url).await, KILL_SEQUENCE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_kill_on_one_replica_holds_on_the_other_at_its_next_call() {
    let Some(base) = postgres_url() else { return };
    let admin = sqlx::PgPool::connect(&base).await.unwrap();
    let schema = format!("bridle_kill_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options[search_path]={schema}");
    // (A failing run leaves its schema behind; every run uses a fresh one.)
    kill_holds_across_replicas(runtime(&url).await, runtime(&url).await).await;
    let kinds = kill_events(&url).await;
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await.unwrap();
    assert_eq!(kinds, KILL_SEQUENCE);
}

#[tokio::test]
async fn a_bounded_kill_cache_is_refreshed_by_this_process_at_once() {
    let text = format!("{}\n[kill_switch]\ncache_ms = 1000\n", bridle_runtime::bundled::CHECKOUT_TOML);
    let config = bridle_core::config::load(&text, &|p: &str| {
        bridle_runtime::bundled::checkout_file(p).ok_or_else(|| format!("no `{p}`"))
    })
    .unwrap();
    assert_eq!(config.kill_switch.cache, std::time::Duration::from_secs(1));
    let h = H::new(config, bridle_runtime::store::Stores::memory());
    let requester = h.who("requester-1");
    assert!(h.gate.call(&requester, &run(), &snapshot()).await.unwrap().code().is_none());
    h.kills.set(None, None, "ops", KillScope::all(), "drill").await.unwrap();
    assert_eq!(h.gate.call(&requester, &run(), &snapshot()).await.unwrap().code(), Some(Code::Killed));
    let bad = bridle_runtime::bundled::CHECKOUT_TOML.to_owned() + "\n[kill_switch]\ncache_ms = 1001\n";
    let err = bridle_core::config::load(&bad, &|p: &str| {
        bridle_runtime::bundled::checkout_file(p).ok_or_else(|| format!("no `{p}`"))
    })
    .unwrap_err();
    assert!(err.to_string().contains("kill_switch.cache_ms"), "{err}");
}
