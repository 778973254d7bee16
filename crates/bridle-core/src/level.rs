//! Approval level (gate step 7): how much human involvement a call needs.
//!
//! Starts from the tool's default and only ever escalates: a parameter above its
//! `requires_approval_above`, tainted arguments, low confidence, several candidates.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contract::{ApprovalLevel, ToolContract};

/// Below this confidence, a call needs at least `approval`.
pub const LOW_CONFIDENCE: f64 = 0.5;

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
pub fn decide_in_run(tool: &ToolContract, args: &Value, signals: &CallSignals, taint: Option<&str>) -> LevelDecision {
    let mut decision = decide(tool, args, signals);
    if let Some(source) = taint
        && tool.mode == crate::contract::Mode::Change
    {
        decision.level = decision.level.max(ApprovalLevel::Approval);
        decision.reasons.push(tainted_run(source));
    }
    decision
}

/// Decides the level for `tool(args)` given the signals. Total; never lowers the tool default.
pub fn decide(tool: &ToolContract, args: &Value, signals: &CallSignals) -> LevelDecision {
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
        && !(LOW_CONFIDENCE..=1.0).contains(&c)
    {
        raise(ApprovalLevel::Approval, format!("confidence {c} is below {LOW_CONFIDENCE}"));
    }
    let human_choice = signals.candidates >= 2;
    if human_choice {
        raise(ApprovalLevel::Approval, format!("{} candidates are close; a human must choose", signals.candidates));
    }
    LevelDecision { level, human_choice, reasons }
}
