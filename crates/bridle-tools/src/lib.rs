//! The workbench tools (seed 003): `search_law`, `calculate` and `convert_unit`, an application
//! of the engine rather than part of it.
//!
//! Pure functions over arguments the gate has already checked against the tools' contracts;
//! they are registered as ordinary read tools in the configuration and run in process by the
//! runtime's built-in adapter, which gets them as [`Workbench`] (an
//! [`InProcessTools`](bridle_core::ports::InProcessTools)). A tool's own error is a
//! [`Rejection`] carrying the tool's stable code.

mod calculate;
mod convert_unit;
mod search_law;

use bridle_core::ports::InProcessTools;
use bridle_core::{Code, Rejection};
use serde_json::{Value, json};

pub use calculate::{MAX_EXPRESSION_CHARS, evaluate};
pub use convert_unit::{UNITS, convert};
pub use search_law::{DEFAULT_TOP_K, MAX_TOP_K, search, units_count};

/// Names of the built-in tools.
pub const NAMES: [&str; 3] = ["search_law", "calculate", "convert_unit"];

/// Whether `tool` is one of the built-in tools.
pub fn is_builtin(tool: &str) -> bool {
    NAMES.contains(&tool)
}

/// The workbench tools as the runtime's built-in adapter runs them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Workbench;

impl InProcessTools for Workbench {
    fn names(&self) -> &[&'static str] {
        &NAMES
    }

    fn run(&self, tool: &str, args: &Value) -> Option<Result<Value, Rejection>> {
        run(tool, args)
    }
}

/// Runs a built-in tool; `None` if `tool` is not one.
pub fn run(tool: &str, args: &Value) -> Option<Result<Value, Rejection>> {
    Some(match tool {
        "search_law" => run_search(args),
        "calculate" => string(args, "expression").and_then(evaluate).map(|v| json!({"value": v})),
        "convert_unit" => run_convert(args),
        _ => return None,
    })
}

fn run_search(args: &Value) -> Result<Value, Rejection> {
    let query = string(args, "query")?;
    let top_k = match args.get("top_k") {
        None | Some(Value::Null) => DEFAULT_TOP_K,
        Some(v) => {
            v.as_u64().and_then(|k| usize::try_from(k).ok()).ok_or_else(|| argument_error("top_k", "an integer"))?
        }
    };
    search(query, top_k)
}

fn run_convert(args: &Value) -> Result<Value, Rejection> {
    let value = args.get("value").and_then(Value::as_f64).ok_or_else(|| argument_error("value", "a number"))?;
    let from = string(args, "from")?;
    let to = string(args, "to")?;
    convert(value, from, to).map(|v| json!({"value": v, "unit": to}))
}

fn string<'a>(args: &'a Value, name: &str) -> Result<&'a str, Rejection> {
    args.get(name).and_then(Value::as_str).ok_or_else(|| argument_error(name, "a string"))
}

/// Arguments that slipped past the contract (a direct library call): refused like the schema
/// would refuse them.
fn argument_error(name: &str, what: &str) -> Rejection {
    Rejection::new(Code::SchemaRejected, format!("`{name}` must be {what}"))
}

/// A float without binary noise: rounded to 15 significant digits (`0.1 + 0.2` is `0.3`), and
/// never `-0`.
pub(crate) fn tidy(x: f64) -> f64 {
    let rounded = format!("{x:.14e}").parse::<f64>().unwrap_or(x);
    if rounded == 0.0 { 0.0 } else { rounded }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tidy_removes_noise_and_negative_zero() {
        assert_eq!(tidy(0.1 + 0.2), 0.3);
        assert_eq!(tidy(-0.0).to_string(), "0");
        assert_eq!(tidy(100.0 * 9.80665), 980.665);
    }

    #[test]
    fn run_dispatches_and_refuses_bad_arguments() {
        assert_eq!(run("calculate", &json!({"expression": "1+1"})).and_then(Result::ok), Some(json!({"value": 2.0})));
        let bad = run("convert_unit", &json!({"value": "1", "from": "m", "to": "cm"})).and_then(Result::err);
        assert_eq!(bad.map(|r| r.code), Some(Code::SchemaRejected));
        assert!(run("scale_replicas", &json!({})).is_none());
    }
}
