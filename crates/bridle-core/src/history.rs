//! Action history: what executed actions did, by tool, diagnosis and equipment class, and what
//! that history means for the next proposal of the same action.
//!
//! An executed action is recorded with the diagnosis it answered and the class of the
//! equipment it acted on; an operator's rating or a follow-up observation gives it its outcome.
//! [`assess`] is the rule: a failure of the same action for the same diagnosis on the same class
//! within the window escalates to `approval`; a record of successes (and no failure in the
//! window) may make it eligible for `auto`. Pure; the records come from the `ActionHistory` port.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// How an executed action turned out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It did what it was for.
    Success,
    /// It did not (or made things worse).
    Failure,
}

impl Outcome {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
        }
    }

    /// Parses a stable name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "success" => Some(Self::Success),
            "failure" => Some(Self::Failure),
            _ => None,
        }
    }
}

/// Who said how it turned out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeSource {
    /// An operator's rating.
    Operator,
    /// A follow-up observation (a read tool's result).
    Observation,
}

impl OutcomeSource {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::Observation => "observation",
        }
    }

    /// Parses a stable name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "operator" => Some(Self::Operator),
            "observation" => Some(Self::Observation),
            _ => None,
        }
    }
}

/// The outcome given to an executed action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rating {
    /// Success or failure.
    pub outcome: Outcome,
    /// Operator or observation.
    pub source: OutcomeSource,
    /// Who rated (the operator's subject, or the observing tool).
    pub rated_by: String,
    /// A note (what was observed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub rated_at: OffsetDateTime,
}

/// One executed action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionRecord {
    /// Tenant.
    pub tenant: String,
    /// The job that executed it.
    pub job_id: String,
    /// The tool (the action).
    pub tool: String,
    /// The diagnosis it answered (the chosen cause).
    pub diagnosis: String,
    /// The class of the equipment it acted on.
    pub equipment_class: String,
    /// The equipment.
    pub equipment: String,
    /// When it was executed.
    #[serde(with = "time::serde::rfc3339")]
    pub executed_at: OffsetDateTime,
    /// Its outcome, once rated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating: Option<Rating>,
}

impl ActionRecord {
    /// Its outcome, if rated.
    pub fn outcome(&self) -> Option<Outcome> {
        self.rating.as_ref().map(|r| r.outcome)
    }
}

/// Which history a proposal is judged against: the diagnosis it answers and the class of the
/// equipment it acts on (the tool is the call's own).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HistoryKey {
    /// The diagnosis (the chosen cause).
    pub diagnosis: String,
    /// The equipment class.
    pub equipment_class: String,
}

/// `[history]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistorySettings {
    /// How far back a failure counts.
    pub failure_window: time::Duration,
    /// Successes (with no failure in the window) that make an action eligible for `auto`;
    /// `None`: history never lowers a level.
    pub auto_after_successes: Option<u32>,
    /// Follow-up observations that rate an executed change automatically.
    pub observe: Vec<ObserveRule>,
}

impl Default for HistorySettings {
    fn default() -> Self {
        Self { failure_window: time::Duration::days(30), auto_after_successes: None, observe: Vec::new() }
    }
}

/// `[[history.observe]]`: after the change tool `after` executed, the read tool `read` is called
/// on the same resource; the change was a success when the read result's `field` equals the
/// change's argument `argument` (numbers compared as numbers), else a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObserveRule {
    /// The change tool observed.
    pub after: String,
    /// The read tool that observes it.
    pub read: String,
    /// The read result's field.
    pub field: String,
    /// The change's argument it must equal.
    pub argument: String,
}

impl ObserveRule {
    /// The outcome `observed` (the read result's field) gives a change with `expected` (its
    /// argument): equal values (numbers by value) are a success, anything else a failure, and
    /// an absent field a failure too (the change did not show).
    pub fn judge(expected: &serde_json::Value, observed: Option<&serde_json::Value>) -> Outcome {
        let same = match (expected, observed) {
            (serde_json::Value::Number(a), Some(serde_json::Value::Number(b))) => a.as_f64() == b.as_f64(),
            (a, Some(b)) => a == b,
            (_, None) => false,
        };
        if same { Outcome::Success } else { Outcome::Failure }
    }
}

