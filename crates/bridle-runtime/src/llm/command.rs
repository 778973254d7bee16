//! The command model: what the operator chat answers with when no model is configured (the
//! bundled configuration, `bridle serve` without `[llm]`), so the chat works out of the box,
//! deterministically and without a network.
//!
//! It reads the operator's last message and offers at most one tool call per turn, from the tools
//! the request offers (so only what the principal's scopes expose), every call still going through
//! the gate like a real model's:
//! - **Which tool.** A tool named in full (`get_replicas`) wins; otherwise the one tool whose name
//!   parts the message holds most of (`scale checkout to 3 replicas` → `scale_replicas`). A tie or
//!   no match answers with the tools it can call and the `tool key=value` form.
//! - **Which arguments**, per property of the tool's input schema: `key=value` or `key: value`;
//!   for a number, one written next to the property's name (`3 replicas`, `replicas 3`); then,
//!   for the one property still missing of a type, the one word of the message that fits the
//!   property's schema alone (pattern, enum, length) and is not part of the request's phrasing.
//!   Values are typed by the schema. A required property still missing is asked for, not guessed.
//! - **The answer.** After the tool's result comes back, the result (or the gate's refusal with
//!   its code, and the approval id when one is pending) in the operator's language: Korean when
//!   the message holds Hangul, English otherwise.
//!
//! Usage is counted as the scripted model does (⌈chars / 4⌉ each way).

use std::collections::BTreeSet;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::{ChatRequest, ChatResponse, LlmClient, LlmError, Message, Role, ToolCall, Usage};

/// The model name reported.
pub const MODEL: &str = "bridle-commands";

/// Words of a request's phrasing, never an argument's value.
const PHRASING: &[&str] = &[
    "a",
    "an",
    "and",
    "are",
    "at",
    "by",
    "can",
    "change",
    "current",
    "currently",
    "do",
    "does",
    "for",
    "from",
    "get",
    "give",
    "have",
    "how",
    "in",
    "is",
    "it",
    "list",
    "many",
    "me",
    "now",
    "of",
    "on",
    "please",
    "run",
    "scale",
    "set",
    "show",
    "tell",
    "the",
    "to",
    "up",
    "down",
    "use",
    "what",
    "which",
    "with",
    "you",
];

/// The operator chat's model when none is configured. See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct CommandModel;

#[async_trait]
impl LlmClient for CommandModel {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let (asked, after) = split_last_user(&request.messages);
        let korean = asked.chars().any(is_hangul);
        let (content, tool_calls) = if after.iter().any(|m| m.role == Role::Tool) {
            (report(after, korean), Vec::new())
        } else {
            match plan(asked, &request.tools) {
                Plan::Call { name, arguments } => {
                    let id = format!("call_{}", request.messages.iter().map(|m| m.tool_calls.len()).sum::<usize>() + 1);
                    (String::new(), vec![ToolCall { id, name, arguments: Value::Object(arguments).to_string() }])
                }
                Plan::Missing { name, missing, example } => (ask_for(&name, &missing, &example, korean), Vec::new()),
                Plan::Help(candidates) => (help(&request.tools, &candidates, korean), Vec::new()),
            }
        };
        let prompt: usize = request.messages.iter().map(|m| m.content.chars().count()).sum();
        let answer = content.chars().count() + tool_calls.iter().map(|c| c.arguments.len()).sum::<usize>();
        let finish = if tool_calls.is_empty() { "stop" } else { "tool_calls" };
        Ok(ChatResponse {
            content,
            tool_calls,
            usage: Usage { prompt_tokens: prompt.div_ceil(4) as u64, completion_tokens: answer.div_ceil(4) as u64 },
            latency: Duration::ZERO,
            model: MODEL.to_owned(),
            finish_reason: Some(finish.to_owned()),
            attempts: 1,
        })
    }

    fn system(&self) -> &str {
        "bridle"
    }

    fn model(&self) -> Option<&str> {
        Some(MODEL)
    }
}

/// What the model does with a message.
#[derive(Debug, PartialEq)]
enum Plan {
    /// Call the tool with these arguments.
    Call { name: String, arguments: Map<String, Value> },
    /// The tool is clear but required arguments are not.
    Missing { name: String, missing: Vec<String>, example: String },
    /// No single tool: the candidates (empty when nothing matched).
    Help(Vec<String>),
}

/// The last operator message and every message after it.
fn split_last_user(messages: &[Message]) -> (&str, &[Message]) {
    match messages.iter().rposition(|m| m.role == Role::User) {
        Some(i) => (messages.get(i).map_or("", |m| m.content.as_str()), messages.get(i + 1..).unwrap_or_default()),
        None => ("", &[]),
    }
}

