//! Replay comparison: does a model's answer to a recorded input agree with the recorded one?
//!
//! Pure functions over values; the runtime asks the model. An answer agrees when its action
//! is the same (`action_id`, or the top candidate's cause), its parameters (a proposal's
//! `parameters`, else the whole output) are the same within a tolerance (numbers within `max(absolute, relative × |recorded|)`, strings and booleans
//! exactly; free prose — `reasoning`, `evidence`, `findings`, `text` — is not compared), and
//! its verdict is the same (the output schema passed or failed alike; the parameters were in
//! or out of the tool's range alike, where the record says).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Fields of free prose, never compared.
pub const PROSE: [&str; 5] = ["reasoning", "evidence", "findings", "text", "content"];

/// How close two numbers must be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Absolute difference always accepted.
    pub absolute: f64,
    /// Difference accepted relative to the recorded value.
    pub relative: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Self { absolute: 1e-9, relative: 0.01 }
    }
}

impl Tolerance {
    /// Whether `b` is within tolerance of the recorded `a`. NaN never is.
    pub fn close(&self, a: f64, b: f64) -> bool {
        (a - b).abs() <= self.absolute.max(self.relative * a.abs())
    }
}

/// What the harness saw of a replayed answer, to compare with the record's `harness_checks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayedChecks {
    /// The answer passed the agent's output schema.
    pub schema_valid: bool,
    /// The proposed parameters passed the tool's contract (`None`: not a proposal).
    pub params_in_range: Option<bool>,
}

/// The comparison of one decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Same action.
    pub action: bool,
    /// Same parameters within tolerance.
    pub parameters: bool,
    /// Same verdict.
    pub verdict: bool,
    /// All three.
    pub agree: bool,
    /// What differed (JSON pointers and values).
    pub differences: Vec<String>,
}

/// The action of an output: its `action_id`, else its top candidate's cause.
pub fn action_of(output: &Value) -> Option<String> {
    if let Some(a) = output.get("action_id").and_then(Value::as_str) {
        return Some(a.to_owned());
    }
    let candidates = output.get("candidates")?.as_array()?;
    candidates
        .iter()
        .filter_map(|c| Some((c.get("confidence")?.as_f64()?, c.get("cause")?.as_str()?)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, cause)| cause.to_owned())
}

/// Compares a replayed output with the recorded one, and the replayed checks with the record's
/// `harness_checks`.
pub fn compare(
    recorded: &Value,
    recorded_checks: &Value,
    replayed: &Value,
    checks: ReplayedChecks,
    tolerance: &Tolerance,
) -> Comparison {
    let mut differences = Vec::new();
    let (was, now) = (action_of(recorded), action_of(replayed));
    let action = was == now;
    if !action {
        differences.push(format!("action: {} → {}", was.unwrap_or_default(), now.unwrap_or_default()));
    }
    let before = differences.len();
    // A proposal's parameters are its `parameters`; any other output is compared whole.
    match (recorded.get("action_id"), replayed.get("action_id")) {
        (Some(_), Some(_)) => {
            let null = Value::Null;
            let (a, b) = (recorded.get("parameters").unwrap_or(&null), replayed.get("parameters").unwrap_or(&null));
            diff("/parameters", a, b, tolerance, &mut differences);
        }
        _ => diff("", recorded, replayed, tolerance, &mut differences),
    }
    let parameters = differences.len() == before;
    let mut verdict = true;
    if let Some(valid) = recorded_checks.get("schema_valid").and_then(Value::as_bool)
        && valid != checks.schema_valid
    {
        verdict = false;
        differences.push(format!("schema_valid: {valid} → {}", checks.schema_valid));
    }
    if let (Some(was), Some(now)) =
        (recorded_checks.get("params_in_range").and_then(Value::as_bool), checks.params_in_range)
        && was != now
    {
        verdict = false;
        differences.push(format!("params_in_range: {was} → {now}"));
    }
    Comparison { action, parameters, verdict, agree: action && parameters && verdict, differences }
}