/// What the history says about proposing the action again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assessment {
    /// Failures within the window, newest first: the plan needs `approval`, shown these.
    pub failures: Vec<ActionRecord>,
    /// Successes within the window.
    pub successes: u64,
    /// The record of successes makes the action eligible for `auto`.
    pub auto_eligible: bool,
}

impl Assessment {
    /// Whether the history escalates the plan to `approval`.
    pub fn escalates(&self) -> bool {
        !self.failures.is_empty()
    }
}

/// Assesses `records` (the same tool, diagnosis and equipment class) at `now`.
pub fn assess(records: &[ActionRecord], settings: &HistorySettings, now: OffsetDateTime) -> Assessment {
    let since = now - settings.failure_window;
    let recent = records.iter().filter(|r| r.executed_at >= since);
    let mut failures: Vec<ActionRecord> =
        recent.clone().filter(|r| r.outcome() == Some(Outcome::Failure)).cloned().collect();
    failures.sort_by_key(|r| std::cmp::Reverse(r.executed_at));
    let successes = recent.filter(|r| r.outcome() == Some(Outcome::Success)).count();
    let successes = u64::try_from(successes).unwrap_or(u64::MAX);
    let auto_eligible =
        failures.is_empty() && settings.auto_after_successes.is_some_and(|n| n > 0 && successes >= u64::from(n));
    Assessment { failures, successes, auto_eligible }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn rec(days_ago: i64, outcome: Option<Outcome>) -> ActionRecord {
        let now = datetime!(2026-06-01 00:00 UTC);
        ActionRecord {
            tenant: "fab".into(),
            job_id: format!("j{days_ago}"),
            tool: "set_temperature".into(),
            diagnosis: "heater drift".into(),
            equipment_class: "cvd".into(),
            equipment: "cvd-01".into(),
            executed_at: now - time::Duration::days(days_ago),
            rating: outcome.map(|outcome| Rating {
                outcome,
                source: OutcomeSource::Operator,
                rated_by: "op".into(),
                note: None,
                rated_at: now,
            }),
        }
    }

    #[test]
    fn a_failure_in_the_window_escalates_and_an_old_one_does_not() {
        let now = datetime!(2026-06-01 00:00 UTC);
        let s = HistorySettings {
            failure_window: time::Duration::days(7),
            auto_after_successes: Some(2),
            observe: Vec::new(),
        };
        let a = assess(&[rec(3, Some(Outcome::Failure)), rec(1, Some(Outcome::Success))], &s, now);
        assert!(a.escalates() && !a.auto_eligible);
        let a = assess(&[rec(30, Some(Outcome::Failure)), rec(1, Some(Outcome::Success))], &s, now);
        assert!(!a.escalates() && !a.auto_eligible);
        let a = assess(&[rec(2, Some(Outcome::Success)), rec(1, Some(Outcome::Success)), rec(1, None)], &s, now);
        assert!(!a.escalates() && a.auto_eligible);
        assert_eq!(a.successes, 2);
    }

    #[test]
    fn an_observation_matches_numbers_by_value_and_counts_an_absent_field_as_a_failure() {
        use serde_json::json;
        assert_eq!(ObserveRule::judge(&json!(375), Some(&json!(375.0))), Outcome::Success);
        assert_eq!(ObserveRule::judge(&json!(375), Some(&json!(380))), Outcome::Failure);
        assert_eq!(ObserveRule::judge(&json!("open"), Some(&json!("open"))), Outcome::Success);
        assert_eq!(ObserveRule::judge(&json!("open"), Some(&json!(1))), Outcome::Failure);
        assert_eq!(ObserveRule::judge(&json!(375), None), Outcome::Failure);
    }
}
