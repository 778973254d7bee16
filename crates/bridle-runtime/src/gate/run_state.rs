//! Gate step 2: may this run still act? Killed, another agent than the credential's, cancelled,
//! then the run's own record: another subject's run, past its deadline, out of calls, too many
//! calls in flight.
//!
//! The kill switch is read from the store on every call (`KillSwitches::kill_covering`, one
//! indexed read), so a switch set through any replica holds on every replica's next call. With
//! `[kill_switch] cache_ms = N` (at most 1000) one read of all switches is reused for N ms at
//! most: a switch then takes effect within N ms. A store that cannot answer is an error, never
//! an allow. The kill check comes before the run's admission, so a killed call spends nothing.
//!
//! The run is the server's record (`RunLedger::admit`, one atomic step per store): the first call
//! opens it bound to its subject, and every call is counted against `[limits]` as they apply to
//! the tenant and the call's agent. Under a concurrency limit the call holds a lease until
//! `Gate::call` releases it (or it lapses after the longest tool timeout plus a grace).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bridle_core::kill::KillSwitch;
use bridle_core::runs::{self, Lease, RunAdmit};
use bridle_core::{Code, Principal, Rejection, RunContext};
use serde_json::json;
use time::OffsetDateTime;

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

    async fn covering(&self, gate: &Gate, tenant: &str, agent: Option<&str>) -> Result<Option<KillSwitch>, Stop> {
        if self.bound.is_zero() {
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
        Ok(bridle_core::kill::covering(&all, tenant, agent).cloned())
    }
}

/// The `killed` rejection for a call covered by `switch`.
pub(crate) fn killed(switch: &KillSwitch) -> Rejection {
    Rejection::new(
        Code::Killed,
        format!("kill switch on for {} since {}: {}", switch.scope.describe(), rfc3339(switch.set_at), switch.reason),
    )
    .with_detail(json!({"scope": switch.scope, "set_by": switch.set_by, "set_at": rfc3339(switch.set_at)}))
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

pub(super) async fn check(
    gate: &Gate,
    principal: &Principal,
    run: &RunContext,
    req: &CallRequest,
    who: &Who,
    t: &mut Trace,
) -> Result<(), Stop> {
    if let Some(switch) = gate.kill_cache.covering(gate, &principal.tenant, who.agent.as_deref()).await? {
        return Err(killed(&switch).into());
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
        return Ok(());
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
    };
    runs.admit(&admit).await?.map_err(|r| r.rejection(&run.run_id))?;
    t.leased = lease.is_some();
    Ok(())
}

impl Gate {
    /// How long a call's lease on its run's concurrency lasts at most: the longest tool timeout
    /// plus [`LEASE_GRACE`].
    pub(crate) fn lease_ttl(&self) -> Duration {
        let longest = self.config.registry.iter().map(|t| t.timeout).max().unwrap_or_default();
        longest.saturating_add(LEASE_GRACE)
    }
}
