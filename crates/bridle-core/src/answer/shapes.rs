//! The shapes a tool call takes once its JSON is read: Bridle's own `{tool|name, arguments…}`,
//! OpenAI Chat Completions `tool_calls` (arguments as a JSON string), OpenAI Responses
//! `function_call` items (alone, in an array, or in a response's `output`) and Anthropic
//! `tool_use` blocks. The caller's own id of a call (`id`, `call_id`, `tool_call_id`,
//! `tool_use_id`) is kept when it is a well-formed id, so outcomes can be matched to calls.

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
    /// The caller's id of the call, when it wrote a well-formed one.
    pub call_id: Option<String>,
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
    // An OpenAI Responses API response: `output` items, of which `function_call` are calls.
    if let Some(Value::Array(items)) = map.get("output")
        && items.iter().any(|i| i.get("type").and_then(Value::as_str) == Some("function_call"))
    {
        let Some(Value::Array(items)) = map.remove("output") else { return Vec::new() };
        return items.into_iter().filter_map(object).filter_map(|m| one(m, layer)).collect();
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
    let call_id = caller_id(&map);
    let kind = map.get("type").and_then(Value::as_str);
    // Anthropic: {"type": "tool_use", "id", "name", "input": {...}}
    if kind == Some("tool_use") {
        let tool = name(map.remove("name"))?;
        let arguments = map.remove("input").map_or_else(empty, decode_string);
        return Some(Shape { tool, arguments, format: Format::Anthropic, element: None, call_id });
    }
    // OpenAI Responses: {"type": "function_call", "call_id", "name", "arguments": "<json>"}
    if kind == Some("function_call") {
        let tool = name(map.remove("name"))?;
        let arguments = map.remove("arguments").map_or_else(empty, decode_string);
        return Some(Shape { tool, arguments, format: Format::Openai, element: None, call_id });
    }
    // OpenAI: {"id", "type": "function", "function": {"name", "arguments": "<json>"}}
    if let Some(Value::Object(mut function)) = map.remove("function") {
        let tool = name(function.remove("name"))?;
        let arguments = function.remove("arguments").map_or_else(empty, decode_string);
        return Some(Shape { tool, arguments, format: Format::Openai, element: None, call_id });
    }
    // Bridle's own: {"tool"|"name": …, "arguments"|"args"|"parameters"|"input": {...}}
    let args = ARGUMENT_KEYS.iter().find_map(|k| map.remove(*k));
    let tool = match (map.remove("tool"), &args) {
        (Some(tool), _) => name(Some(tool))?,
        (None, Some(_)) => name(map.remove("name"))?,
        (None, None) => return None,
    };
    Some(Shape { tool, arguments: args.map_or_else(empty, decode_string), format: layer, element: None, call_id })
}

/// Keys that may hold the caller's id of a call, in order of preference (Responses' `call_id`
/// before its item `id`).
const ID_KEYS: [&str; 4] = ["call_id", "tool_call_id", "tool_use_id", "id"];

/// The caller's id of the call in `map`: the first of [`ID_KEYS`] holding a well-formed id (at
/// most 128 characters of letters, digits and `-_.:/@`); anything else is not echoed.
fn caller_id(map: &Map<String, Value>) -> Option<String> {
    let id = ID_KEYS.iter().find_map(|k| map.get(*k).and_then(Value::as_str))?;
    (!id.is_empty() && crate::bounds::check_id("call_id", id).is_ok()).then(|| id.to_owned())
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
