//! Per-parameter domain rules: range, step, approval threshold and the state rule `max_delta`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::code::Code;
use crate::verdict::Rejection;

/// `max_delta`: the new value may differ from the current one by at most `value`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaxDelta {
    /// Largest allowed absolute change.
    pub value: f64,
    /// Read tool that returns the current state, called with the reader identity.
    pub read_tool: String,
    /// Field of the read result holding the current value (a JSON pointer or a top-level key).
    pub field: String,
}

/// Domain rules for one numeric parameter.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamRule {
    /// Inclusive lower bound.
    #[serde(default)]
    pub min: Option<f64>,
    /// Inclusive upper bound.
    #[serde(default)]
    pub max: Option<f64>,
    /// Values must lie on `min + k * step` (or `k * step` without `min`).
    #[serde(default)]
    pub step: Option<f64>,
    /// A value above this needs at least `approval`.
    #[serde(default)]
    pub requires_approval_above: Option<f64>,
    /// State rule checked after policy.
    #[serde(default)]
    pub max_delta: Option<MaxDelta>,
    /// Free text the guard scans for injection.
    #[serde(default)]
    pub scan: bool,
}

impl ParamRule {
    /// Whether any numeric rule is set (such parameters must be numbers in the schema).
    pub fn is_numeric(&self) -> bool {
        self.min.is_some()
            || self.max.is_some()
            || self.step.is_some()
            || self.requires_approval_above.is_some()
            || self.max_delta.is_some()
    }
}

/// A parameter's numeric value, if present and numeric.
pub(crate) fn number(args: &Value, name: &str) -> Option<f64> {
    args.get(name).and_then(Value::as_f64)
}

/// Range rules of every parameter, in name order.
pub(crate) fn check_ranges(params: &BTreeMap<String, ParamRule>, args: &Value) -> Result<(), Rejection> {
    for (name, rule) in params {
        let Some(v) = number(args, name) else { continue };
        let below = rule.min.is_some_and(|min| v < min);
        let above = rule.max.is_some_and(|max| v > max);
        if below || above {
            let lo = rule.min.map_or("-inf".to_owned(), |m| m.to_string());
            let hi = rule.max.map_or("inf".to_owned(), |m| m.to_string());
            return Err(Rejection::new(Code::OutOfRange, format!("`{name}` = `{v}` is outside [{lo}, {hi}]"))
                .with_detail(serde_json::json!({"param": name, "value": v, "min": rule.min, "max": rule.max})));
        }
    }
    Ok(())
}

/// Step rules of every parameter, in name order.
pub(crate) fn check_steps(params: &BTreeMap<String, ParamRule>, args: &Value) -> Result<(), Rejection> {
    for (name, rule) in params {
        let (Some(v), Some(step)) = (number(args, name), rule.step) else { continue };
        let base = rule.min.unwrap_or(0.0);
        if !on_grid(v, base, step) {
            return Err(Rejection::new(
                Code::StepMismatch,
                format!("`{name}` = `{v}` is not on the grid {base} + k * {step}"),
            )
            .with_detail(serde_json::json!({"param": name, "value": v, "step": step})));
        }
    }
    Ok(())
}

/// Whether `v` lies on `base + k * step` within floating-point tolerance.
fn on_grid(v: f64, base: f64, step: f64) -> bool {
    if !(step.is_finite() && step > 0.0 && v.is_finite()) {
        return false;
    }
    let k = (v - base) / step;
    (k - k.round()).abs() <= 1e-9 * k.abs().max(1.0)
}

/// Reads a current value out of a read tool's result: a JSON pointer (`/a/b`) or a key.
pub fn read_field(result: &Value, field: &str) -> Option<f64> {
    if field.starts_with('/') { result.pointer(field) } else { result.get(field) }.and_then(Value::as_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn temp_rule() -> BTreeMap<String, ParamRule> {
        let rule = ParamRule { min: Some(200.0), max: Some(450.0), step: Some(5.0), ..ParamRule::default() };
        BTreeMap::from([("temp_celsius".to_owned(), rule)])
    }

    #[test]
    fn range_then_step() {
        let p = temp_rule();
        assert!(check_ranges(&p, &json!({"temp_celsius": 380})).is_ok());
        assert!(check_steps(&p, &json!({"temp_celsius": 380})).is_ok());
        let low = check_ranges(&p, &json!({"temp_celsius": -500})).err().map(|r| r.code);
        assert_eq!(low, Some(Code::OutOfRange));
        let off = check_steps(&p, &json!({"temp_celsius": 382})).err().map(|r| r.code);
        assert_eq!(off, Some(Code::StepMismatch));
        assert!(check_steps(&p, &json!({"temp_celsius": 382.5})).is_err());
        assert!(check_steps(&p, &json!({"temp_celsius": 385.0})).is_ok());
    }

    #[test]
    fn decimal_steps_tolerate_float_error() {
        assert!(on_grid(0.3, 0.0, 0.1));
        assert!(on_grid(1.7, 0.5, 0.2));
        assert!(!on_grid(0.35, 0.0, 0.1));
        assert!(!on_grid(1.0, 0.0, 0.0));
    }

    #[test]
    fn read_field_by_key_or_pointer() {
        let r = json!({"replicas": 2, "setpoints": {"chamber": 380}});
        assert_eq!(read_field(&r, "replicas"), Some(2.0));
        assert_eq!(read_field(&r, "/setpoints/chamber"), Some(380.0));
        assert_eq!(read_field(&r, "missing"), None);
    }
}
