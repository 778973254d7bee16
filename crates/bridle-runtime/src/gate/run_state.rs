//! Gate step 2: may this run still act? Cancelled, past its deadline, out of calls.
//!
//! The kill switch (`killed`) and the cost circuit (`circuit_open`) join this step when they
//! land; both will be checked before the budget is debited.

use bridle_core::ports::{BudgetKind, Debit};
use bridle_core::{Code, Principal, Rejection, RunContext};
use serde_json::json;
use time::OffsetDateTime;

use super::{Gate, Stop};

pub(super) async fn check(
    gate: &Gate,
    principal: &Principal,
    run: &RunContext,
    dry_run: bool,
    now: OffsetDateTime,
) -> Result<(), Stop> {
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
