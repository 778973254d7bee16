//! Approval level (gate step 7): how much human involvement a call needs.
//!
//! Starts from the tool's default and only ever escalates: a parameter above its
//! `requires_approval_above`, tainted arguments, low confidence, several candidates, a degraded
//! (rule-fallback) proposal. The limit on automatic changes per resource is counted by the
//! runtime (it needs a store) and escalates through [`auto_limit_reached`].

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::{ApprovalLevel, ToolContract};

/// Default of `[levels] low_confidence`: below it, a call needs at least `approval`.
pub const LOW_CONFIDENCE: f64 = 0.5;

/// At most `max` automatic changes on one resource within `window`; later ones need `approval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoLimit {
    /// Automatic changes allowed in the window.
    pub max: u32,
    /// The sliding window.
    pub window: Duration,
}

/// `[levels]`: the thresholds of step 7.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelSettings {
    /// Below this confidence a call needs at least `approval` (default 0.5).
    pub low_confidence: f64,
    /// The limit on automatic changes per resource (default off; seed 000 uses 3 an hour).
    pub auto_limit: Option<AutoLimit>,
}

impl Default for LevelSettings {
    fn default() -> Self {
        Self { low_confidence: LOW_CONFIDENCE, auto_limit: None }
    }
}

/// The key the automatic-change limit counts under: the tool's resource kind and name.
pub fn auto_limit_key(kind: &str, name: &str) -> String {
    format!("{kind}:{name}")
}

/// Why a call needs a human: one escalation rule that fired, or the tool's own level. Its
/// serde form is `{"code": "above_limit", "param": …, …}` (the approval context's `why`, which
/// the console words in the operator's language); [`Reason::text`] is the English sentence of
/// the context's `reasons` and of refusals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Reason {
    /// `param` = `value` is above its `requires_approval_above`.
    AboveLimit {
        /// The parameter.
        param: String,
        /// Its value.
        value: f64,
        /// The rule's limit.
        limit: f64,
    },
    /// The caller said the arguments derive from untrusted content.
    TaintedArguments,
    /// Confidence below `[levels] low_confidence` (or unknown, NaN or out of range).
    LowConfidence {
        /// As given.
        confidence: f64,
        /// The threshold.
        threshold: f64,
    },
    /// A rule produced the proposal after the model failed.
    Degraded,
    /// Several near-equal candidates: a human must choose.
    Candidates {
        /// How many.
        count: u32,
    },
    /// A change in a run that has taken in untrusted content.
    TaintedRun {
        /// Where the content came from (empty when unknown).
        source: String,
    },
    /// The limit on automatic changes per resource is reached.
    AutoLimit {
        /// The resource (`kind:name`).
        resource: String,
        /// Automatic changes allowed.
        max: u32,
        /// In this many seconds.
        window_s: u64,
    },
    /// The action failed before for the same diagnosis on the same equipment class.
    HistoryFailures {
        /// The tool.
        tool: String,
        /// Failures in the window.
        failures: usize,
        /// The diagnosis.
        diagnosis: String,
        /// The equipment class.
        equipment_class: String,
        /// The window in hours.
        hours: i64,
    },
    /// Enough successes and no failure: the action may run automatically.
    HistoryAuto {
        /// The tool.
        tool: String,
        /// Successes.
        successes: u64,
        /// The diagnosis.
        diagnosis: String,
        /// The equipment class.
        equipment_class: String,
    },
    /// No rule fired: the tool needs `level` for every call.
    ToolDefault {
        /// The tool.
        tool: String,
        /// Its default level.
        level: ApprovalLevel,
    },
    /// An operator prepared the call for review (`POST /v1/approvals`).
    Prepared {
        /// The operator.
        subject: String,
        /// The tool.
        tool: String,
        /// The level asked for.
        level: ApprovalLevel,
    },
}

impl Reason {
    /// The English sentence.
    pub fn text(&self) -> String {
        match self {
            Self::AboveLimit { param, value, limit } => format!("`{param}` = {value} is above {limit}"),
            Self::TaintedArguments => "arguments derive from untrusted content".to_owned(),
            Self::LowConfidence { confidence, threshold } => format!("confidence {confidence} is below {threshold}"),
            Self::Degraded => "degraded proposal (the model failed; a rule produced it)".to_owned(),
            Self::Candidates { count } => format!("{count} candidates are close; a human must choose"),
            Self::TaintedRun { source } if source.is_empty() => TAINTED_RUN.to_owned(),
            Self::TaintedRun { source } => {
                format!("the run has taken in untrusted content ({source}); changes need approval")
            }
            Self::AutoLimit { resource, max, window_s } => format!(
                "more than {max} automatic changes on `{resource}` within {window_s} s; from now on each needs approval"
            ),
            Self::HistoryFailures { tool, failures, diagnosis, equipment_class, hours } => {
                format!(
                    "`{tool}` failed {failures} time(s) for `{diagnosis}` on `{equipment_class}` equipment within {hours} h"
                )
            }
            Self::HistoryAuto { tool, successes, diagnosis, equipment_class } => format!(
                "eligible for auto: {successes} success(es) of `{tool}` for `{diagnosis}` on `{equipment_class}` equipment and no failure"
            ),
            Self::ToolDefault { tool, level } => {
                format!("`{tool}` needs `{}` for every call (the tool's default level)", level.as_str())
            }
            Self::Prepared { subject, tool, level } => {
                format!("`{subject}` prepared `{tool}` for review at level `{}`", level.as_str())
            }
        }
    }
}

