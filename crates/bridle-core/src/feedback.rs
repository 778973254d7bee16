//! The feedback loop's data and analysis: outcome records per decision (operator ratings 1–5,
//! automatic or operator scores 0–1), the store port that keeps them, and the pure analysis —
//! Spearman's rho between a decision's confidence (or its score) and its operator rating
//! behind the power gate, a CUSUM scan of the ratings (`drift.rs`'s detector), and a proposed
//! `[levels] low_confidence` recalibrated from the ratings.
//!
//! Pure: no I/O, no clock. The runtime (`bridle-runtime`'s `feedback.rs`) reads the stores,
//! joins feedback with decision records and fires `outcome_collected`.

pub mod stats;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::decision::DecisionRecord;
use crate::drift::{Cusum, Level, Params};
use crate::ports::StoreResult;
use stats::{Correlation, Power, gated_spearman};

/// Longest comment, in characters.
pub const MAX_COMMENT_CHARS: usize = 2000;
/// A rating at or below this is poor.
pub const POOR_RATING: u8 = 2;

/// Who produced an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A person (console, API, CLI).
    #[default]
    Operator,
    /// A check that scored the outcome by itself.
    Automatic,
}

impl Source {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::Automatic => "automatic",
        }
    }
}

/// What a rater says about one decision (before it is stored).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FeedbackInput {
    /// Operator rating, 1 (bad) to 5 (good).
    pub rating: Option<u8>,
    /// Score, 0 (bad) to 1 (good).
    pub score: Option<f64>,
    /// Free text (masked before it is stored), at most 2000 characters.
    pub comment: Option<String>,
    /// Who produced it.
    pub source: Source,
}

/// Why feedback input was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeedbackError {
    /// Neither a rating nor a score.
    #[error("feedback needs a `rating` (1–5) or a `score` (0–1)")]
    Empty,
    /// Rating outside 1–5.
    #[error("`rating` must be an integer from 1 to 5, not {0}")]
    Rating(u8),
    /// Score outside 0–1 or not finite.
    #[error("`score` must be a number from 0 to 1, not {0}")]
    Score(String),
    /// Comment too long.
    #[error("`comment` is {0} characters long; at most {MAX_COMMENT_CHARS}")]
    Comment(usize),
}

impl FeedbackInput {
    /// Checks the bounds; every check names its field.
    pub fn validate(&self) -> Result<(), FeedbackError> {
        if self.rating.is_none() && self.score.is_none() {
            return Err(FeedbackError::Empty);
        }
        if let Some(r) = self.rating
            && !(1..=5).contains(&r)
        {
            return Err(FeedbackError::Rating(r));
        }
        if let Some(s) = self.score
            && !(s.is_finite() && (0.0..=1.0).contains(&s))
        {
            return Err(FeedbackError::Score(s.to_string()));
        }
        if let Some(c) = &self.comment {
            let n = c.chars().count();
            if n > MAX_COMMENT_CHARS {
                return Err(FeedbackError::Comment(n));
            }
        }
        Ok(())
    }
}

/// One stored outcome of a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Feedback {
    /// Id (a UUIDv7).
    pub feedback_id: String,
    /// Tenant (the decision's).
    pub tenant: String,
    /// The decision rated.
    pub decision_id: String,
    /// Operator or automatic.
    pub source: Source,
    /// Rating 1–5.
    pub rating: Option<u8>,
    /// Score 0–1.
    pub score: Option<f64>,
    /// Masked comment.
    pub comment: Option<String>,
    /// Principal (subject) that gave it.
    pub rater: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// Outcome records per decision.
