//! Issue 19's store invariants seen through the gate, on every backend: concurrent identical
//! calls share one pending request (one webhook), keyed retries get honest answers while and
//! after their job runs, and a store whose audit append fails makes the call an error that
//! changed nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, ensure};
use async_trait::async_trait;
use bridle_core::Code;
use bridle_core::approval::ApprovalRequest;
use bridle_core::job::Job;
use bridle_core::kill::KillScope;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use bridle_runtime::adapter::MemoryAdapter;
use bridle_runtime::engine::Engine;
use bridle_runtime::gate::CallRequest;
use bridle_runtime::notify::ApprovalNotifier;
use bridle_runtime::store::{MemoryStore, Stores};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::suite::support::{H, run};

fn change(replicas: i64) -> Value {
    json!({"service": "checkout", "replicas": replicas, "resource_version": 7})
}

fn checkout(stores: Stores) -> anyhow::Result<H> {
    Ok(H::new(bridle_runtime::bundled::checkout()?, stores))
}

/// Counts the pending requests it is told of.
#[derive(Default)]
struct Counter(AtomicUsize, std::sync::Mutex<Vec<String>>);

impl ApprovalNotifier for Counter {
    fn approval_requested(&self, request: &ApprovalRequest) {
        self.0.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut ids) = self.1.lock() {
            ids.push(request.id.clone());
        }
    }
}

/// 32 concurrent identical calls that need an approval: one pending request, every caller
/// gets its id, and the notifier (the webhook) hears of it once.
pub(super) async fn thirty_two_identical_calls_share_one_pending_request_and_one_webhook(
    stores: Stores,
) -> anyhow::Result<()> {
    let h = checkout(stores)?;
    let counter = Arc::new(Counter::default());
    let mut h = h;
    h.rebuild(|b| b.notifier(counter.clone()));
    let gate = h.gate.clone();
    let me = h.who("requester-1");
    let tasks: Vec<_> = (0..32)
        .map(|_| {
            let (gate, me) = (gate.clone(), me.clone());
            tokio::spawn(async move { gate.call(&me, &run(), &CallRequest::new("scale_replicas", change(3))).await })
        })
        .collect();
    let mut ids = Vec::new();
    for t in tasks {
        let out = t.await??;
        ensure!(out.code() == Some(Code::ApprovalRequired), "{out:?}");
        ids.push(out.approval_id.context("an approval id")?);
    }
    let first = ids.first().context("32 answers")?.clone();
    ensure!(ids.iter().all(|id| *id == first), "approval ids: {ids:?}");
    let pending = gate.stores().approvals.list_pending("tenant-a", h.clock_now()).await?;
    ensure!(pending.len() == 1 && pending[0].id == first, "{pending:?}");
    ensure!(counter.0.load(Ordering::SeqCst) == 1, "notified {:?}", counter.1.lock().map(|v| v.clone()));
    Ok(())
}

/// An adapter whose changes wait until released: holds a job in flight.
struct Held {
    inner: Arc<MemoryAdapter>,
    gate: Semaphore,
}

#[async_trait]
impl Adapter for Held {
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.inner.read(call).await
    }

    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        let permit = self.gate.acquire().await.map_err(|e| AdapterError::Failed(e.to_string()))?;
        permit.forget();
        self.inner.change(call).await
    }

    async fn outcome(&self, job: &Job) -> Result<Outcome, AdapterError> {
        self.inner.outcome(job).await
    }
}