/// Records every difference between `a` and `b` below `at`, skipping prose fields.
fn diff(at: &str, a: &Value, b: &Value, tolerance: &Tolerance, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_f64(), y.as_f64())
                && !tolerance.close(x, y)
            {
                out.push(format!("{at}: {x} → {y}"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                if PROSE.contains(&k.as_str()) || k == "action_id" {
                    continue;
                }
                let null = Value::Null;
                diff(&format!("{at}/{k}"), x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null), tolerance, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(&format!("{at}/{i}"), p, q, tolerance, out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{at}: {} → {}", short(a), short(b))),
    }
}

fn short(v: &Value) -> String {
    crate::verdict::clip(&v.to_string(), 80)
}

/// Agreement of one agent's decisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentAgreement {
    /// Agent.
    pub agent: String,
    /// Decisions replayed.
    pub total: usize,
    /// Of which agreed in full.
    pub agree: usize,
    /// Same action.
    pub action: usize,
    /// Same parameters.
    pub parameters: usize,
    /// Same verdict.
    pub verdict: usize,
    /// Could not be replayed (no replayable input, the model failed).
    pub errors: usize,
}

impl AgentAgreement {
    /// `agree / total` (1 when nothing was replayed).
    pub fn rate(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        if self.total == 0 { 1.0 } else { self.agree as f64 / self.total as f64 }
    }
}

/// Per-agent agreement over `(agent, comparison or error)` items, agents in name order.
pub fn by_agent<'a>(items: impl IntoIterator<Item = (&'a str, Option<&'a Comparison>)>) -> Vec<AgentAgreement> {
    let mut map: std::collections::BTreeMap<&str, AgentAgreement> = std::collections::BTreeMap::new();
    for (agent, comparison) in items {
        let a = map.entry(agent).or_insert_with(|| AgentAgreement {
            agent: agent.to_owned(),
            total: 0,
            agree: 0,
            action: 0,
            parameters: 0,
            verdict: 0,
            errors: 0,
        });
        a.total += 1;
        match comparison {
            Some(c) => {
                a.agree += usize::from(c.agree);
                a.action += usize::from(c.action);
                a.parameters += usize::from(c.parameters);
                a.verdict += usize::from(c.verdict);
            }
            None => a.errors += 1,
        }
    }
    map.into_values().collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use serde_json::json;

    use super::*;

    const OK: ReplayedChecks = ReplayedChecks { schema_valid: true, params_in_range: Some(true) };

    fn advice(tool: &str, temp: f64) -> Value {
        json!({"action_id": tool, "parameters": {"equipment": "etch-01", "temp_celsius": temp}, "confidence": 0.8, "reasoning": "x"})
    }

    #[test]
    fn numbers_within_tolerance_and_prose_agree() {
        let t = Tolerance::default();
        let mut b = advice("set_temperature", 376.0);
        b["reasoning"] = json!("a completely different explanation");
        let c = compare(&advice("set_temperature", 375.0), &json!({}), &b, OK, &t);
        assert!(c.agree, "{c:?}");
        let c = compare(&advice("set_temperature", 375.0), &json!({}), &advice("set_temperature", 365.0), OK, &t);
        assert!(!c.parameters && c.action && !c.agree);
        assert_eq!(c.differences, ["/parameters/temp_celsius: 375 → 365"]);
    }

    #[test]
    fn another_action_or_verdict_disagrees() {
        let t = Tolerance::default();
        let c = compare(&advice("set_temperature", 375.0), &json!({}), &advice("hold_equipment", 375.0), OK, &t);
        assert!(!c.action && !c.agree);
        let checks = json!({"schema_valid": true, "params_in_range": true});
        let bad = ReplayedChecks { schema_valid: true, params_in_range: Some(false) };
        let c = compare(&advice("set_temperature", 375.0), &checks, &advice("set_temperature", 375.0), bad, &t);
        assert!(c.action && c.parameters && !c.verdict && !c.agree);
    }

    #[test]
    fn the_action_of_a_diagnosis_is_its_top_cause() {
        let d = json!({"candidates": [{"cause": "pump", "confidence": 0.31}, {"cause": "valve", "confidence": 0.6}]});
        assert_eq!(action_of(&d).as_deref(), Some("valve"));
        assert_eq!(action_of(&json!({"text": "hi"})), None);
    }
}