fn is_hangul(c: char) -> bool {
    matches!(c, '\u{AC00}'..='\u{D7A3}' | '\u{1100}'..='\u{11FF}' | '\u{3130}'..='\u{318F}')
}

/// The message's words: split on whitespace and punctuation other than `_ - . = :`, and where
/// Hangul meets other letters (a Korean particle written onto a name: `checkout을` → `checkout`,
/// `을`), trimmed of leading and trailing `. :`, case kept.
fn words(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || (!c.is_alphanumeric() && !matches!(c, '_' | '-' | '.' | '=' | ':')))
        .flat_map(|w| {
            let mut parts = Vec::new();
            let mut start = 0;
            let mut previous: Option<bool> = None;
            for (at, c) in w.char_indices() {
                if previous.is_some_and(|h| h != is_hangul(c)) {
                    parts.extend(w.get(start..at));
                    start = at;
                }
                previous = Some(is_hangul(c));
            }
            parts.extend(w.get(start..));
            parts
        })
        .map(|w| w.trim_end_matches(['.', ':']).trim_start_matches(['.', ':']))
        .filter(|w| !w.is_empty())
        .collect()
}

/// A tool of the request: name and input schema.
fn offered(tools: &[Value]) -> Vec<(&str, &Value)> {
    tools
        .iter()
        .filter_map(|t| {
            let f = t.get("function")?;
            Some((f.get("name")?.as_str()?, f.get("parameters").unwrap_or(&Value::Null)))
        })
        .collect()
}

fn plan(message: &str, tools: &[Value]) -> Plan {
    let tools = offered(tools);
    let words = words(message);
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let named = lower.iter().find_map(|w| tools.iter().find(|(name, _)| name.eq_ignore_ascii_case(w)));
    let (name, schema) = match named {
        Some(tool) => *tool,
        None => {
            let score = |name: &str| name.split(['_', '-', '.']).filter(|p| lower.iter().any(|w| w == p)).count();
            let best = tools.iter().map(|(n, _)| score(n)).max().unwrap_or(0);
            let top: Vec<_> = tools.iter().filter(|(n, _)| best > 0 && score(n) == best).collect();
            match top.as_slice() {
                [tool] => **tool,
                _ => return Plan::Help(top.iter().map(|(n, _)| (*n).to_owned()).collect()),
            }
        }
    };
    let props = schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut arguments = Map::new();
    // Words that phrase the request rather than give a value.
    let mut used: BTreeSet<usize> = BTreeSet::new();
    for (i, w) in lower.iter().enumerate() {
        let is_phrasing = PHRASING.contains(&w.as_str())
            || w == &name.to_lowercase()
            || name.split(['_', '-', '.']).any(|p| p == w)
            || props.contains_key(w.as_str());
        if is_phrasing {
            used.insert(i);
        }
    }
    // 1. key=value, key: value
    for (i, w) in words.iter().enumerate() {
        let one_word = w.split_once('=').or_else(|| w.split_once(':')).filter(|(k, v)| !k.is_empty() && !v.is_empty());
        let (pair, width) = match one_word {
            Some(pair) => (Some(pair), 1),
            None => (message.contains(&format!("{w}:")).then(|| Some((*w, *words.get(i + 1)?))).flatten(), 2),
        };
        if let Some((key, value)) = pair
            && let Some(prop) = props.get(key)
            && let Some(value) = typed(value, prop)
        {
            arguments.insert(key.to_owned(), value);
            used.extend(i..i + width);
        }
    }
    // 2. a number next to its property's name
    for (key, prop) in &props {
        if arguments.contains_key(key) || !is_numeric(prop) {
            continue;
        }
        for (i, _) in lower.iter().enumerate().filter(|(_, w)| *w == key) {
            let next = [i + 1, i.wrapping_sub(1)]
                .into_iter()
                .filter(|j| !used.contains(j))
                .find_map(|j| Some((j, typed(words.get(j)?, prop)?)));
            if let Some((j, value)) = next {
                arguments.insert(key.clone(), value);
                used.insert(j);
                break;
            }
        }
    }
    // 3. the one missing property of a kind, from the one unused word that fits it alone
    for numeric in [true, false] {
        let missing: Vec<_> =
            props.iter().filter(|(k, p)| !arguments.contains_key(*k) && is_numeric(p) == numeric).collect();
        let [(key, prop)] = missing.as_slice() else { continue };
        let fits: Vec<_> = (0..words.len())
            .filter(|i| !used.contains(i))
            .filter_map(|i| Some((i, typed(words.get(i)?, prop)?)))
            .collect();
        if let [(i, value)] = fits.as_slice() {
            arguments.insert((*key).clone(), value.clone());
            used.insert(*i);
        }
    }
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let missing: Vec<String> = required.into_iter().filter(|k| !arguments.contains_key(k)).collect();
    if missing.is_empty() {
        return Plan::Call { name: name.to_owned(), arguments };
    }
    Plan::Missing { name: name.to_owned(), missing, example: example(name, &props) }
}