/// A keyed retry while its job is dispatched gets `in_progress` with the job id (never
/// `outcome_unknown`); once the job finished, the stored result (never `approval_replayed`).
pub(super) async fn keyed_retries_during_and_after_a_job_get_in_progress_then_the_result(
    stores: Stores,
) -> anyhow::Result<()> {
    let h = checkout(stores)?;
    let (me, r) = (h.who("requester-1"), run());
    h.approved("a-1", &change(3), &r).await;
    let held = Arc::new(Held { inner: h.adapter.clone(), gate: Semaphore::new(0) });
    let gate =
        Engine::builder(h.config.clone(), h.gate.stores().clone(), held.clone()).clock(h.clock.clone()).gate()?;
    let call = CallRequest::new("scale_replicas", change(3)).with_key("k-1");
    let first = tokio::spawn({
        let (gate, me, r, call) = (gate.clone(), me.clone(), r.clone(), call.clone());
        async move { gate.call(&me, &r, &call).await }
    });
    // Wait until the first call's job holds the key (it is dispatched and waiting).
    let mut job = None;
    for _ in 0..500 {
        job = gate.stores().jobs.find_by_key("tenant-a", "requester-1", "k-1").await?;
        if job.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let job = job.context("the first call's job")?;
    // Retries while it runs, some at once.
    let retries: Vec<_> = (0..8)
        .map(|_| {
            let (gate, me, r, call) = (gate.clone(), me.clone(), r.clone(), call.clone());
            tokio::spawn(async move { gate.call(&me, &r, &call).await })
        })
        .collect();
    for t in retries {
        let out = t.await??;
        ensure!(out.code() == Some(Code::InProgress), "{out:?}");
        let rej = crate::suite::support::rejection(&out);
        ensure!(rej.detail["job_id"] == job.id.as_str(), "{rej:?}");
    }
    held.gate.add_permits(1);
    let done = first.await??;
    ensure!(done.code().is_none(), "{done:?}");
    let after = gate.call(&me, &r, &call).await?;
    ensure!(after.idempotent_replay && after.result() == done.result(), "{after:?}");
    ensure!(h.adapter.changes_applied() == 1);
    Ok(())
}

/// 16 concurrent keyed calls of one approved plan race past step 8: exactly one executes; every
/// other answer is `in_progress` or the stored result, never `approval_replayed`,
/// `approval_required` or `outcome_unknown`; afterwards every retry gets the stored result.
pub(super) async fn racing_keyed_calls_never_get_approval_replayed(stores: Stores) -> anyhow::Result<()> {
    let h = checkout(stores)?;
    let (me, r) = (h.who("requester-1"), run());
    h.approved("a-1", &change(3), &r).await;
    let call = CallRequest::new("scale_replicas", change(3)).with_key("k-race");
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let (gate, me, r, call) = (h.gate.clone(), me.clone(), r.clone(), call.clone());
            tokio::spawn(async move { gate.call(&me, &r, &call).await })
        })
        .collect();
    let (mut executed, mut replayed, mut running) = (0, 0, 0);
    for t in tasks {
        let out = t.await??;
        match out.code() {
            None if out.idempotent_replay => replayed += 1,
            None => executed += 1,
            Some(Code::InProgress) => running += 1,
            other => anyhow::bail!("unexpected answer {other:?}: {out:?}"),
        }
    }
    ensure!(executed == 1, "executed {executed}, replayed {replayed}, in progress {running}");
    ensure!(h.adapter.changes_applied() == 1);
    let after = h.gate.call(&me, &r, &call).await?;
    ensure!(after.idempotent_replay, "{after:?}");
    Ok(())
}

/// A call that needs an approval, on a store whose audit append fails: an error (which the
/// server maps to `internal_error`), and no pending request, no webhook.
#[tokio::test]
async fn an_approval_request_whose_event_cannot_be_written_is_an_error_and_is_not_stored() -> anyhow::Result<()> {
    let m = Arc::new(MemoryStore::new());
    let h = checkout(Stores::from_backend(m.clone(), "memory"))?;
    let counter = Arc::new(Counter::default());
    let mut h = h;
    h.rebuild(|b| b.notifier(counter.clone()));
    let gate = h.gate.clone();
    m.fail_audit_appends(true);
    let me = h.who("requester-1");
    let out = gate.call(&me, &run(), &CallRequest::new("scale_replicas", change(3))).await;
    ensure!(out.is_err(), "{out:?}");
    ensure!(gate.stores().approvals.list_pending("tenant-a", h.clock_now()).await?.is_empty());
    ensure!(counter.0.load(Ordering::SeqCst) == 0);
    Ok(())
}

/// A granted, keyed change on a store whose audit append fails: an error, the approval is not
/// consumed, no job is stored and nothing reaches the adapter.
#[tokio::test]
async fn a_change_whose_dispatch_event_cannot_be_written_consumes_nothing_and_sends_nothing() -> anyhow::Result<()> {
    let m = Arc::new(MemoryStore::new());
    let h = checkout(Stores::from_backend(m.clone(), "memory"))?;
    let (me, r) = (h.who("requester-1"), run());
    h.approved("a-1", &change(3), &r).await;
    m.fail_audit_appends(true);
    let out = h.gate.call(&me, &r, &CallRequest::new("scale_replicas", change(3)).with_key("k-1")).await;
    ensure!(out.is_err(), "{out:?}");
    let a = h.gate.stores().approvals.get_request("tenant-a", "a-1").await?.context("stored")?;
    ensure!(a.status == bridle_core::approval::ApprovalStatus::Granted, "{a:?}");
    ensure!(h.gate.stores().jobs.find_by_key("tenant-a", "requester-1", "k-1").await?.is_none());
    ensure!(h.adapter.changes_applied() == 0);
    Ok(())
}

/// A kill switch whose event cannot be written is not set, and the caller gets an error.
#[tokio::test]
async fn a_kill_switch_whose_event_cannot_be_written_is_an_error_and_is_not_set() -> anyhow::Result<()> {
    let m = Arc::new(MemoryStore::new());
    let h = checkout(Stores::from_backend(m.clone(), "memory"))?;
    m.fail_audit_appends(true);
    let set = h.kills.set(None, None, "ops", KillScope::tenant("tenant-a"), "stop").await;
    ensure!(set.is_err(), "{set:?}");
    ensure!(h.gate.stores().kills.active_kills().await?.is_empty());
    m.fail_audit_appends(false);
    h.kills.set(None, None, "ops", KillScope::tenant("tenant-a"), "stop").await?;
    ensure!(h.gate.stores().kills.active_kills().await?.len() == 1);
    Ok(())
}
