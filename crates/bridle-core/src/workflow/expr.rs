//! CEL expressions of a workflow: compiled once at load (syntax and the state keys they name
//! checked there), evaluated over the workflow state as JSON. Pure: no I/O, no clock.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock};

use cel::objects::{Key, Map as CelMap};
use cel::{Context, Program, Value as Cel};
use regex::Regex;
use serde_json::{Map, Number, Value};

/// Longest CEL expression source (bytes).
pub const MAX_SOURCE_BYTES: usize = 4096;

/// Why an expression gave no usable value (never read as true or false).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    /// CEL could not evaluate it (a type error, a missing key, an overflow).
    #[error("`{expr}` could not be evaluated: {cause}")]
    Eval {
        /// The expression's source.
        expr: String,
        /// CEL's own message.
        cause: String,
    },
    /// It gave a value JSON cannot hold.
    #[error("`{expr}` gave a value that is not JSON")]
    NotJson {
        /// The expression's source.
        expr: String,
    },
    /// A condition gave something other than a boolean.
    #[error("`{expr}` gave `{value}`, not a boolean")]
    NotBool {
        /// The expression's source.
        expr: String,
        /// What it gave.
        value: Value,
    },
}

/// A compiled CEL expression and its source.
#[derive(Clone)]
pub struct Expr {
    source: String,
    program: Arc<Program>,
    /// Top-level state keys the expression reads.
    reads: Vec<String>,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Expr").field(&self.source).finish()
    }
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

/// Names a comprehension macro binds (`list.all(x, …)` binds `x`), which are not state keys.
static BOUND: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,").ok());

impl Expr {
    /// Compiles `source`; every name it reads must be one of `keys`. Errors are messages
    /// without the path (the caller adds it).
    pub fn compile(source: &str, keys: &BTreeSet<String>) -> Result<Self, Vec<String>> {
        // INVARIANT: CEL's parser recurses on the text; its size and nesting are bounded first,
        // so a deep or long expression is a load error instead of a stack overflow.
        if source.len() > MAX_SOURCE_BYTES {
            return Err(vec![format!(
                "a CEL expression has at most {MAX_SOURCE_BYTES} bytes (this one has {})",
                source.len()
            )]);
        }
        if let Err(e) = crate::nesting::check(source, crate::nesting::CEL, crate::nesting::MAX_DEPTH) {
            return Err(vec![format!("CEL expression: {e}")]);
        }
        let compiled = crate::nesting::with_parser_stack(|| {
            Program::compile(source)
                .map_err(|e| e.to_string().lines().next().unwrap_or("syntax error").trim().to_owned())
        });
        let program = compiled
            .map_err(|e| e.to_string())
            .and_then(|p| p)
            .map_err(|first| vec![format!("CEL expression `{source}` does not compile: {first}")])?;
        let bound: BTreeSet<String> = BOUND
            .as_ref()
            .map(|re| re.captures_iter(source).filter_map(|c| c.get(1)).map(|m| m.as_str().to_owned()).collect())
            .unwrap_or_default();
        let mut reads = Vec::new();
        let mut problems = Vec::new();
        for name in program.references().variables() {
            if bound.contains(name) {
                continue;
            }
            if keys.contains(name) {
                reads.push(name.to_owned());
            } else {
                problems.push(format!("CEL expression `{source}` refers to `{name}`, which is not a state key"));
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        reads.sort();
        reads.dedup();
        Ok(Self { source: source.to_owned(), program: Arc::new(program), reads })
    }

    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The state keys it reads.
    pub fn reads(&self) -> &[String] {
        &self.reads
    }

    /// Evaluates over `state` (every key it reads is bound, `null` when absent).
    pub fn eval(&self, state: &Map<String, Value>) -> Result<Value, ExprError> {
        let mut ctx = Context::default();
        for key in &self.reads {
            ctx.add_variable_from_value(key.as_str(), to_cel(state.get(key).unwrap_or(&Value::Null)));
        }
        let value = self
            .program
            .execute(&ctx)
            .map_err(|e| ExprError::Eval { expr: self.source.clone(), cause: e.to_string() })?;
        from_cel(&value).ok_or_else(|| ExprError::NotJson { expr: self.source.clone() })
    }

    /// Evaluates to a boolean; anything else is an error (never read as true or false).
    pub fn eval_bool(&self, state: &Map<String, Value>) -> Result<bool, ExprError> {
        match self.eval(state)? {
            Value::Bool(b) => Ok(b),
            other => Err(ExprError::NotBool { expr: self.source.clone(), value: other }),
        }
    }
}

/// JSON → CEL: whole numbers as `int` (`uint` only past `i64`), so `x + 1` works on them.
pub fn to_cel(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Cel::Int(i),
            (None, Some(u), _) => Cel::UInt(u),
            (_, _, f) => Cel::Float(f.unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let entries: HashMap<Key, Cel> =
                map.iter().map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v))).collect();
            Cel::Map(CelMap { map: Arc::new(entries) })
        }
    }
}

/// CEL → JSON; `None` for values JSON cannot hold (functions, bytes, non-finite numbers).
pub fn from_cel(value: &Cel) -> Option<Value> {
    Some(match value {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::Number((*i).into()),
        Cel::UInt(u) => Value::Number((*u).into()),
        Cel::Float(f) => Value::Number(Number::from_f64(*f)?),
        Cel::String(s) => Value::String(s.as_str().to_owned()),
        Cel::List(items) => Value::Array(items.iter().map(from_cel).collect::<Option<Vec<_>>>()?),
        Cel::Map(m) => {
            let mut out = Map::new();
            for (k, v) in m.map.iter() {
                let key = match k {
                    Key::String(s) => s.as_str().to_owned(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                out.insert(key, from_cel(v)?);
            }
            Value::Object(out)
        }
        _ => return None,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use serde_json::json;

    fn keys(k: &[&str]) -> BTreeSet<String> {
        k.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn whole_numbers_are_ints_and_macro_variables_are_not_state() {
        let e = Expr::compile("recipe.temp + 1 == 386 && items.all(x, x > 0)", &keys(&["recipe", "items"])).unwrap();
        let state = json!({"recipe": {"temp": 385}, "items": [1, 2]});
        assert!(e.eval_bool(state.as_object().unwrap()).unwrap());
    }

    #[test]
    fn unknown_keys_and_syntax_errors_are_named() {
        let errs = Expr::compile("a > 1 && b", &keys(&["a"])).unwrap_err();
        assert!(errs[0].contains("`b`"), "{errs:?}");
        let errs = Expr::compile("a >", &keys(&["a"])).unwrap_err();
        assert!(errs[0].contains("does not compile"), "{errs:?}");
    }

    #[test]
    fn a_non_boolean_condition_is_an_error() {
        let e = Expr::compile("a", &keys(&["a"])).unwrap();
        let err = e.eval_bool(json!({"a": 1}).as_object().unwrap()).unwrap_err();
        assert_eq!(err, ExprError::NotBool { expr: "a".to_owned(), value: json!(1) });
        assert_eq!(err.to_string(), "`a` gave `1`, not a boolean");
        let e = Expr::compile("a.missing > 1", &keys(&["a"])).unwrap();
        assert!(e.eval_bool(json!({"a": {}}).as_object().unwrap()).is_err());
    }
}
