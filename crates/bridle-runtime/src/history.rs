//! Outcomes of executed actions: an operator's rating or a follow-up observation gives an
//! executed action (recorded by the gate, `gate/history.rs`) its outcome, audited as an
//! `action_outcome` event in the tenant's chain.

use bridle_core::audit::{AuditRecord, EventKind, Timings, Versions};
use bridle_core::history::{ActionRecord, Rating};
use bridle_core::ports::StoreError;

use crate::gate::Gate;

/// Rates the action of `job_id` in `tenant` (its note masked); `None` when no such action was
/// recorded (nothing is audited then).
pub async fn rate(
    gate: &Gate,
    tenant: &str,
    job_id: &str,
    rating: &Rating,
) -> Result<Option<ActionRecord>, StoreError> {
    // A note is an operator's free text: stored and audited masked, like a feedback comment.
    let note = rating.note.as_deref().filter(|n| !n.is_empty()).map(crate::feedback::mask_text).transpose()?;
    let rating = &Rating { note, ..rating.clone() };
    let event =
        |action: &ActionRecord| gate.stores().evidence(vec![outcome_event(gate, tenant, job_id, rating, action)]);
    // INVARIANT: the rating commits with its `action_outcome` event, or not at all.
    gate.stores().history.rate_action(tenant, job_id, rating, &event).await
}

/// The `action_outcome` event of `action` rated with `rating`.
fn outcome_event(gate: &Gate, tenant: &str, job_id: &str, rating: &Rating, action: &ActionRecord) -> AuditRecord {
    AuditRecord {
        kind: EventKind::ActionOutcome,
        call_id: job_id.to_owned(),
        at: rating.rated_at,
        tenant: tenant.to_owned(),
        subject: rating.rated_by.clone(),
        run_id: String::new(),
        incident: String::new(),
        tool: action.tool.clone(),
        policy_version: gate.config().policy.version().to_owned(),
        plan_hash: None,
        executor_identity: None,
        approval_id: None,
        approver: None,
        decision: None,
        code: None,
        reason: Some(format!(
            "{} ({}) for `{}` on `{}`{}",
            rating.outcome.as_str(),
            rating.source.as_str(),
            action.diagnosis,
            action.equipment,
            rating.note.as_deref().map(|n| format!(": {n}")).unwrap_or_default()
        )),
        timings: Timings::default(),
        auth: None,
        versions: Versions::tools_only(gate.config().registry.schema_hash()),
    }
}