/// The reason recorded when the automatic-change limit escalates a call.
pub fn auto_limit_reached(resource: &str, limit: &AutoLimit) -> Reason {
    Reason::AutoLimit { resource: resource.to_owned(), max: limit.max, window_s: limit.window.as_secs() }
}

/// What the caller knows about how the call was produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallSignals {
    /// The proposing agent's confidence, if it gave one.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// How many candidate actions the agent weighed as near-equal (2+ needs a human choice).
    #[serde(default)]
    pub candidates: u32,
    /// Arguments derived from untrusted content.
    #[serde(default)]
    pub tainted: bool,
    /// The proposal is a degraded result (the model failed and a rule produced it): it never
    /// runs without approval.
    #[serde(default)]
    pub degraded: bool,
    /// The proposal answers this diagnosis on this equipment class: the gate judges it against
    /// the action's history (`[history]`) and records it once executed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<crate::history::HistoryKey>,
    /// What an in-process pipeline attaches for the approver when the call waits for a human
    /// (`{"pipeline": name, "diagnosis": …, "candidates": […]}`): copied into the approval
    /// request's `context.evidence`. Never read from or written to JSON, so an API caller cannot
    /// set it; its `pipeline` names who attached it (and who named the call's agent).
    #[serde(skip)]
    pub evidence: Option<serde_json::Value>,
}

/// The level a call needs and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelDecision {
    /// Required level.
    pub level: ApprovalLevel,
    /// A human must choose among candidates (reported as `human_choice_required`).
    pub human_choice: bool,
    /// Why it escalated.
    pub reasons: Vec<Reason>,
}

/// `reasons` as their English sentences, in order (the `reasons` beside a `why`).
pub fn texts(reasons: &[Reason]) -> Vec<String> {
    reasons.iter().map(Reason::text).collect()
}

/// Why a change in a tainted run escalates (recorded in the audit event's reason).
pub const TAINTED_RUN: &str = "the run has taken in untrusted content; changes need approval";

/// [`decide`], then escalation for taint of the whole run: a `change` call in a run that has
/// taken in untrusted content needs at least `approval`. `taint` says where that content came
/// from (`None`: the run is clean; `Some("")`: tainted, source unknown). Total; never lowers
/// the level.
pub fn decide_in_run(
    settings: &LevelSettings,
    tool: &ToolContract,
    args: &Value,
    signals: &CallSignals,
    taint: Option<&str>,
) -> LevelDecision {
    let mut decision = decide_with(settings, tool, args, signals);
    if let Some(source) = taint
        && tool.mode == crate::contract::Mode::Change
    {
        decision.level = decision.level.max(ApprovalLevel::Approval);
        decision.reasons.push(Reason::TaintedRun { source: source.to_owned() });
    }
    decision
}

/// Decides the level for `tool(args)` given the signals, with the default thresholds.
pub fn decide(tool: &ToolContract, args: &Value, signals: &CallSignals) -> LevelDecision {
    decide_with(&LevelSettings::default(), tool, args, signals)
}

/// Decides the level for `tool(args)` given the signals and thresholds. Total; never lowers
/// the tool default.
pub fn decide_with(
    settings: &LevelSettings,
    tool: &ToolContract,
    args: &Value,
    signals: &CallSignals,
) -> LevelDecision {
    let low = settings.low_confidence;
    let mut level = tool.approval;
    let mut reasons = Vec::new();
    let mut raise = |to: ApprovalLevel, why: Reason| {
        if to > level {
            level = to;
        }
        reasons.push(why);
    };
    for (name, rule) in &tool.params {
        if let (Some(limit), Some(v)) = (rule.requires_approval_above, args.get(name).and_then(Value::as_f64))
            && v > limit
        {
            raise(ApprovalLevel::Approval, Reason::AboveLimit { param: name.clone(), value: v, limit });
        }
    }
    if signals.tainted {
        raise(ApprovalLevel::Approval, Reason::TaintedArguments);
    }
    // A NaN or out-of-range confidence is treated as low: unknown never means sure.
    if let Some(c) = signals.confidence
        && !(low..=1.0).contains(&c)
    {
        raise(ApprovalLevel::Approval, Reason::LowConfidence { confidence: c, threshold: low });
    }
    if signals.degraded {
        raise(ApprovalLevel::Approval, Reason::Degraded);
    }
    let human_choice = signals.candidates >= 2;
    if human_choice {
        raise(ApprovalLevel::Approval, Reason::Candidates { count: signals.candidates });
    }
    LevelDecision { level, human_choice, reasons }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_a_code_with_its_values_and_an_english_sentence() {
        let above = Reason::AboveLimit { param: "replicas".into(), value: 5.0, limit: 3.0 };
        let value = serde_json::to_value(&above).unwrap();
        assert_eq!(value, serde_json::json!({"code": "above_limit", "param": "replicas", "value": 5.0, "limit": 3.0}));
        assert_eq!(serde_json::from_value::<Reason>(value).unwrap(), above);
        assert_eq!(above.text(), "`replicas` = 5 is above 3");
        let unknown = Reason::TaintedRun { source: String::new() };
        assert_eq!(
            (serde_json::to_value(&unknown).unwrap()["code"].as_str(), unknown.text()),
            (Some("tainted_run"), TAINTED_RUN.to_owned())
        );
        let default = Reason::ToolDefault { tool: "replace_part".into(), level: ApprovalLevel::SignOff };
        assert_eq!(serde_json::to_value(&default).unwrap()["level"], "sign_off");
        assert_eq!(default.text(), "`replace_part` needs `sign_off` for every call (the tool's default level)");
    }
}