#[async_trait]
pub trait FeedbackStore: Send + Sync {
    /// Stores `feedback` and appends `audit` in one transaction (see [`crate::ports::Audit`]);
    /// `NotFound` when its tenant has no decision `decision_id` (another tenant's decision is
    /// unknown too), `Duplicate` when the id exists. A refusal writes nothing.
    async fn add_feedback(&self, feedback: &Feedback, audit: crate::ports::Audit) -> StoreResult<()>;
    /// Feedback of `tenant`, newest first (ties in insertion order), only of `decision_id` when
    /// given, at most `limit`.
    async fn feedback(&self, tenant: &str, decision_id: Option<&str>, limit: u32) -> StoreResult<Vec<Feedback>>;
}

/// The confidence a decision record states: `harness_checks.confidence`, else `output.confidence`.
pub fn confidence_of(record: &DecisionRecord) -> Option<f64> {
    let c = record.harness_checks.get("confidence").or_else(|| record.output.get("confidence"));
    c.and_then(serde_json::Value::as_f64).filter(|c| c.is_finite())
}

/// One rated decision: its confidence and the means of its ratings and of its scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Decision.
    pub decision_id: String,
    /// Its agent.
    pub agent: String,
    /// When it was decided.
    #[serde(with = "time::serde::rfc3339")]
    pub decided_at: OffsetDateTime,
    /// Its confidence, if it stated one.
    pub confidence: Option<f64>,
    /// Mean operator rating.
    pub rating: Option<f64>,
    /// Mean score (automatic or operator).
    pub score: Option<f64>,
}

/// Joins feedback with the decisions it rates (unknown decisions are skipped), one observation
/// per decision, oldest decision first.
pub fn observations(decisions: &[DecisionRecord], feedback: &[Feedback]) -> Vec<Observation> {
    let mut by_decision: std::collections::BTreeMap<&str, (Vec<f64>, Vec<f64>)> = std::collections::BTreeMap::new();
    for f in feedback {
        let entry = by_decision.entry(f.decision_id.as_str()).or_default();
        if let Some(r) = f.rating {
            entry.0.push(f64::from(r));
        }
        if let Some(s) = f.score {
            entry.1.push(s);
        }
    }
    let mean = |v: &[f64]| if v.is_empty() { None } else { Some(v.iter().sum::<f64>() / v.len() as f64) };
    let mut out: Vec<Observation> = decisions
        .iter()
        .filter_map(|d| {
            let (ratings, scores) = by_decision.get(d.decision_id.as_str())?;
            Some(Observation {
                decision_id: d.decision_id.clone(),
                agent: d.agent.clone(),
                decided_at: d.created_at,
                confidence: confidence_of(d),
                rating: mean(ratings),
                score: mean(scores),
            })
        })
        .collect();
    out.sort_by(|a, b| a.decided_at.cmp(&b.decided_at).then_with(|| a.decision_id.cmp(&b.decision_id)));
    out
}

/// The CUSUM scan of the ratings, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatingDrift {
    /// Ratings scanned (baseline included).
    pub n: u64,
    /// `(μ, σ)` of the baseline, `None` while learning.
    pub baseline: Option<(f64, f64)>,
    /// `ok`, `warning` or `critical` (an open episode).
    pub status: Level,
    /// Critical alarms.
    pub critical: usize,
    /// Warnings.
    pub warnings: usize,
}

/// Scans `ratings` (oldest first) with the drift detector; the baseline is the first
/// `params.baseline_len` values.
pub fn rating_drift(ratings: &[f64], params: Params) -> RatingDrift {
    let mut cusum = Cusum::new(params);
    for r in ratings {
        cusum.update(*r);
    }
    let critical = cusum.alarms().iter().filter(|a| a.level == Level::Critical).count();
    RatingDrift {
        n: cusum.seen(),
        baseline: cusum.baseline(),
        status: cusum.level(),
        critical,
        warnings: cusum.alarms().len().saturating_sub(critical),
    }
}

/// A proposed `[levels] low_confidence`, printed as a config diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThresholdProposal {
    /// The configured value.
    pub current: f64,
    /// The proposed value (equal to `current` when nothing should change).
    pub proposed: f64,
    /// Rated decisions at or above `proposed`, and how many of them were rated poor.
    pub above: (usize, usize),
    /// Rated decisions below `proposed`, and how many of them were rated poor.
    pub below: (usize, usize),
    /// Why.
    pub reason: String,
}

