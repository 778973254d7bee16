//! Runs and taint in memory: the run records with their leases, the run and actor taints, all
//! under the store's one lock (so an admission is one atomic step, as on the SQL stores).

use async_trait::async_trait;
use bridle_core::ports::{RunFlags, RunLedger, StoreResult, Taint, TaintMark, TaintVia};
use bridle_core::runs::{self, Admitted, RunAdmit, RunRecord, RunRefusal};
use time::OffsetDateTime;

use super::{Inner, MemoryStore, key};

/// A run's record and the leases of its calls in flight (call id, lapse).
#[derive(Debug, Clone)]
pub(super) struct MemoryRun {
    record: RunRecord,
    leases: Vec<(String, OffsetDateTime)>,
}

#[async_trait]
impl RunLedger for MemoryStore {
    async fn admit(&self, admit: &RunAdmit<'_>) -> StoreResult<Result<Admitted, RunRefusal>> {
        let mut inner = self.lock()?;
        if admit.kill_check
            && let Some(switch) = bridle_core::kill::covering_earliest(inner.kills.values(), admit.tenant, admit.agent)
        {
            return Ok(Err(RunRefusal::Killed(switch.clone())));
        }
        let run = inner.runs.entry(key(admit.tenant, admit.run_id)).or_insert_with(|| MemoryRun {
            record: RunRecord::open(admit.tenant, admit.run_id, admit.subject, admit.agent, admit.now),
            leases: Vec::new(),
        });
        if let Err(refusal) = runs::judge(&run.record, admit.subject, &admit.limits, admit.now) {
            if let Some(state) = refusal.state() {
                run.record.state = state;
            }
            return Ok(Err(refusal));
        }
        if let (Some(limit), Some(lease)) = (admit.limits.concurrency, admit.lease) {
            run.leases.retain(|(_, until)| *until > admit.now);
            let in_flight = u64::try_from(run.leases.len()).unwrap_or(u64::MAX);
            if in_flight >= u64::from(limit) {
                return Ok(Err(RunRefusal::Busy { in_flight, limit }));
            }
            run.leases.push((lease.call_id.to_owned(), lease.until));
        }
        run.record.calls = run.record.calls.saturating_add(1);
        run.record.last_call_at = admit.now;
        let record = run.record.clone();
        let taint = (admit.taint_check.as_ref())
            .and_then(|c| taint_in(&inner, admit.tenant, admit.run_id, c.actor.as_deref(), c.since));
        Ok(Ok(Admitted { record, taint }))
    }

    async fn run(&self, tenant: &str, run_id: &str) -> StoreResult<Option<RunRecord>> {
        Ok(self.lock()?.runs.get(&key(tenant, run_id)).map(|r| r.record.clone()))
    }

    async fn release(&self, tenant: &str, run_id: &str, call_id: &str) -> StoreResult<()> {
        if let Some(run) = self.lock()?.runs.get_mut(&key(tenant, run_id)) {
            run.leases.retain(|(id, _)| id != call_id);
        }
        Ok(())
    }
}

#[async_trait]
impl RunFlags for MemoryStore {
    async fn taint(&self, mark: &TaintMark<'_>) -> StoreResult<()> {
        let mut inner = self.lock()?;
        inner.taints.entry(key(mark.tenant, mark.run_id)).or_insert_with(|| mark.reason.to_owned());
        if let Some(actor) = mark.actor {
            let entry = inner.actor_taints.entry(key(mark.tenant, actor)).or_insert((mark.at, String::new()));
            if entry.1.is_empty() || mark.at >= entry.0 {
                *entry = (mark.at, mark.reason.to_owned());
            }
        }
        Ok(())
    }

    async fn tainted(
        &self,
        tenant: &str,
        run_id: &str,
        actor: Option<&str>,
        since: OffsetDateTime,
    ) -> StoreResult<Option<Taint>> {
        Ok(taint_in(&*self.lock()?, tenant, run_id, actor, since))
    }
}

/// The run's taint, else the actor's recorded at or after `since`.
fn taint_in(inner: &Inner, tenant: &str, run_id: &str, actor: Option<&str>, since: OffsetDateTime) -> Option<Taint> {
    if let Some(reason) = inner.taints.get(&key(tenant, run_id)) {
        return Some(Taint { reason: reason.clone(), via: TaintVia::Run });
    }
    actor
        .and_then(|a| inner.actor_taints.get(&key(tenant, a)))
        .filter(|(at, _)| *at >= since)
        .map(|(_, reason)| Taint { reason: reason.clone(), via: TaintVia::Actor })
}
