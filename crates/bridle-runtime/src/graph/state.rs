//! Graph state: a schema of typed fields, each with a reducer, and the rule for merging the
//! updates of one super-step.
//!
//! The state is a JSON object whose fields are declared up front with a kind (the JSON type a
//! value must have) and a reducer: `Replace` (one write per step; a second is an error),
//! `Append` (arrays grow by a value or by every element of an array), `Merge` (objects merge
//! key by key) or a custom function. Values are JSON so checkpoints, streams, workflows written
//! in configuration and the HTTP API all see the same thing; nodes read fields with
//! [`State::get_as`] into their own types.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use bridle_core::{Code, Rejection};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The JSON type a field's value must have (`null` is always allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Anything.
    Any,
    /// `true` / `false`.
    Bool,
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl Kind {
    fn admits(self, value: &Value) -> bool {
        match (self, value) {
            (Self::Any, _) | (_, Value::Null) => true,
            (Self::Bool, Value::Bool(_)) | (Self::String, Value::String(_)) => true,
            (Self::Array, Value::Array(_)) | (Self::Object, Value::Object(_)) => true,
            (Self::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (Self::Number, Value::Number(_)) => true,
            _ => false,
        }
    }

    const fn name(self) -> &'static str {
        match self {
            Self::Any => "any",
            Self::Bool => "bool",
            Self::Integer => "integer",
            Self::Number => "number",
            Self::String => "string",
            Self::Array => "array",
            Self::Object => "object",
        }
    }
}

/// A custom reducer: folds one written value into the current one.
pub type ReduceFn = Arc<dyn Fn(&mut Value, Value) -> Result<(), ReduceError> + Send + Sync>;

/// A custom reducer's refusal, in its own words (the step fails as `invalid_update`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReduceError(pub String);

impl From<String> for ReduceError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for ReduceError {
    fn from(message: &str) -> Self {
        Self(message.to_owned())
    }
}

/// How writes to a field combine.
#[derive(Clone)]
pub enum Reducer {
    /// The written value replaces the old one; two writes in one step are an error.
    Replace,
    /// Appends a value, or every element of an array value (the field is an array).
    Append,
    /// Merges an object's keys into the field's object (the field is an object).
    Merge,
    /// A function of (current, written).
    Custom(ReduceFn),
}

impl fmt::Debug for Reducer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Replace => "Replace",
            Self::Append => "Append",
            Self::Merge => "Merge",
            Self::Custom(_) => "Custom",
        })
    }
}

#[derive(Debug, Clone)]
struct Field {
    kind: Kind,
    reducer: Reducer,
    default: Value,
}

/// The declared fields of a graph's state.
#[derive(Debug, Clone, Default)]
pub struct StateSchema {
    fields: BTreeMap<String, Field>,
}

impl StateSchema {
    /// A schema without fields.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a field. `Append` fields start as `[]`, `Merge` fields as `{}`, others as `null`.
    #[must_use]
    pub fn field(mut self, name: &str, kind: Kind, reducer: Reducer) -> Self {
        let (kind, default) = match reducer {
            Reducer::Append => (Kind::Array, Value::Array(Vec::new())),
            Reducer::Merge => (Kind::Object, Value::Object(Map::new())),
            _ => (kind, Value::Null),
        };
        self.fields.insert(name.to_owned(), Field { kind, reducer, default });
        self
    }