impl ThresholdProposal {
    /// The change as a unified diff of `bridle.toml`'s `[levels]` (empty when unchanged).
    pub fn diff(&self) -> String {
        if (self.proposed - self.current).abs() < 1e-9 {
            return String::new();
        }
        format!(
            "--- bridle.toml\n+++ bridle.toml (proposed)\n@@ [levels] @@\n-low_confidence = {:?}\n+low_confidence = {:?}\n",
            self.current, self.proposed
        )
    }
}

/// Share of poor ratings tolerated among decisions that may run without approval.
pub const MAX_POOR_SHARE: f64 = 0.2;
/// Rated decisions that must stay above a proposed threshold.
pub const MIN_ABOVE: usize = 5;

/// The lowest confidence cut on a 0.05 grid above which at most [`MAX_POOR_SHARE`] of the rated
/// decisions were rated poor (≤ 2), keeping at least [`MIN_ABOVE`] above it; `None` below the
/// power gate (fewer than 10 rated decisions with a confidence). No cut that qualifies → 1.0
/// (every decision needs approval), said so in the reason.
pub fn propose_low_confidence(observations: &[Observation], current: f64) -> Option<ThresholdProposal> {
    let pairs: Vec<(f64, bool)> =
        observations.iter().filter_map(|o| Some((o.confidence?, o.rating? <= f64::from(POOR_RATING)))).collect();
    if Power::of(pairs.len()) == Power::InsufficientData {
        return None;
    }
    let split = |t: f64| {
        let above: Vec<bool> = pairs.iter().filter(|(c, _)| *c >= t).map(|p| p.1).collect();
        let below: Vec<bool> = pairs.iter().filter(|(c, _)| *c < t).map(|p| p.1).collect();
        let poor = |v: &[bool]| v.iter().filter(|p| **p).count();
        ((above.len(), poor(&above)), (below.len(), poor(&below)))
    };
    let grid = (0..=20).map(|i| f64::from(i) / 20.0);
    let found = grid.into_iter().find(|t| {
        let ((n, poor), _) = split(*t);
        n >= MIN_ABOVE && (poor as f64) <= MAX_POOR_SHARE * n as f64
    });
    let proposed = found.map_or(1.0, |t| (t * 100.0).round() / 100.0);
    let (above, below) = split(proposed);
    let pct = |(n, poor): (usize, usize)| if n == 0 { 0.0 } else { 100.0 * poor as f64 / n as f64 };
    let reason = match found {
        None => format!(
            "no confidence cut keeps poor ratings (≤ {POOR_RATING}) at or under {:.0} % of at least {MIN_ABOVE} decisions: \
             every decision should need approval",
            MAX_POOR_SHARE * 100.0
        ),
        Some(_) => format!(
            "at confidence ≥ {proposed}: {} of {} rated decisions poor ({:.0} %); below: {} of {} ({:.0} %)",
            above.1,
            above.0,
            pct(above),
            below.1,
            below.0,
            pct(below)
        ),
    };
    Some(ThresholdProposal { current, proposed, above, below, reason })
}

/// Everything `bridle feedback analyze` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Rated decisions.
    pub decisions: usize,
    /// Confidence against operator rating.
    pub confidence_rating: Correlation,
    /// Score against operator rating.
    pub score_rating: Correlation,
    /// The ratings over time.
    pub rating_drift: RatingDrift,
    /// A recalibrated `[levels] low_confidence`; `None` below the power gate.
    pub proposal: Option<ThresholdProposal>,
}

