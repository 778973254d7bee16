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

/// The reason recorded when the automatic-change limit escalates a call.
pub fn auto_limit_reached(resource: &str, limit: &AutoLimit) -> String {
    format!(
        "more than {} automatic changes on `{resource}` within {} s; from now on each needs approval",
        limit.max,
        limit.window.as_secs()
    )
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
    pub reasons: Vec<String>,
}

/// Why a change in a tainted run escalates (recorded in the audit event's reason).
pub const TAINTED_RUN: &str = "the run has taken in untrusted content; changes need approval";

/// [`TAINTED_RUN`] naming where the untrusted content came from (`output of \`fetch_ticket\``).
pub fn tainted_run(source: &str) -> String {
    if source.is_empty() {
        TAINTED_RUN.to_owned()
    } else {
        format!("the run has taken in untrusted content ({source}); changes need approval")
    }
}

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
        decision.reasons.push(tainted_run(source));
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
    let mut raise = |to: ApprovalLevel, why: String| {
        if to > level {
            level = to;
        }
        reasons.push(why);
    };
    for (name, rule) in &tool.params {
        if let (Some(limit), Some(v)) = (rule.requires_approval_above, args.get(name).and_then(Value::as_f64))
            && v > limit
        {
            raise(ApprovalLevel::Approval, format!("`{name}` = {v} is above {limit}"));
        }
    }
    if signals.tainted {
        raise(ApprovalLevel::Approval, "arguments derive from untrusted content".to_owned());
    }
    // A NaN or out-of-range confidence is treated as low: unknown never means sure.
    if let Some(c) = signals.confidence
        && !(low..=1.0).contains(&c)
    {
        raise(ApprovalLevel::Approval, format!("confidence {c} is below {low}"));
    }
    if signals.degraded {
        raise(ApprovalLevel::Approval, "degraded proposal (the model failed; a rule produced it)".to_owned());
    }
    let human_choice = signals.candidates >= 2;
    if human_choice {
        raise(ApprovalLevel::Approval, format!("{} candidates are close; a human must choose", signals.candidates));
    }
    LevelDecision { level, human_choice, reasons }
}