fn is_numeric(prop: &Value) -> bool {
    matches!(prop.get("type").and_then(Value::as_str), Some("integer" | "number"))
}

/// `text` as a value of the property's type, when it is valid against the property's schema.
fn typed(text: &str, prop: &Value) -> Option<Value> {
    let value = match prop.get("type").and_then(Value::as_str) {
        Some("integer") => json!(text.parse::<i64>().ok()?),
        Some("number") => json!(text.parse::<f64>().ok().filter(|n| n.is_finite())?),
        Some("boolean") => json!(text.parse::<bool>().ok()?),
        Some("string") | None => json!(text),
        Some(_) => return None,
    };
    jsonschema::validator_for(prop).ok()?.is_valid(&value).then_some(value)
}

/// `tool key=… key=…` with each property's type as a placeholder.
fn example(name: &str, props: &Map<String, Value>) -> String {
    let args: Vec<String> = props
        .iter()
        .map(|(k, p)| format!("{k}=<{}>", p.get("type").and_then(Value::as_str).unwrap_or("value")))
        .collect();
    format!("{name} {}", args.join(" ")).trim_end().to_owned()
}

fn ask_for(name: &str, missing: &[String], example: &str, korean: bool) -> String {
    let missing = missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
    if korean {
        format!("`{name}`을(를) 호출하려면 {missing} 값이 필요합니다. 예: `{example}`")
    } else {
        format!("To call `{name}` I need {missing}. For example: `{example}`")
    }
}

fn help(tools: &[Value], candidates: &[String], korean: bool) -> String {
    let all: Vec<String> = offered(tools)
        .iter()
        .map(|(n, s)| {
            let props = s.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            format!("- `{}`", example(n, &props))
        })
        .collect();
    let lead = match (candidates, korean) {
        ([], true) => "어떤 도구를 말씀하시는지 알 수 없습니다.".to_owned(),
        ([], false) => "I could not tell which tool you mean.".to_owned(),
        (c, true) => format!("여러 도구가 해당됩니다: {}.", c.join(", ")),
        (c, false) => format!("Several tools fit: {}.", c.join(", ")),
    };
    if all.is_empty() {
        return if korean {
            format!("{lead} 이 권한으로 호출할 수 있는 도구가 없습니다.")
        } else {
            format!("{lead} No tool is open to your scopes.")
        };
    }
    let tail = if korean {
        "호출할 수 있는 도구 (`도구 키=값` 형식):"
    } else {
        "Tools I can call (`tool key=value`):"
    };
    format!("{lead} {tail}\n{}", all.join("\n"))
}

