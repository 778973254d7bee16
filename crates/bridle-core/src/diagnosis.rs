//! The types of `[diagnosis]` and `[[fallback]]` as the configuration reads them: a diagnosis's
//! candidate causes, its thresholds, and the rules that answer when the model cannot. The fab
//! pipeline that applies them (triage, rule evaluation) is `bridle-apps`'.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One candidate cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The cause, in words (`stuck gas valve`).
    pub cause: String,
    /// Confidence in 0–1.
    pub confidence: f64,
    /// What points to it.
    #[serde(default)]
    pub evidence: String,
}

/// `[diagnosis]`: thresholds of a diagnosis and of the reject → regenerate loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiagnosisSettings {
    /// A top candidate below this is inconclusive (default 0.3).
    pub inconclusive_below: f64,
    /// Candidates within this of the top one are near-equal: a human chooses (default 0.05).
    pub candidate_margin: f64,
    /// Rejected plans regenerated before the run ends `rejected` (default 3 rounds).
    pub max_rounds: u32,
}

impl Default for DiagnosisSettings {
    fn default() -> Self {
        Self { inconclusive_below: 0.3, candidate_margin: 0.05, max_rounds: 3 }
    }
}

/// A condition on the anomaly's metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FallbackRule {
    /// Rule name (recorded with its result).
    pub name: String,
    /// The anomaly's `metric` this rule is about.
    pub metric: String,
    /// Fires when the anomaly's `value` is above this.
    pub above: Option<f64>,
    /// Fires when the anomaly's `value` is below this.
    pub below: Option<f64>,
    /// Causes it proposes.
    pub causes: Vec<Candidate>,
    /// The action it proposes, if any.
    pub action: Option<RuleAction>,
}

/// An action template: `"{field}"` (a whole string) takes the anomaly's field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleAction {
    /// Tool.
    pub tool: String,
    /// Arguments, with `"{field}"` placeholders.
    pub arguments: Value,
}

impl FallbackRule {
    /// Whether the rule fires on `anomaly` (`{metric, value, …}`): same metric and every
    /// bound it names holds. A value that is not a number never fires a bounded rule.
    pub fn matches(&self, anomaly: &Value) -> bool {
        if anomaly.get("metric").and_then(Value::as_str) != Some(self.metric.as_str()) {
            return false;
        }
        if self.above.is_none() && self.below.is_none() {
            return true;
        }
        let Some(v) = anomaly.get("value").and_then(Value::as_f64) else { return false };
        self.above.is_none_or(|a| v > a) && self.below.is_none_or(|b| v < b)
    }
}
