//! Diagnoses and their candidates: when a diagnosis is inconclusive, when a human must choose
//! among near-equal causes, and the rule engine that answers when the model cannot.
//!
//! Pure functions over values; the fab pipeline calls a model and pauses for people. Thresholds
//! come from `[diagnosis]`, rules from `[[fallback]]` (their types are the configuration's, in
//! `bridle_core::diagnosis`).

use serde::Serialize;
use serde_json::{Map, Value};

pub use bridle_core::diagnosis::{Candidate, DiagnosisSettings, FallbackRule, RuleAction};

/// What a diagnosis allows next.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "triage", rename_all = "snake_case")]
pub enum Triage {
    /// No candidate is credible enough to act on.
    Inconclusive {
        /// The best confidence seen (0 without candidates).
        top_confidence: f64,
    },
    /// Two or more candidates are near-equal: a human picks one, never the code. Every
    /// near-equal candidate is offered, also one below the inconclusive threshold.
    Choose {
        /// The near-equal candidates, best first.
        options: Vec<Candidate>,
    },
    /// One candidate stands out.
    Proceed {
        /// It.
        chosen: Candidate,
    },
}

/// Sorts `candidates` best first and decides. Total: a NaN or out-of-range confidence counts
/// as 0 (unknown never means sure).
pub fn triage(candidates: &[Candidate], settings: &DiagnosisSettings) -> Triage {
    let mut sorted: Vec<Candidate> =
        candidates.iter().map(|c| Candidate { confidence: sane(c.confidence), ..c.clone() }).collect();
    sorted.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    let Some(top) = sorted.first().cloned() else {
        return Triage::Inconclusive { top_confidence: 0.0 };
    };
    let margin = settings.candidate_margin;
    // A small epsilon so 0.31 vs 0.29 is "within 0.02" whatever the float rounding.
    let near: Vec<Candidate> =
        sorted.iter().filter(|c| top.confidence - c.confidence <= margin + 1e-9).cloned().collect();
    if near.len() >= 2 {
        return Triage::Choose { options: near };
    }
    if top.confidence < settings.inconclusive_below {
        return Triage::Inconclusive { top_confidence: top.confidence };
    }
    Triage::Proceed { chosen: top }
}

fn sane(c: f64) -> f64 {
    if (0.0..=1.0).contains(&c) { c } else { 0.0 }
}

/// What the first matching rule produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleResult {
    /// The rule.
    pub rule: String,
    /// Candidate causes.
    pub candidates: Vec<Candidate>,
    /// The action with its placeholders filled, if the rule has one.
    pub action: Option<RuleAction>,
}

/// The first rule that fires on `anomaly`, with its action's placeholders filled.
pub fn evaluate(rules: &[FallbackRule], anomaly: &Value) -> Option<RuleResult> {
    let rule = rules.iter().find(|r| r.matches(anomaly))?;
    Some(RuleResult {
        rule: rule.name.clone(),
        candidates: rule.causes.clone(),
        action: rule
            .action
            .as_ref()
            .map(|a| RuleAction { tool: a.tool.clone(), arguments: fill(&a.arguments, anomaly) }),
    })
}

/// Replaces each string that is exactly `{field}` with the anomaly's field (left as written
/// when the anomaly has no such field, so the gate's schema check refuses it).
fn fill(template: &Value, anomaly: &Value) -> Value {
    match template {
        Value::String(s) => s
            .strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .and_then(|field| anomaly.get(field))
            .cloned()
            .unwrap_or_else(|| template.clone()),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill(v, anomaly)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), fill(v, anomaly))).collect::<Map<String, Value>>())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use serde_json::json;

    use super::*;

    fn c(cause: &str, confidence: f64) -> Candidate {
        Candidate { cause: cause.to_owned(), confidence, evidence: String::new() }
    }

    #[test]
    fn near_equal_candidates_go_to_a_human_even_below_the_inconclusive_threshold() {
        let s = DiagnosisSettings::default();
        let t = triage(&[c("vacuum pump wear", 0.31), c("stuck gas valve", 0.29), c("rf drift", 0.1)], &s);
        let Triage::Choose { options } = t else { panic!("{t:?}") };
        let causes: Vec<&str> = options.iter().map(|o| o.cause.as_str()).collect();
        assert_eq!(causes, ["vacuum pump wear", "stuck gas valve"]);
    }

    #[test]
    fn a_lone_weak_top_is_inconclusive_and_a_clear_top_proceeds() {
        let s = DiagnosisSettings::default();
        assert_eq!(triage(&[c("a", 0.29), c("b", 0.1)], &s), Triage::Inconclusive { top_confidence: 0.29 });
        assert_eq!(triage(&[], &s), Triage::Inconclusive { top_confidence: 0.0 });
        let Triage::Proceed { chosen } = triage(&[c("b", 0.2), c("a", 0.8)], &s) else { panic!() };
        assert_eq!(chosen.cause, "a");
    }

    #[test]
    fn nan_and_out_of_range_confidences_count_as_zero() {
        let s = DiagnosisSettings::default();
        let t = triage(&[c("a", f64::NAN), c("b", 7.0), c("c", 0.9)], &s);
        let Triage::Proceed { chosen } = t else { panic!("{t:?}") };
        assert_eq!(chosen.cause, "c");
    }

    #[test]
    fn rules_fire_on_their_metric_and_bounds_and_fill_placeholders() {
        let rule = FallbackRule {
            name: "gas_flow_low".to_owned(),
            metric: "gas_flow_sccm".to_owned(),
            above: None,
            below: Some(80.0),
            causes: vec![c("stuck gas valve", 0.6)],
            action: Some(RuleAction {
                tool: "replace_part".to_owned(),
                arguments: json!({"equipment": "{equipment}", "part": "gas_valve"}),
            }),
        };
        let rules = [rule];
        assert!(evaluate(&rules, &json!({"metric": "gas_flow_sccm", "value": 95.0})).is_none());
        assert!(evaluate(&rules, &json!({"metric": "chamber_temp_c", "value": 10.0})).is_none());
        assert!(evaluate(&rules, &json!({"metric": "gas_flow_sccm", "value": "low"})).is_none());
        let r = evaluate(&rules, &json!({"metric": "gas_flow_sccm", "value": 42.0, "equipment": "etch-01"})).unwrap();
        assert_eq!(r.rule, "gas_flow_low");
        assert_eq!(r.action.unwrap().arguments, json!({"equipment": "etch-01", "part": "gas_valve"}));
    }
}
