//! The shapes a tool call takes once its JSON is read: Bridle's own `{tool|name, arguments…}`,
//! OpenAI `tool_calls` (arguments as a JSON string) and Anthropic `tool_use` blocks.

use serde_json::{Map, Value};

use super::Format;

/// Keys that may hold the arguments of a call, in order of preference.
const ARGUMENT_KEYS: [&str; 4] = ["arguments", "args", "parameters", "input"];

/// A call read out of a JSON value, before its span is known.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shape {
    pub tool: String,
    pub arguments: Value,
    pub format: Format,
    /// Index in a top-level array, when the call is one element of it.
    pub element: Option<usize>,
}

/// Every call in `value`; `layer` is the format of a plain `{tool, arguments}` call (the way
/// its JSON was found). Vendor formats name themselves.
pub(super) fn calls(value: Value, layer: Format) -> Vec<Shape> {
    match value {
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .filter_map(|(i, item)| match item {
                Value::Object(map) => one(map, layer).map(|s| Shape { element: Some(i), ..s }),
                _ => None,
            })
            .collect(),
        Value::Object(map) => container(map, layer),
        _ => Vec::new(),
    }
}

/// An object that may wrap calls: an OpenAI message (`tool_calls`, or the older
/// `function_call`) or completion, an Anthropic message, or a single call.
fn container(mut map: Map<String, Value>, layer: Format) -> Vec<Shape> {
    if let Some(Value::Array(items)) = map.remove("tool_calls") {
        return items.into_iter().filter_map(object).filter_map(|m| one(m, layer)).collect();
    }
    // OpenAI's older single `function_call: {name, arguments}`.
    if let Some(Value::Object(function)) = map.remove("function_call") {
        let mut wrapped = Map::new();
        wrapped.insert("function".to_owned(), Value::Object(function));
        return one(wrapped, layer).into_iter().collect();
    }
    if let Some(Value::Array(choices)) = map.remove("choices") {
        return choices
            .into_iter()
            .filter_map(|c| c.get("message").and_then(|m| m.get("tool_calls")).cloned())
            .flat_map(|calls| match calls {
                Value::Array(items) => items,
                _ => Vec::new(),
            })
            .filter_map(object)
            .filter_map(|m| one(m, layer))
            .collect();
    }
    if let Some(Value::Array(blocks)) = map.get("content")
        && blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
    {
        let Some(Value::Array(blocks)) = map.remove("content") else { return Vec::new() };
        return blocks.into_iter().filter_map(object).filter_map(|m| one(m, layer)).collect();
    }
    one(map, layer).into_iter().collect()
}

fn object(v: Value) -> Option<Map<String, Value>> {
    match v {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// One call object in any of the accepted shapes.
fn one(mut map: Map<String, Value>, layer: Format) -> Option<Shape> {
    // Anthropic: {"type": "tool_use", "id", "name", "input": {...}}
    if map.get("type").and_then(Value::as_str) == Some("tool_use") {
        let tool = name(map.remove("name"))?;
        let arguments = map.remove("input").map_or_else(empty, decode_string);
        return Some(Shape { tool, arguments, format: Format::Anthropic, element: None });
    }
    // OpenAI: {"id", "type": "function", "function": {"name", "arguments": "<json>"}}
    if let Some(Value::Object(mut function)) = map.remove("function") {
        let tool = name(function.remove("name"))?;
        let arguments = function.remove("arguments").map_or_else(empty, decode_string);
        return Some(Shape { tool, arguments, format: Format::Openai, element: None });
    }
    // Bridle's own: {"tool"|"name": …, "arguments"|"args"|"parameters"|"input": {...}}
    let args = ARGUMENT_KEYS.iter().find_map(|k| map.remove(*k));
    let tool = match (map.remove("tool"), &args) {
        (Some(tool), _) => name(Some(tool))?,
        (None, Some(_)) => name(map.remove("name"))?,
        (None, None) => return None,
    };
    Some(Shape { tool, arguments: args.map_or_else(empty, decode_string), format: layer, element: None })
}

fn name(v: Option<Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ => None,
    }
}

fn empty() -> Value {
    Value::Object(Map::new())
}

/// Arguments written as a JSON string (OpenAI's way) are read; a string that is not JSON
/// stays a string, and the contract rejects it.
fn decode_string(v: Value) -> Value {
    match v {
        Value::String(s) => super::read_json(&s).unwrap_or(Value::String(s)),
        other => other,
    }
}
