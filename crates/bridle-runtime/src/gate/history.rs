//! Gate step 7, the action history: a change that carries a history key (`CallSignals::history`,
//! set by the proposer: the diagnosis it answers and the equipment class) is judged against what
//! the same action did for the same diagnosis on the same class (`bridle_core::history::assess`
//! over the `ActionHistory` port): a failure within `[history] failure_window_hours` raises it to
//! `approval`, the failures attached to the approval request; with `auto_after_successes`, a record
//! of successes makes an `approval` tool eligible for `auto` when no other rule raised it (the
//! automatic-change limit still applies after this). Once executed, the change is recorded
//! (unrated) for its outcome to be given later.

use bridle_core::Principal;
use bridle_core::contract::{ApprovalLevel, Mode, ToolContract};
use bridle_core::history::{self, ActionRecord};
use bridle_core::level::{CallSignals, LevelDecision, Reason};
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::{Gate, Stop};

/// Judges the proposal; the context to attach to an approval request, if the history escalated.
pub(super) async fn check(
    gate: &Gate,
    principal: &Principal,
    tool: &ToolContract,
    signals: &CallSignals,
    level: &mut LevelDecision,
    now: OffsetDateTime,
) -> Result<Option<Value>, Stop> {
    let Some(key) = &signals.history else { return Ok(None) };
    if tool.mode != Mode::Change {
        return Ok(None);
    }
    let settings = &gate.config.history;
    let since = now - settings.failure_window;
    let records = gate
        .stores
        .history
        .action_history(&principal.tenant, &tool.name, &key.diagnosis, &key.equipment_class, since)
        .await?;
    let assessment = history::assess(&records, settings, now);
    if assessment.escalates() {
        level.level = level.level.max(ApprovalLevel::Approval);
        level.reasons.push(Reason::HistoryFailures {
            tool: tool.name.clone(),
            failures: assessment.failures.len(),
            diagnosis: key.diagnosis.clone(),
            equipment_class: key.equipment_class.clone(),
            hours: settings.failure_window.whole_hours(),
        });
        return Ok(Some(json!({"history": {
            "tool": tool.name,
            "diagnosis": key.diagnosis,
            "equipment_class": key.equipment_class,
            "failures": assessment.failures,
            "successes": assessment.successes,
        }})));
    }
    if assessment.auto_eligible
        && tool.approval == ApprovalLevel::Approval
        && level.level == ApprovalLevel::Approval
        && level.reasons.is_empty()
    {
        level.level = ApprovalLevel::Auto;
        level.reasons.push(Reason::HistoryAuto {
            tool: tool.name.clone(),
            successes: assessment.successes,
            diagnosis: key.diagnosis.clone(),
            equipment_class: key.equipment_class.clone(),
        });
    }
    Ok(None)
}

/// Records an executed change that carried a history key, unrated.
pub(super) async fn record(
    gate: &Gate,
    principal: &Principal,
    tool: &ToolContract,
    args: &Value,
    signals: &CallSignals,
    job_id: &str,
    now: OffsetDateTime,
) -> Result<(), Stop> {
    let Some(key) = &signals.history else { return Ok(()) };
    let (_, equipment) = tool.resource_of(&principal.tenant, args);
    let action = ActionRecord {
        tenant: principal.tenant.clone(),
        job_id: job_id.to_owned(),
        tool: tool.name.clone(),
        diagnosis: key.diagnosis.clone(),
        equipment_class: key.equipment_class.clone(),
        equipment,
        executed_at: now,
        rating: None,
    };
    Ok(gate.stores.history.record_action(&action).await?)
}