/// Analyses observations (oldest first) against the configured `low_confidence`.
pub fn analyze(observations: &[Observation], low_confidence: f64, drift: Params) -> Analysis {
    let pairs = |x: fn(&Observation) -> Option<f64>| -> Vec<(f64, f64)> {
        observations.iter().filter_map(|o| Some((x(o)?, o.rating?))).collect()
    };
    let ratings: Vec<f64> = observations.iter().filter_map(|o| o.rating).collect();
    Analysis {
        decisions: observations.len(),
        confidence_rating: gated_spearman("confidence ~ rating", &pairs(|o| o.confidence)),
        score_rating: gated_spearman("score ~ rating", &pairs(|o| o.score)),
        rating_drift: rating_drift(&ratings, drift),
        proposal: propose_low_confidence(observations, low_confidence),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn obs(i: usize, confidence: f64, rating: f64) -> Observation {
        Observation {
            decision_id: format!("d-{i:03}"),
            agent: "advisor".into(),
            decided_at: time::macros::datetime!(2026-01-01 00:00 UTC) + time::Duration::seconds(i as i64),
            confidence: Some(confidence),
            rating: Some(rating),
            score: None,
        }
    }

    #[test]
    fn input_bounds_are_checked() {
        let ok = FeedbackInput { rating: Some(5), ..FeedbackInput::default() };
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(FeedbackInput::default().validate(), Err(FeedbackError::Empty));
        assert!(FeedbackInput { rating: Some(0), ..FeedbackInput::default() }.validate().is_err());
        assert!(FeedbackInput { rating: Some(6), ..FeedbackInput::default() }.validate().is_err());
        assert!(FeedbackInput { score: Some(1.01), ..FeedbackInput::default() }.validate().is_err());
        assert!(FeedbackInput { score: Some(f64::NAN), ..FeedbackInput::default() }.validate().is_err());
        assert_eq!(FeedbackInput { score: Some(0.0), ..FeedbackInput::default() }.validate(), Ok(()));
        let long = FeedbackInput { rating: Some(3), comment: Some("가".repeat(2001)), ..FeedbackInput::default() };
        assert_eq!(long.validate(), Err(FeedbackError::Comment(2001)));
    }

    #[test]
    fn the_proposal_is_the_lowest_cut_with_few_poor_ratings_above_it() {
        // Below 0.6 every decision was rated 1; from 0.6 on, 5 — except one 2 at 0.9.
        let mut o: Vec<Observation> = (0..12).map(|i| obs(i, 0.3 + 0.02 * i as f64, 1.0)).collect();
        o.extend((12..24).map(|i| obs(i, 0.6 + 0.02 * (i - 12) as f64, 5.0)));
        o[20].rating = Some(2.0);
        let p = propose_low_confidence(&o, 0.5).unwrap();
        // 0.55 is the lowest grid point between the last poor (0.52) and the first good (0.6).
        assert_eq!(p.proposed, 0.55, "{p:?}");
        assert_eq!((p.above, p.below), ((12, 1), (12, 12)));
        assert!(p.diff().contains("-low_confidence = 0.5\n+low_confidence = 0.55"), "{}", p.diff());
        // Below the power gate: nothing proposed.
        assert!(propose_low_confidence(&o[..9], 0.5).is_none());
        // All poor: everything needs approval.
        let poor: Vec<Observation> = (0..12).map(|i| obs(i, 0.9, 1.0)).collect();
        assert_eq!(propose_low_confidence(&poor, 0.5).unwrap().proposed, 1.0);
    }

    #[test]
    fn analysis_gates_and_scans_ratings() {
        let o: Vec<Observation> = (0..40).map(|i| obs(i, i as f64 / 40.0, if i < 20 { 4.0 } else { 2.0 })).collect();
        let a = analyze(&o, 0.5, Params { baseline_len: 10, ..Params::default() });
        assert_eq!(a.confidence_rating.power, Power::Adequate);
        assert!(a.confidence_rating.rho.unwrap() < -0.8);
        assert_eq!(a.score_rating.power, Power::InsufficientData, "no automatic scores");
        assert!(a.rating_drift.critical >= 1, "{:?}", a.rating_drift);
    }
}