/// The answer after the tool's result came back: each result, or the gate's refusal.
fn report(after: &[Message], korean: bool) -> String {
    let name_of = |id: &str| {
        after.iter().flat_map(|m| &m.tool_calls).find(|c| c.id == id).map(|c| c.name.clone()).unwrap_or_default()
    };
    let lines: Vec<String> = after
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            let name = name_of(m.tool_call_id.as_deref().unwrap_or_default());
            let parsed: Option<Value> = serde_json::from_str(&m.content).ok();
            match parsed.as_ref().and_then(|v| v.get("error")) {
                Some(error) => {
                    let code = error["code"].as_str().unwrap_or("error");
                    let message = error["message"].as_str().unwrap_or_default();
                    let approval = error["approval_id"].as_str();
                    match (korean, approval) {
                        (true, Some(id)) => format!("`{name}`은(는) 승인이 필요합니다 ({code}): 승인 요청 `{id}`이(가) 운영자의 결정을 기다립니다."),
                        (false, Some(id)) => format!("`{name}` needs approval ({code}): request `{id}` is waiting for an operator."),
                        (true, None) => format!("게이트가 `{name}`을(를) 거부했습니다: {code} — {message}"),
                        (false, None) => format!("The gate refused `{name}`: {code} — {message}"),
                    }
                }
                None if korean => format!("`{name}` 결과: {}", m.content),
                None => format!("`{name}` answered: {}", m.content),
            }
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn tools() -> Vec<Value> {
        let service = json!({"type": "string", "minLength": 1, "maxLength": 63, "pattern": "^[a-z0-9][a-z0-9-]*$"});
        let function = |name: &str, properties: Value, required: Value| {
            json!({"type": "function", "function": {"name": name, "description": "d",
                "parameters": {"type": "object", "properties": properties, "required": required}}})
        };
        vec![
            function("get_replicas", json!({"service": service}), json!(["service"])),
            function(
                "scale_replicas",
                json!({"service": service, "replicas": {"type": "integer"},
                       "resource_version": {"type": "integer", "minimum": 1}}),
                json!(["service", "replicas", "resource_version"]),
            ),
            function("search_law", json!({"query": {"type": "string", "maxLength": 200}}), json!(["query"])),
        ]
    }

    fn call(name: &str, arguments: Value) -> Plan {
        Plan::Call { name: name.into(), arguments: arguments.as_object().unwrap().clone() }
    }

    #[test]
    fn a_named_tool_takes_its_arguments_in_every_written_form() {
        let t = tools();
        let full = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
        for message in [
            "scale_replicas service=checkout replicas=3 resource_version=7",
            "scale_replicas service: checkout, replicas: 3, resource_version: 7",
            "please scale checkout to 3 replicas, resource_version=7",
            "scale_replicas checkout replicas 3 resource_version 7",
            "checkout을 3 replicas로 scale 해줘 resource_version=7",
        ] {
            assert_eq!(plan(message, &t), call("scale_replicas", full.clone()), "{message}");
        }
        assert_eq!(plan("get_replicas for checkout?", &t), call("get_replicas", json!({"service": "checkout"})));
        assert_eq!(plan("checkout get_replicas 보여줘", &t), call("get_replicas", json!({"service": "checkout"})));
        assert_eq!(plan("search_law 연차휴가", &t), call("search_law", json!({"query": "연차휴가"})));
    }

    #[test]
    fn values_must_fit_their_schema_and_missing_ones_are_asked_for() {
        let t = tools();
        // resource_version is written nowhere: asked for, with the form to write it in.
        match plan("scale checkout to 3 replicas", &t) {
            Plan::Missing { name, missing, example } => {
                assert_eq!((name.as_str(), missing), ("scale_replicas", vec!["resource_version".to_owned()]));
                assert!(example.contains("resource_version=<integer>"), "{example}");
            }
            other => panic!("{other:?}"),
        }
        // Two words could be the service: ask rather than pick one.
        assert!(matches!(plan("get_replicas checkout payments", &t), Plan::Missing { .. }));
        // resource_version=0 is below its minimum: not taken.
        assert!(matches!(
            plan("scale_replicas service=checkout replicas=3 resource_version=0", &t),
            Plan::Missing { missing, .. } if missing == ["resource_version"]
        ));
    }

    #[test]
    fn no_single_tool_lists_what_can_be_called() {
        let t = tools();
        assert_eq!(plan("how many replicas?", &t), Plan::Help(vec!["get_replicas".into(), "scale_replicas".into()]));
        assert_eq!(plan("hello", &t), Plan::Help(vec![]));
        let text = help(&t, &[], true);
        assert!(text.contains("`get_replicas service=<string>`") && text.contains("도구"), "{text}");
        assert!(help(&[], &[], false).contains("No tool is open"));
    }

    #[tokio::test]
    async fn a_turn_calls_once_then_reports_the_result_or_the_refusal() {
        let model = CommandModel;
        let mut messages = vec![Message::system("s"), Message::user("get_replicas service=checkout")];
        let request =
            |messages: &Vec<Message>| ChatRequest { tools: tools(), ..ChatRequest::new("chat", 1, messages.clone()) };
        let first = model.chat(&request(&messages)).await.unwrap();
        assert_eq!(first.tool_calls.len(), 1);
        assert_eq!(first.tool_calls[0].arguments, r#"{"service":"checkout"}"#);
        let mut assistant = Message::assistant("");
        assistant.tool_calls = first.tool_calls.clone();
        messages.push(assistant);
        messages.push(Message::tool(first.tool_calls[0].id.clone(), r#"{"replicas":2,"resource_version":7}"#));
        let second = model.chat(&request(&messages)).await.unwrap();
        assert!(second.tool_calls.is_empty());
        assert_eq!(second.content, r#"`get_replicas` answered: {"replicas":2,"resource_version":7}"#);

        messages.truncate(3);
        messages.push(Message::tool(
            first.tool_calls[0].id.clone(),
            json!({"error": {"code": "approval_required", "message": "m", "approval_id": "apr-1"}}).to_string(),
        ));
        messages[1] = Message::user("get_replicas service=checkout 보여줘");
        let refused = model.chat(&request(&messages)).await.unwrap();
        assert!(refused.content.contains("승인 요청 `apr-1`"), "{}", refused.content);
    }
}
