//! Gate step 2: may this run still act? Killed, cancelled, past its deadline, out of calls.
//!
//! The kill switch is read from the store on every call (`KillSwitches::kill_covering`, one
//! indexed read), so a switch set through any replica holds on every replica's next call. With
//! `[kill_switch] cache_ms = N` (at most 1000) one read of all switches is reused for N ms at
//! most: a switch then takes effect within N ms. A store that cannot answer is an error, never
//! an allow. The kill check comes before the budget debit, so a killed call spends nothing.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bridle_core::kill::KillSwitch;
use bridle_core::ports::{BudgetKind, Debit};
use bridle_core::{Code, Principal, Rejection, RunContext};
use serde_json::json;
use time::OffsetDateTime;

use super::{CallRequest, Gate, Stop};

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
    now: OffsetDateTime,
) -> Result<(), Stop> {
    let dry_run = req.dry_run;
    if let Some(switch) = gate.kill_cache.covering(gate, &principal.tenant, req.agent.as_deref()).await? {
        return Err(killed(&switch).into());
    }
    if run.cancelled {
        return Err(Rejection::new(Code::Cancelled, format!("run `{}` was cancelled", run.run_id)).into());
    }
    if let Some(deadline) = run.deadline
        && now >= deadline
    {
        return Err(Rejection::new(Code::DeadlineExceeded, format!("run `{}` passed its deadline", run.run_id)).into());
    }
    let Some(limit) = run.call_limit else { return Ok(()) };
    let budgets = &gate.stores.budgets;
    let (used, fits) = if dry_run {
        let used = budgets.used(&principal.tenant, &run.run_id, BudgetKind::Calls).await?;
        (used, used < limit)
    } else {
        match budgets.debit(&principal.tenant, &run.run_id, BudgetKind::Calls, 1, limit).await? {
            Debit::Accepted { used } => (used, true),
            Debit::Exhausted { used } => (used, false),
        }
    };
    if fits {
        Ok(())
    } else {
        Err(Rejection::new(Code::BudgetExhausted, format!("run `{}` used all {limit} of its tool calls", run.run_id))
            .with_detail(json!({"budget": BudgetKind::Calls.as_str(), "used": used, "limit": limit}))
            .into())
    }
}
