//! Step 7, continued: the limit on automatic changes per resource (`[levels] auto_limit`).
//!
//! A `change` that would run at `auto` takes a slot of its resource's window in the store's
//! [`bridle_core::ports::ActionLedger`] (one atomic step, shared by replicas); once the window
//! is full, the call needs `approval` instead, with the reason in its rejection and audit event.
//! A slot is taken before execution, so a change that then fails still counts: the limit errs
//! towards more human review, never less. A dry run only counts. Tools without a resource
//! parameter are not limited.

use bridle_core::Principal;
use bridle_core::contract::{ApprovalLevel, Mode, ToolContract};
use bridle_core::level::{self, LevelDecision};
use serde_json::Value;
use time::OffsetDateTime;

use super::{Gate, Stop};

/// Escalates `level` to `approval` when the resource's window of automatic changes is full.
pub(super) async fn check(
    gate: &Gate,
    principal: &Principal,
    tool: &ToolContract,
    args: &Value,
    dry_run: bool,
    level: &mut LevelDecision,
    now: OffsetDateTime,
) -> Result<(), Stop> {
    let Some(limit) = gate.config.levels.auto_limit else { return Ok(()) };
    if tool.mode != Mode::Change || level.level != ApprovalLevel::Auto {
        return Ok(());
    }
    let Some(resource) = &tool.resource else { return Ok(()) };
    let name = match args.get(&resource.param) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => return Ok(()),
    };
    // The ledger indexes the key; a resource name from the arguments is unbounded, so a long
    // key is stored hashed.
    let key = bridle_core::bounds::hashed_key(&level::auto_limit_key(&resource.kind, &name)).into_owned();
    let ledger = &gate.stores.actions;
    let room = if dry_run {
        ledger.count_auto(&principal.tenant, &key, now, limit.window).await? < u64::from(limit.max)
    } else {
        ledger.admit_auto(&principal.tenant, &key, now, limit.window, limit.max).await?
    };
    if !room {
        level.level = ApprovalLevel::Approval;
        level.reasons.push(level::auto_limit_reached(&name, &limit));
    }
    Ok(())
}
