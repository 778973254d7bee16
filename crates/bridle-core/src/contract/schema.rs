//! Tool schemas: JSON Schema draft 2020-12, compiled once at load. Input schemas are closed to
//! unknown fields; output schemas (what a result looks like) may stay open.

use serde_json::Value;

use crate::code::Code;
use crate::verdict::Rejection;

/// Why a schema was refused at load.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// Not a valid draft 2020-12 schema.
    #[error("invalid JSON Schema: {0}")]
    Invalid(String),
    /// An object schema that would let unknown fields through.
    #[error("object schema at `{0}` allows unknown properties; set `additionalProperties: false`")]
    OpenObject(String),
    /// The root must describe an object of named arguments.
    #[error("the root schema must be `type: object`")]
    RootNotObject,
}

/// A compiled input schema with the text it came from.
pub struct CompiledSchema {
    source: Value,
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema").field("source", &self.source).finish_non_exhaustive()
    }
}

/// Most schema errors reported in one rejection.
const MAX_REPORTED: usize = 5;

impl CompiledSchema {
    /// Compiles a draft 2020-12 schema, refusing open object schemas.
    pub fn compile(source: Value) -> Result<Self, Vec<SchemaError>> {
        let mut errors = Vec::new();
        if let Err(e) = jsonschema::draft202012::meta::validate(&source) {
            errors.push(SchemaError::Invalid(e.to_string()));
            return Err(errors);
        }
        if source.get("type").and_then(Value::as_str) != Some("object") {
            errors.push(SchemaError::RootNotObject);
        }
        find_open_objects(&source, "#", &mut errors);
        let validator = match jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(&source) {
            Ok(v) => v,
            Err(e) => {
                errors.push(SchemaError::Invalid(e.to_string()));
                return Err(errors);
            }
        };
        if errors.is_empty() { Ok(Self { source, validator }) } else { Err(errors) }
    }

    /// Compiles the draft 2020-12 schema of a tool's results: the root describes an object (as
    /// MCP's `outputSchema` must), and objects may stay open, since a result is the tool's to
    /// shape and checking it must not refuse a field the contract did not foresee.
    pub fn compile_output(source: Value) -> Result<Self, Vec<SchemaError>> {
        if let Err(e) = jsonschema::draft202012::meta::validate(&source) {
            return Err(vec![SchemaError::Invalid(e.to_string())]);
        }
        if source.get("type").and_then(Value::as_str) != Some("object") {
            return Err(vec![SchemaError::RootNotObject]);
        }
        match jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(&source) {
            Ok(validator) => Ok(Self { source, validator }),
            Err(e) => Err(vec![SchemaError::Invalid(e.to_string())]),
        }
    }

    /// Whether `value` conforms.
    pub fn accepts(&self, value: &Value) -> bool {
        self.validator.is_valid(value)
    }

    /// The schema as written.
    pub fn source(&self) -> &Value {
        &self.source
    }

    /// Validates arguments; a failure is `schema_rejected` naming the offending locations.
    pub fn check(&self, args: &Value) -> Result<(), Rejection> {
        if self.validator.is_valid(args) {
            return Ok(());
        }
        let problems: Vec<String> = self
            .validator
            .iter_errors(args)
            .take(MAX_REPORTED)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                clip(&format!("at `{at}`: {}", e.masked()))
            })
            .collect();
        Err(Rejection::new(Code::SchemaRejected, problems.join("; ")))
    }
}

/// Longest schema problem kept in a message: user text never floods an audit record.
const MAX_PROBLEM_CHARS: usize = 240;

fn clip(text: &str) -> String {
    crate::verdict::clip(text, MAX_PROBLEM_CHARS)
}

/// Walks every subschema that describes objects and records those that are open.
fn find_open_objects(schema: &Value, at: &str, out: &mut Vec<SchemaError>) {
    let Value::Object(map) = schema else { return };
    let describes_object = map.get("type").is_some_and(|t| match t {
        Value::String(s) => s == "object",
        Value::Array(a) => a.iter().any(|v| v == "object"),
        _ => false,
    }) || map.contains_key("properties");
    if describes_object {
        let closed = |key: &str| map.get(key) == Some(&Value::Bool(false));
        if !(closed("additionalProperties") || closed("unevaluatedProperties")) {
            out.push(SchemaError::OpenObject(at.to_owned()));
        }
    }
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        if let Some(Value::Object(children)) = map.get(key) {
            for (name, child) in children {
                find_open_objects(child, &format!("{at}/{key}/{name}"), out);
            }
        }
    }
    for key in ["items", "additionalProperties", "not", "if", "then", "else", "contains"] {
        if let Some(child) = map.get(key) {
            find_open_objects(child, &format!("{at}/{key}"), out);
        }
    }
    for key in ["allOf", "anyOf", "oneOf", "prefixItems"] {
        if let Some(Value::Array(children)) = map.get(key) {
            for (i, child) in children.iter().enumerate() {
                find_open_objects(child, &format!("{at}/{key}/{i}"), out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn open_root_is_refused() {
        let errs = CompiledSchema::compile(json!({"type": "object", "properties": {"a": {"type": "string"}}}))
            .err()
            .unwrap_or_default();
        assert_eq!(errs, vec![SchemaError::OpenObject("#".into())]);
    }

    #[test]
    fn open_nested_object_is_refused() {
        let errs = CompiledSchema::compile(json!({
            "type": "object", "additionalProperties": false,
            "properties": {"inner": {"type": "object"}}
        }))
        .err()
        .unwrap_or_default();
        assert_eq!(errs, vec![SchemaError::OpenObject("#/properties/inner".into())]);
    }

    #[test]
    fn closed_schema_checks_arguments() -> Result<(), String> {
        let s = CompiledSchema::compile(json!({
            "type": "object", "additionalProperties": false,
            "properties": {"service": {"type": "string"}}, "required": ["service"]
        }))
        .map_err(|e| format!("{e:?}"))?;
        assert!(s.check(&json!({"service": "checkout"})).is_ok());
        let r = s.check(&json!({"service": "checkout", "tenant": "b"})).err();
        assert_eq!(r.map(|r| r.code), Some(Code::SchemaRejected));
        assert!(s.check(&json!({"service": 3})).is_err());
        assert!(s.check(&json!([])).is_err());
        Ok(())
    }

    #[test]
    fn problems_never_echo_huge_input() -> Result<(), String> {
        let s = CompiledSchema::compile(json!({"type": "object", "additionalProperties": false, "properties": {}}))
            .map_err(|e| format!("{e:?}"))?;
        let key = "k".repeat(100_000);
        let r = s.check(&json!({ key: "v".repeat(100_000) })).err().ok_or("accepted")?;
        assert!(r.message.chars().count() < 2_000, "{}", r.message.len());
        Ok(())
    }

    #[test]
    fn invalid_schema_is_refused() {
        assert!(CompiledSchema::compile(json!({"type": "objekt"})).is_err());
    }
}
