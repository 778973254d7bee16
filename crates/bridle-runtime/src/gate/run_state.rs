//! Gate step 2: may this run still act? Another agent than the credential's, cancelled, killed,
//! then the run's own record: another subject's run, past its deadline, out of calls, too many
//! calls in flight.
//!
//! The kill switch is read from the store on every call, so a switch set through any replica
//! holds on every replica's next call. The read is part of the run's admission
//! (`RunAdmit::kill_check`): its upsert probes the covering switches and counts the call only
//! when none is on, so the kill switch, the run record and its limits cost one statement
//! together, and a killed call counts nothing. With `[kill_switch] cache_ms = N` (at most 1000) one read of all
//! switches is reused for N ms at most, checked before the admission: a switch then takes effect
//! within N ms. A dry run reads the switches (`KillSwitches::kill_covering`) and the run without
//! admitting. A store that cannot answer is an error, never an allow.
//!
//! The run is the server's record (`RunLedger::admit`, one atomic step per store): the first call
//! opens it bound to its subject, and every call is counted against `[limits]` as they apply to
//! the tenant and the call's agent. A call to a change tool also reads the run's (or its
//! actor's) taint in the admission (`RunAdmit::taint_check`), for step 7. Under a concurrency
//! limit the call holds a lease until `Gate::call` releases it (or it lapses after the longest
//! tool timeout plus a grace).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bridle_core::kill::KillSwitch;
use bridle_core::ports::Taint;
use bridle_core::runs::{self, Lease, RunAdmit, TaintCheck};
use bridle_core::{Code, Principal, Rejection, RunContext};

use super::identity::Who;
use super::trace::Trace;
use super::{CallRequest, Gate, Stop};

/// How long a lease outlives the longest tool timeout: a process that died mid-call frees its
/// run's slot this long after the call could have ended.
const LEASE_GRACE: Duration = Duration::from_secs(60);

/// One read of every switch, reused for at most its bound (zero: never reused).
pub(crate) struct KillCache {
    bound: Duration,
    last: Mutex<Option<(Instant, Arc<Vec<KillSwitch>>)>>,
}

impl KillCache {
    pub(crate) fn new(bound: Duration) -> Self {
        Self { bound, last: Mutex::new(None) }
    }

    /// Forgets the cached read (after this process sets or lifts a switch).
    pub(crate) fn clear(&self) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Whether every call reads the switches (no cache): the admission then reads them in its
    /// own transaction.
    fn reads_every_call(&self) -> bool {
        self.bound.is_zero()
    }

    async fn covering(&self, gate: &Gate, tenant: &str, agent: Option<&str>) -> Result<Option<KillSwitch>, Stop> {
        if self.reads_every_call() {
            return Ok(gate.stores.kills.kill_covering(tenant, agent).await?);
        }
        let fresh = {
            let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            last.as_ref().filter(|(at, _)| at.elapsed() < self.bound).map(|(_, all)| all.clone())
        };
        let all = match fresh {
            Some(all) => all,
            None => {
                let all = Arc::new(gate.stores.kills.active_kills().await?);
                *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some((Instant::now(), all.clone()));
                all
            }
        };
        Ok(bridle_core::kill::covering_earliest(all.iter(), tenant, agent).cloned())
    }
}

/// Step 2; with the call admitted, the taint check its admission made for a call that can
/// escalate on taint ([`Gate::taint_check`]) and what it read (`None`: no check was made).
pub(super) async fn check(
    gate: &Gate,
    principal: &Principal,
    run: &RunContext,
    req: &CallRequest,
    who: &Who,
    t: &mut Trace,
) -> Result<Option<(TaintCheck, Option<Taint>)>, Stop> {
    // Read in the admission's transaction when nothing is cached and the call is counted.
    let kill_check = gate.kill_cache.reads_every_call() && !req.dry_run;
    if !kill_check && let Some(switch) = gate.kill_cache.covering(gate, &principal.tenant, who.agent.as_deref()).await?
    {
        return Err(switch.rejection().into());
    }
    who.mismatch()?;
    if run.cancelled {
        return Err(Rejection::new(Code::Cancelled, format!("run `{}` was cancelled", run.run_id)).into());
    }
    let limits = gate.config.limits.for_call(&principal.tenant, who.agent.as_deref());
    let runs = &gate.stores.runs;
    if req.dry_run {
        // Decided read-only: nothing counted, no lease taken.
        if let Some(record) = runs.run(&principal.tenant, &run.run_id).await? {
            runs::judge(&record, &principal.subject, &limits, t.now).map_err(|r| r.rejection(&run.run_id))?;
        }
        return Ok(None);
    }
    let lease = limits.concurrency.map(|_| Lease { call_id: &t.call_id, until: t.now + gate.lease_ttl() });
    let admit = RunAdmit {
        tenant: &principal.tenant,
        run_id: &run.run_id,
        subject: &principal.subject,
        agent: who.agent.as_deref(),
        now: t.now,
        limits,
        lease,
        kill_check,
        taint_check: gate.taint_check(principal, run, who, &req.tool, t.now),
    };
    let admitted = runs.admit(&admit).await?.map_err(|r| r.rejection(&run.run_id))?;
    t.leased = lease.is_some();
    Ok(admit.taint_check.map(|check| (check, admitted.taint)))
}

impl Gate {
    /// How long a call's lease on its run's concurrency lasts at most: the longest tool timeout
    /// plus [`LEASE_GRACE`].
    pub(crate) fn lease_ttl(&self) -> Duration {
        let longest = self.config.registry.iter().map(|t| t.timeout).max().unwrap_or_default();
        longest.saturating_add(LEASE_GRACE)
    }
}
