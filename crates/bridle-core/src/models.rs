//! The model registry's rules: models (name → model file and its SHA-256) move through the
//! stages candidate → canary → stable, forward one stage at a time, and only on a passing
//! validation (replay agreement on held-out decisions at or above a threshold). The store port
//! that keeps them is [`ModelRegistry`].
//!
//! Pure: the runtime (`bridle-runtime`'s `models.rs`) replays, asks [`check_promotion`], moves
//! the stage with a compare-and-set and records `model_promoted`. A validation that could not
//! be evaluated (no held-out decision) never passes.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::Code;
use crate::ports::StoreResult;

/// Default agreement a validation needs.
pub const DEFAULT_THRESHOLD: f64 = 0.9;
/// Default number of held-out decisions replayed.
pub const DEFAULT_HOLDOUT: u32 = 100;

/// Where a model stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Registered, not serving.
    Candidate,
    /// Serving a small share.
    Canary,
    /// Serving.
    Stable,
}

impl Stage {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Candidate => "candidate",
            Self::Canary => "canary",
            Self::Stable => "stable",
        }
    }

    /// The stage after this one.
    pub const fn next(self) -> Option<Self> {
        match self {
            Self::Candidate => Some(Self::Canary),
            Self::Canary => Some(Self::Stable),
            Self::Stable => None,
        }
    }

    /// Parses a stable name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "candidate" => Some(Self::Candidate),
            "canary" => Some(Self::Canary),
            "stable" => Some(Self::Stable),
            _ => None,
        }
    }
}

/// The outcome of one validation: replay agreement on held-out decisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validation {
    /// Held-out decisions replayed.
    pub held_out: usize,
    /// Of which agreed in full.
    pub agree: usize,
    /// `agree / held_out` (0 when nothing was replayed).
    pub rate: f64,
    /// Agreement needed.
    pub threshold: f64,
    /// Whether it passed.
    pub passed: bool,
    /// Why, in words.
    pub reason: String,
    /// SHA-256 of the model file validated.
    pub config_hash: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}

/// Judges a replay: passes when at least one decision was replayed and `agree / held_out ≥
/// threshold`.
pub fn judge(held_out: usize, agree: usize, threshold: f64, config_hash: &str, at: OffsetDateTime) -> Validation {
    let rate = if held_out == 0 { 0.0 } else { agree as f64 / held_out as f64 };
    let passed = held_out > 0 && rate >= threshold;
    let reason = if held_out == 0 {
        "no held-out decision to replay: validation cannot pass".to_owned()
    } else if passed {
        format!("agreement {agree}/{held_out} ({:.1} %) ≥ {:.1} %", rate * 100.0, threshold * 100.0)
    } else {
        format!("agreement {agree}/{held_out} ({:.1} %) < {:.1} %", rate * 100.0, threshold * 100.0)
    };
    Validation { held_out, agree, rate, threshold, passed, reason, config_hash: config_hash.to_owned(), at }
}

/// A registered model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// Tenant whose decisions validate it.
    pub tenant: String,
    /// Name, unique per tenant.
    pub name: String,
    /// Model file: an `[llm]` TOML file or a scripted model's script.
    pub config_path: String,
    /// SHA-256 (hex) of the file's bytes at registration.
    pub config_hash: String,
    /// Stage.
    pub stage: Stage,
    /// Who registered it.
    pub registered_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub registered_at: OffsetDateTime,
    /// Last stage change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// The validation that allowed the last promotion.
    pub validation: Option<Validation>,
}

/// Why a promotion was refused; the stage is unchanged.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// Stable is the last stage.
    #[error("`{0}` is already stable")]
    AlreadyStable(String),
    /// Not the next stage.
    #[error("`{name}` is {from}: it can only move to {next}, one stage at a time (not {to})")]
    NotNext {
        /// Model.
        name: String,
        /// Its stage.
        from: &'static str,
        /// Its next stage.
        next: &'static str,
        /// The stage asked for.
        to: &'static str,
    },
    /// The model file is not the one registered.
    #[error("`{name}`: the model file changed since registration (hash {found}, registered {registered})")]
    FileChanged {
        /// Model.
        name: String,
        /// Hash now.
        found: String,
        /// Hash registered.
        registered: String,
    },
    /// The validation failed.
    #[error("`{name}` stays {stage}: validation failed: {reason}")]
    ValidationFailed {
        /// Model.
        name: String,
        /// Its (unchanged) stage.
        stage: &'static str,
        /// The validation's reason.
        reason: String,
    },
    /// Another promotion moved the model first.
    #[error("`{0}` changed stage concurrently; look again")]
    Concurrent(String),
}

