//! `[levels]`, `[diagnosis]` and `[[fallback]]`: the thresholds that decide how much human
//! involvement a proposal needs, and the rules that answer when the model cannot. Parsing and
//! validation only; [`crate::level`] and the fab pipeline (`bridle-apps`) apply them.
//!
//! ```toml
//! [levels]
//! low_confidence = 0.5                              # below: at least `approval`
//! auto_limit = { max = 3, window_seconds = 3600 }   # automatic changes per resource (default: no limit)
//!
//! [diagnosis]
//! inconclusive_below = 0.3     # a top candidate below this is inconclusive
//! candidate_margin = 0.05      # candidates this close to the top one: a human chooses
//! max_rounds = 3               # reject → regenerate rounds before the run ends `rejected`
//!
//! [[fallback]]
//! name = "gas_flow_low"
//! metric = "gas_flow_sccm"     # the anomaly's `metric`
//! below = 80                   # and/or `above`; the anomaly's `value` is compared
//! causes = [{ cause = "stuck gas valve", confidence = 0.6, evidence = "flow below setpoint" }]
//! action = { tool = "replace_part", arguments = { equipment = "{equipment}", part = "gas_valve" } }
//! ```

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::validate::Errors;
use crate::contract::Registry;
use crate::diagnosis::{Candidate, DiagnosisSettings, FallbackRule, RuleAction};
use crate::level::{AutoLimit, LevelSettings};

/// Longest window of the automatic-change limit (30 days).
const MAX_WINDOW_SECONDS: u64 = 30 * 86_400;
/// Most regenerate rounds.
const MAX_ROUNDS: u32 = 10;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLevels {
    low_confidence: Option<f64>,
    auto_limit: Option<RawAutoLimit>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAutoLimit {
    max: u32,
    window_seconds: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDiagnosis {
    inconclusive_below: Option<f64>,
    candidate_margin: Option<f64>,
    max_rounds: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFallbackRule {
    name: String,
    metric: String,
    above: Option<f64>,
    below: Option<f64>,
    #[serde(default)]
    causes: Vec<RawCause>,
    action: Option<RawAction>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCause {
    cause: String,
    confidence: f64,
    #[serde(default)]
    evidence: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAction {
    tool: String,
    #[serde(default)]
    arguments: toml::Table,
}

fn unit(at: &str, v: f64, errors: &mut Errors) {
    if !(0.0..=1.0).contains(&v) {
        errors.push(at, format!("{v} is not between 0 and 1"));
    }
}

pub(super) fn level_settings(raw: &RawLevels, errors: &mut Errors) -> LevelSettings {
    let defaults = LevelSettings::default();
    let low_confidence = raw.low_confidence.unwrap_or(defaults.low_confidence);
    unit("levels.low_confidence", low_confidence, errors);
    let auto_limit = match &raw.auto_limit {
        None => defaults.auto_limit,
        Some(RawAutoLimit { max: 0, .. }) => None,
        Some(l) => {
            if !(1..=MAX_WINDOW_SECONDS).contains(&l.window_seconds) {
                errors.push("levels.auto_limit.window_seconds", "must be between 1 second and 30 days");
            }
            Some(AutoLimit { max: l.max, window: Duration::from_secs(l.window_seconds) })
        }
    };
    LevelSettings { low_confidence, auto_limit }
}

pub(super) fn diagnosis_settings(raw: &RawDiagnosis, errors: &mut Errors) -> DiagnosisSettings {
    let defaults = DiagnosisSettings::default();
    let settings = DiagnosisSettings {
        inconclusive_below: raw.inconclusive_below.unwrap_or(defaults.inconclusive_below),
        candidate_margin: raw.candidate_margin.unwrap_or(defaults.candidate_margin),
        max_rounds: raw.max_rounds.unwrap_or(defaults.max_rounds),
    };
    unit("diagnosis.inconclusive_below", settings.inconclusive_below, errors);
    unit("diagnosis.candidate_margin", settings.candidate_margin, errors);
    if !(1..=MAX_ROUNDS).contains(&settings.max_rounds) {
        errors.push("diagnosis.max_rounds", format!("must be between 1 and {MAX_ROUNDS}"));
    }
    settings
}

pub(super) fn fallback_rules(raw: Vec<RawFallbackRule>, registry: &Registry, errors: &mut Errors) -> Vec<FallbackRule> {
    let mut rules = Vec::with_capacity(raw.len());
    for (i, r) in raw.into_iter().enumerate() {
        let at = format!("fallback[{i}]");
        if r.name.trim().is_empty() {
            errors.push(format!("{at}.name"), "must not be empty");
        }
        if r.metric.trim().is_empty() {
            errors.push(format!("{at}.metric"), "must not be empty");
        }
        if let (Some(a), Some(b)) = (r.above, r.below)
            && a >= b
        {
            errors.push(at.clone(), format!("`above = {a}` and `below = {b}` can never both hold"));
        }
        if r.causes.is_empty() && r.action.is_none() {
            errors.push(at.clone(), "names neither causes nor an action");
        }
        let causes = r
            .causes
            .into_iter()
            .enumerate()
            .map(|(j, c)| {
                unit(&format!("{at}.causes[{j}].confidence"), c.confidence, errors);
                Candidate { cause: c.cause, confidence: c.confidence, evidence: c.evidence }
            })
            .collect();
        let action = r.action.map(|a| {
            if registry.get(&a.tool).is_none() {
                errors.push(format!("{at}.action.tool"), format!("no tool `{}` is registered", a.tool));
            }
            let arguments = serde_json::to_value(&a.arguments).unwrap_or(Value::Null);
            RuleAction { tool: a.tool, arguments }
        });
        rules.push(FallbackRule { name: r.name, metric: r.metric, above: r.above, below: r.below, causes, action });
    }
    rules
}