    /// Field names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.fields.keys().map(String::as_str)
    }

    /// Whether a field has a custom reducer (which may fail half-way through a step).
    pub(crate) fn has_custom(&self) -> bool {
        self.fields.values().any(|f| matches!(f.reducer, Reducer::Custom(_)))
    }

    /// A structural description for the graph's hash.
    pub(crate) fn describe(&self) -> String {
        self.fields.iter().map(|(n, f)| format!("{n}:{}:{:?};", f.kind.name(), f.reducer)).collect()
    }

    /// The initial state: every field at its default, then `input` applied as one write per
    /// field.
    pub fn initial(&self, input: &Value) -> Result<State, Rejection> {
        let mut values: Map<String, Value> = self.fields.iter().map(|(n, f)| (n.clone(), f.default.clone())).collect();
        let input = match input {
            Value::Null => return Ok(State(Arc::new(values))),
            Value::Object(map) => map,
            other => return Err(invalid(format!("the run input must be an object, not {}", type_name(other)))),
        };
        self.check(input)?;
        let mut written = Vec::new();
        for (name, value) in input {
            self.reduce(&mut values, &mut written, name, value.clone())?;
        }
        Ok(State(Arc::new(values)))
    }

    /// Checks one node's update: an object naming declared fields with values of their kinds.
    pub fn check(&self, update: &Map<String, Value>) -> Result<(), Rejection> {
        for (name, value) in update {
            let field = self.fields.get(name).ok_or_else(|| invalid(format!("no state field `{name}`")))?;
            let admitted = match field.reducer {
                // Append takes one element or an array of elements.
                Reducer::Append => true,
                Reducer::Merge => value.is_object(),
                _ => field.kind.admits(value),
            };
            if !admitted {
                return Err(invalid(format!(
                    "field `{name}` holds {} values, the update gave {}",
                    field.kind.name(),
                    type_name(value)
                )));
            }
        }
        Ok(())
    }

    /// Applies the updates of one super-step, in task order, to `state`.
    pub fn apply<'a>(&self, state: &mut State, updates: impl IntoIterator<Item = &'a Value>) -> Result<(), Rejection> {
        let values = Arc::make_mut(&mut state.0);
        let mut written = Vec::new();
        for update in updates {
            let Value::Object(update) = update else { continue };
            for (name, value) in update {
                self.reduce(values, &mut written, name, value.clone())?;
            }
        }
        Ok(())
    }

    fn reduce<'n>(
        &self,
        values: &mut Map<String, Value>,
        written: &mut Vec<&'n str>,
        name: &'n str,
        value: Value,
    ) -> Result<(), Rejection> {
        let field = self.fields.get(name).ok_or_else(|| invalid(format!("no state field `{name}`")))?;
        if !values.contains_key(name) {
            values.insert(name.to_owned(), field.default.clone());
        }
        let Some(slot) = values.get_mut(name) else { return Err(invalid(format!("no state field `{name}`"))) };
        match &field.reducer {
            Reducer::Replace => {
                // A step writes a handful of fields: a scan beats hashing.
                if written.contains(&name) {
                    return Err(invalid(format!(
                        "two writes to `{name}` in one step; give it a reducer (append, merge) to combine them"
                    )));
                }
                written.push(name);
                *slot = value;
            }
            Reducer::Append => {
                let Value::Array(items) = slot else {
                    return Err(invalid(format!("field `{name}` is not an array")));
                };
                match value {
                    Value::Array(more) => items.extend(more),
                    one => items.push(one),
                }
            }
            Reducer::Merge => match (slot, value) {
                (Value::Object(into), Value::Object(from)) => into.extend(from),
                (_, other) => {
                    return Err(invalid(format!(
                        "field `{name}` merges objects, the update gave {}",
                        type_name(&other)
                    )));
                }
            },
            Reducer::Custom(f) => f(slot, value).map_err(|e| invalid(format!("reducer of `{name}`: {e}")))?,
        }
        Ok(())
    }
}

/// A snapshot of the state; cheap to clone, read-only for nodes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct State(Arc<Map<String, Value>>);

impl State {
    /// A state holding exactly these fields (the input of a fan-out branch).
    pub fn from_map(map: Map<String, Value>) -> Self {
        Self(Arc::new(map))
    }

    /// A field's value.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field)
    }

    /// A field read into a type; `None` when missing, null or of another shape.
    pub fn get_as<T: DeserializeOwned>(&self, field: &str) -> Option<T> {
        self.0.get(field).filter(|v| !v.is_null()).and_then(|v| T::deserialize(v).ok())
    }

    /// A field as an integer (0 when missing or not an integer).
    pub fn int(&self, field: &str) -> i64 {
        self.0.get(field).and_then(Value::as_i64).unwrap_or(0)
    }

    /// A field as a number (0 when missing or not a number).
    pub fn number(&self, field: &str) -> f64 {
        self.0.get(field).and_then(Value::as_f64).unwrap_or(0.0)
    }

    /// The whole state as a JSON object.
    pub fn to_value(&self) -> Value {
        Value::Object((*self.0).clone())
    }

    /// The fields.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }
}

/// What a node returns: field → written value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Update(pub(crate) Map<String, Value>);

impl Update {
    /// An update writing nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes `value` to `field`. A value that cannot be represented as JSON is written as `null`.
    #[must_use]
    pub fn set(mut self, field: &str, value: impl Serialize) -> Self {
        self.0.insert(field.to_owned(), serde_json::to_value(value).unwrap_or(Value::Null));
        self
    }

    /// An update from a JSON object.
    pub fn from_map(map: Map<String, Value>) -> Self {
        Self(map)
    }

    /// Whether it writes nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As a JSON object.
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

fn invalid(message: String) -> Rejection {
    Rejection::new(Code::InvalidUpdate, message)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(n) if n.is_f64() => "a fractional number",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
