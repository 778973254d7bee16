//! The feedback loop in the runtime: collecting outcomes of decisions (validated, the comment
//! masked, stored only on a decision of the caller's tenant, then `outcome_collected` hooks) and
//! analysing them against the decision records with `bridle_core::feedback`'s pure analysis.
//!
//! The model registry's validation and promotion are `models.rs`; both fire the hooks of
//! `feedback/hooks.rs`.

pub mod hooks;

use std::sync::{Arc, LazyLock};

use bridle_core::audit::{AuditRecord, EventKind, Timings, Versions};
use bridle_core::decision::DecisionRecord;
use bridle_core::drift::Params;
use bridle_core::feedback::{self as core, Analysis, Feedback, FeedbackError, FeedbackInput, FeedbackStore};
use bridle_core::guard::mask::Masker;
use bridle_core::ports::{DecisionLog, StoreError};
use time::OffsetDateTime;

use hooks::{HookResult, LoopEvent, LoopHook, OUTCOME_COLLECTED, fire};

/// Built once per process; `None` only if a built-in pattern failed to compile.
static MASKER: LazyLock<Option<Masker>> = LazyLock::new(|| Masker::new().ok());

/// Why feedback was not stored.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    /// Out of bounds (rating, score, comment) or empty.
    #[error(transparent)]
    Invalid(#[from] FeedbackError),
    /// The caller's tenant has no such decision.
    #[error("no decision `{0}`")]
    UnknownDecision(String),
    /// The store could not answer (also when the masker did not build: nothing is stored).
    #[error(transparent)]
    Store(StoreError),
}

/// `text` with secrets and personal data masked (operators' comments and notes are stored so);
/// refused when the masker did not build, so nothing unmasked is ever stored.
pub(crate) fn mask_text(text: &str) -> Result<String, StoreError> {
    let masker = MASKER.as_ref().ok_or_else(|| StoreError::Unavailable("the comment masker did not build".into()))?;
    Ok(masker.mask(text).masked)
}

/// Stores `input` as feedback of `rater` (a subject of `tenant`) on `decision_id`, with a fresh
/// id and its `feedback_collected` audit event in one transaction, then fires
/// `outcome_collected`. The comment is masked (secrets, PII) before it is stored, and not
/// repeated in the event.
pub async fn collect(
    stores: &crate::store::Stores,
    hooks: &[Arc<dyn LoopHook>],
    tenant: &str,
    decision_id: &str,
    rater: &str,
    input: FeedbackInput,
    now: OffsetDateTime,
) -> Result<(Feedback, Vec<HookResult>), CollectError> {
    input.validate()?;
    let comment = match input.comment.filter(|c| !c.is_empty()) {
        None => None,
        Some(c) => Some(mask_text(&c).map_err(CollectError::Store)?),
    };
    let feedback = Feedback {
        feedback_id: uuid::Uuid::now_v7().to_string(),
        tenant: tenant.to_owned(),
        decision_id: decision_id.to_owned(),
        source: input.source,
        rating: input.rating,
        score: input.score,
        comment,
        rater: rater.to_owned(),
        created_at: now,
    };
    // INVARIANT: the feedback commits with its `feedback_collected` event, or not at all.
    let event = stores.evidence(vec![collected_event(&feedback)]);
    match stores.feedback.add_feedback(&feedback, event).await {
        Ok(()) => {}
        Err(StoreError::NotFound(_)) => return Err(CollectError::UnknownDecision(decision_id.to_owned())),
        Err(e) => return Err(CollectError::Store(e)),
    }
    let event = LoopEvent {
        event: OUTCOME_COLLECTED,
        tenant: tenant.to_owned(),
        data: serde_json::to_value(&feedback).unwrap_or_default(),
    };
    let results = fire(hooks, &event).await;
    Ok((feedback, results))
}

/// The `feedback_collected` event of `f`: rating, score and source, never the comment.
fn collected_event(f: &Feedback) -> AuditRecord {
    let rating = f.rating.map(|r| format!("rating {r}"));
    let score = f.score.map(|s| format!("score {s}"));
    let said: Vec<String> = rating.into_iter().chain(score).collect();
    AuditRecord {
        kind: EventKind::FeedbackCollected,
        call_id: f.feedback_id.clone(),
        at: f.created_at,
        tenant: f.tenant.clone(),
        subject: f.rater.clone(),
        run_id: String::new(),
        incident: String::new(),
        tool: String::new(),
        policy_version: String::new(),
        plan_hash: None,
        executor_identity: None,
        approval_id: None,
        approver: None,
        decision: None,
        code: None,
        reason: Some(format!("{} feedback on decision `{}`: {}", f.source.as_str(), f.decision_id, said.join(", "))),
        timings: Timings::default(),
        auth: None,
        versions: Versions::default(),
    }
}

/// What [`analyze`] reads.
#[derive(Debug, Clone)]
pub struct AnalyzeOptions {
    /// Most recent feedback records read.
    pub limit: u32,
    /// Only decisions of this agent.
    pub agent: Option<String>,
    /// The CUSUM settings of the rating scan.
    pub drift: Params,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        Self { limit: 10_000, agent: None, drift: Params::default() }
    }
}

/// The tenant's last `limit` feedback records joined with the decisions they rate, analysed
/// against the configured `low_confidence`.
pub async fn analyze(
    feedback: &dyn FeedbackStore,
    decisions: &dyn DecisionLog,
    tenant: &str,
    low_confidence: f64,
    options: &AnalyzeOptions,
) -> Result<(Analysis, Vec<core::Observation>), StoreError> {
    let outcomes = feedback.feedback(tenant, None, options.limit).await?;
    let rated: std::collections::BTreeSet<&str> = outcomes.iter().map(|f| f.decision_id.as_str()).collect();
    let records: Vec<DecisionRecord> = decisions
        .recent(tenant, u32::MAX)
        .await?
        .into_iter()
        .filter(|d| rated.contains(d.decision_id.as_str()))
        .filter(|d| options.agent.as_ref().is_none_or(|a| &d.agent == a))
        .collect();
    let observations = core::observations(&records, &outcomes);
    Ok((core::analyze(&observations, low_confidence, options.drift), observations))
}
