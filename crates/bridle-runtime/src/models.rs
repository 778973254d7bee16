//! The model registry's jobs: registering a model file (its SHA-256 recorded), validating it by
//! replaying held-out decisions (`replay.rs`), and promoting it one stage forward
//! (candidate → canary → stable) only when that validation passes.
//!
//! Held-out decisions are the tenant's most recent replayable records (the model was asked: the
//! input is a message list) that carry no feedback, so the decisions the analysis learned from
//! are not the ones that judge the model. A promotion is a compare-and-set on the stage, then a
//! `model_promoted` audit event in the tenant's chain, then the `model_promoted` hooks. A refused
//! promotion changes nothing and says why.

use std::collections::BTreeSet;
use std::sync::Arc;

use bridle_core::audit::{AuditRecord, EventKind, Timings};
use bridle_core::contract::Registry;
use bridle_core::decision::DecisionRecord;
use bridle_core::models::{self as core, ModelEntry, Refusal, Stage, Validation};
use bridle_core::ports::StoreError;
use bridle_core::replay::Tolerance;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::feedback::hooks::{HookResult, LoopEvent, LoopHook, MODEL_PROMOTED, fire};
use crate::llm::{LlmClient, Message};
use crate::replay::{ReplayReport, Replayer};
use crate::store::Stores;

/// SHA-256 (lowercase hex) of a model file's bytes.
pub fn file_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A new candidate entry for the model file at `path` with these `bytes`.
pub fn candidate(tenant: &str, name: &str, path: &str, bytes: &[u8], by: &str, now: OffsetDateTime) -> ModelEntry {
    ModelEntry {
        tenant: tenant.to_owned(),
        name: name.to_owned(),
        config_path: path.to_owned(),
        config_hash: file_hash(bytes),
        stage: Stage::Candidate,
        registered_by: by.to_owned(),
        registered_at: now,
        updated_at: now,
        validation: None,
    }
}

/// The tenant's last `n` replayable decisions without feedback (only `agent`'s when given),
/// oldest first.
pub async fn held_out(
    stores: &Stores,
    tenant: &str,
    n: u32,
    agent: Option<&str>,
) -> Result<Vec<DecisionRecord>, StoreError> {
    let rated: BTreeSet<String> =
        stores.feedback.feedback(tenant, None, u32::MAX).await?.into_iter().map(|f| f.decision_id).collect();
    let mut records: Vec<DecisionRecord> = stores
        .decisions
        .recent(tenant, u32::MAX)
        .await?
        .into_iter()
        .filter(|d| !rated.contains(&d.decision_id))
        .filter(|d| agent.is_none_or(|a| d.agent == a))
        .filter(|d| serde_json::from_value::<Vec<Message>>(d.input.clone()).is_ok())
        .take(usize::try_from(n).unwrap_or(usize::MAX))
        .collect();
    records.reverse();
    Ok(records)
}

/// Replays `records` on `client` and judges the agreement against `threshold`.
pub async fn validate(
    client: Arc<dyn LlmClient>,
    contracts: Arc<Registry>,
    model: &ModelEntry,
    config_hash: &str,
    records: &[DecisionRecord],
    threshold: f64,
    now: OffsetDateTime,
) -> (Validation, ReplayReport) {
    let report =
        Replayer::new(client, contracts, Tolerance::default()).replay_all(&model.name, records, |_, _| {}).await;
    (core::judge(report.total, report.agree, threshold, config_hash, now), report)
}

/// Why a promotion did not happen.
#[derive(Debug, thiserror::Error)]
pub enum PromoteError {
    /// No model of that name in the tenant.
    #[error("no model `{0}`")]
    Unknown(String),
    /// Refused by the registry's rules; the stage is unchanged.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The store could not answer.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A promotion asked for.
#[derive(Debug, Clone, Copy)]
pub struct Promotion<'a> {
    /// Tenant of the model.
    pub tenant: &'a str,
    /// Model name.
    pub name: &'a str,
    /// The stage asked for (`None`: the next one).
    pub to: Option<Stage>,
    /// The validation of the model's file.
    pub validation: &'a Validation,
    /// Who promotes (the audit event's subject).
    pub actor: &'a str,
    /// Now.
    pub now: OffsetDateTime,
}

/// Moves the model to its next stage (`to`, if given, must be that stage) when the validation
/// passed for its registered file: compare-and-set, then a `model_promoted` audit event by the
/// actor, then the hooks.
pub async fn promote(
    stores: &Stores,
    hooks: &[Arc<dyn LoopHook>],
    p: Promotion<'_>,
) -> Result<(ModelEntry, Vec<HookResult>), PromoteError> {
    let Promotion { tenant, name, to, validation, actor, now } = p;
    let entry = stores.models.model(tenant, name).await?.ok_or_else(|| PromoteError::Unknown(name.to_owned()))?;
    let next = core::check_promotion(&entry, to, validation)?;
    let from = entry.stage;
    let updated = ModelEntry { stage: next, updated_at: now, validation: Some(validation.clone()), ..entry };
    let record = AuditRecord {
        kind: EventKind::ModelPromoted,
        call_id: uuid::Uuid::now_v7().to_string(),
        at: now,
        tenant: tenant.to_owned(),
        subject: actor.to_owned(),
        run_id: String::new(),
        incident: String::new(),
        tool: name.to_owned(),
        policy_version: String::new(),
        plan_hash: Some(updated.config_hash.clone()),
        executor_identity: None,
        approval_id: None,
        approver: None,
        decision: None,
        code: None,
        reason: Some(format!("{} → {}: {}", from.as_str(), next.as_str(), validation.reason)),
        // The record is about the model promoted, on no agent's behalf.
        auth: None,
        versions: bridle_core::audit::Versions { model: Some(name.to_owned()), ..Default::default() },
        timings: Timings::default(),
    };
    // INVARIANT: the promotion commits with its `model_promoted` event, or not at all.
    if !stores.models.move_stage(&updated, from, stores.evidence(vec![record])).await? {
        return Err(Refusal::Concurrent(name.to_owned()).into());
    }
    let event = LoopEvent {
        event: MODEL_PROMOTED,
        tenant: tenant.to_owned(),
        data: serde_json::to_value(&updated).unwrap_or_default(),
    };
    let results = fire(hooks, &event).await;
    Ok((updated, results))
}