impl Refusal {
    /// Stable code.
    pub const fn code(&self) -> Code {
        match self {
            Self::AlreadyStable(_) | Self::NotNext { .. } | Self::Concurrent(_) => Code::StageNotNext,
            Self::FileChanged { .. } | Self::ValidationFailed { .. } => Code::ValidationFailed,
        }
    }
}

/// The stage `entry` may move to with `validation`, asked for `to` (`None`: the next one).
pub fn check_promotion(entry: &ModelEntry, to: Option<Stage>, validation: &Validation) -> Result<Stage, Refusal> {
    let Some(next) = entry.stage.next() else { return Err(Refusal::AlreadyStable(entry.name.clone())) };
    if let Some(to) = to
        && to != next
    {
        return Err(Refusal::NotNext {
            name: entry.name.clone(),
            from: entry.stage.as_str(),
            next: next.as_str(),
            to: to.as_str(),
        });
    }
    if validation.config_hash != entry.config_hash {
        return Err(Refusal::FileChanged {
            name: entry.name.clone(),
            found: validation.config_hash.clone(),
            registered: entry.config_hash.clone(),
        });
    }
    if !validation.passed {
        return Err(Refusal::ValidationFailed {
            name: entry.name.clone(),
            stage: entry.stage.as_str(),
            reason: validation.reason.clone(),
        });
    }
    Ok(next)
}

/// Registered models per tenant.
#[async_trait]
pub trait ModelRegistry: Send + Sync {
    /// Stores a new model; `Duplicate` when the tenant has one of that name.
    async fn register_model(&self, entry: &ModelEntry) -> StoreResult<()>;
    /// A model of `tenant` by name.
    async fn model(&self, tenant: &str, name: &str) -> StoreResult<Option<ModelEntry>>;
    /// The tenant's models by name.
    async fn models(&self, tenant: &str) -> StoreResult<Vec<ModelEntry>>;
    /// Replaces the stored entry of `updated.tenant` / `updated.name` with `updated` if its
    /// stage is still `from` (compare-and-set), appending `audit` in the same transaction (see
    /// [`crate::ports::Audit`]); whether it did (nothing is written when it did not).
    async fn move_stage(&self, updated: &ModelEntry, from: Stage, audit: crate::ports::Audit) -> StoreResult<bool>;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const T: OffsetDateTime = time::macros::datetime!(2026-01-01 00:00 UTC);

    fn entry(stage: Stage) -> ModelEntry {
        ModelEntry {
            tenant: "fab-1".into(),
            name: "m".into(),
            config_path: "m.toml".into(),
            config_hash: "h".into(),
            stage,
            registered_by: "ops".into(),
            registered_at: T,
            updated_at: T,
            validation: None,
        }
    }

    #[test]
    fn forward_one_stage_only_on_a_passing_validation() {
        let pass = judge(100, 95, 0.9, "h", T);
        let fail = judge(100, 89, 0.9, "h", T);
        assert!(pass.passed && !fail.passed);
        assert_eq!(check_promotion(&entry(Stage::Candidate), None, &pass), Ok(Stage::Canary));
        assert_eq!(check_promotion(&entry(Stage::Canary), Some(Stage::Stable), &pass), Ok(Stage::Stable));
        let skip = check_promotion(&entry(Stage::Candidate), Some(Stage::Stable), &pass).unwrap_err();
        assert_eq!(skip.code(), Code::StageNotNext);
        let back = check_promotion(&entry(Stage::Canary), Some(Stage::Candidate), &pass).unwrap_err();
        assert!(matches!(back, Refusal::NotNext { .. }));
        assert!(matches!(check_promotion(&entry(Stage::Stable), None, &pass), Err(Refusal::AlreadyStable(_))));
        let failed = check_promotion(&entry(Stage::Candidate), None, &fail).unwrap_err();
        assert_eq!(failed.code(), Code::ValidationFailed);
        assert!(failed.to_string().contains("stays candidate") && failed.to_string().contains("89/100"), "{failed}");
        let other = judge(100, 100, 0.9, "other", T);
        assert!(matches!(check_promotion(&entry(Stage::Candidate), None, &other), Err(Refusal::FileChanged { .. })));
    }

    #[test]
    fn nothing_replayed_never_passes() {
        let v = judge(0, 0, 0.0, "h", T);
        assert!(!v.passed && v.reason.contains("cannot pass"));
    }
}
