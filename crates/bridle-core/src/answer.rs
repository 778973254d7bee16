//! Gate step 1, intake: a model's raw answer becomes at most N proposed tool calls, or a
//! rejection naming why it could not (`answer_too_long`, `unparseable_answer`, `too_many_calls`).
//!
//! Layers, first one that yields a call wins: the whole answer as JSON; JSON inside fenced
//! blocks; ReAct lines; then balanced `{…}`/`[…]` candidates found by bracket matching. Each
//! JSON text is read as written, then once more after repairing curly quotes and trailing
//! commas. Inside the JSON, Bridle's `{tool|name, arguments|args|parameters|input}` (single or
//! in an array), OpenAI `tool_calls`, OpenAI Responses `function_call` items (and a response's
//! `output`) and Anthropic `tool_use` blocks are recognised, with the caller's id of each call.
//!
//! Total and linear: every layer walks the text once, bracket candidates are disjoint until a
//! candidate fails (then its children are tried), and the bytes handed to the JSON reader are
//! capped at a small multiple of the answer's length. Nothing recurses on the input except
//! serde_json, whose depth limit (128) stands. A tool name is not checked here: a well-formed
//! call to an unregistered tool is parsed, and the gate rejects it with `unknown_tool`.

mod lines;
mod repair;
mod scan;
mod shapes;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::code::Code;
use crate::verdict::Rejection;

use scan::Pair;

/// Default most calls read from one answer.
pub const DEFAULT_MAX_CALLS: usize = 3;
/// Default longest answer, in Unicode scalar values.
pub const DEFAULT_MAX_CHARS: usize = 20_000;

/// Intake limits (`[intake]` in `bridle.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntakeLimits {
    /// Most calls one answer may hold.
    pub max_calls: usize,
    /// Longest answer, in Unicode scalar values.
    pub max_chars: usize,
}

impl Default for IntakeLimits {
    fn default() -> Self {
        Self { max_calls: DEFAULT_MAX_CALLS, max_chars: DEFAULT_MAX_CHARS }
    }
}

/// Where a call was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// The whole answer is JSON.
    Json,
    /// JSON inside a fenced code block.
    Fenced,
    /// A balanced JSON candidate inside prose.
    Bracket,
    /// `Action:` / `Action Input:` lines.
    React,
    /// An OpenAI `tool_calls` entry.
    Openai,
    /// An Anthropic `tool_use` block.
    Anthropic,
}

impl Format {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Fenced => "fenced",
            Self::Bracket => "bracket",
            Self::React => "react",
            Self::Openai => "openai",
            Self::Anthropic => "anthropic",
        }
    }
}

/// A byte range of the original answer (`start..end`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// One proposed call read from an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedCall {
    /// Tool name as written (not checked against the registry here).
    pub tool: String,
    /// Arguments as written (an object unless the model wrote something else).
    pub arguments: Value,
    /// Where it was read from.
    pub format: Format,
    /// The text it was read from: the call's own element of a top-level array, else the whole
    /// JSON text (document, block, candidate) or ReAct step that held it.
    pub span: Span,
    /// The caller's id of the call (OpenAI `id` / `call_id`, Anthropic `id`, or `tool_call_id`,
    /// `tool_use_id`, `call_id` in Bridle's own shape), when well formed: echoed on its outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// The calls of an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedAnswer {
    /// Format of the first call.
    pub format: Format,
    /// The calls, in the order written (at least one).
    pub calls: Vec<ParsedCall>,
}

/// Reads the tool calls out of a model's answer. Total: every input gets calls or a rejection.
pub fn parse_answer(answer: &str, limits: &IntakeLimits) -> Result<ParsedAnswer, Rejection> {
    if answer.len() > limits.max_chars {
        let chars = answer.chars().count();
        if chars > limits.max_chars {
            return Err(Rejection::new(
                Code::AnswerTooLong,
                format!("the answer has `{chars}` characters; at most {} are read", limits.max_chars),
            )
            .with_detail(serde_json::json!({"chars": chars, "max_chars": limits.max_chars})));
        }
    }
    let mut reader = Reader { answer, budget: answer.len().saturating_mul(6).saturating_add(4096) };
    let calls = [Reader::whole, Reader::fenced, Reader::react, Reader::brackets]
        .into_iter()
        .map(|layer| layer(&mut reader))
        .find(|calls| !calls.is_empty())
        .unwrap_or_default();
    let Some(first) = calls.first() else {
        return Err(Rejection::new(
            Code::UnparseableAnswer,
            "no tool call could be read from the answer (tried JSON, fenced blocks, ReAct lines and bracket candidates)",
        ));
    };
    if calls.len() > limits.max_calls {
        return Err(Rejection::new(
            Code::TooManyCalls,
            format!("the answer holds `{}` calls; at most {} are allowed", calls.len(), limits.max_calls),
        )
        .with_detail(serde_json::json!({"calls": calls.len(), "max_calls": limits.max_calls})));
    }
    Ok(ParsedAnswer { format: first.format, calls })
}

/// JSON text as written, else after repair; `None` if neither reads.
pub fn read_json(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok().or_else(|| serde_json::from_str(&repair::repair(text)?).ok())
}

struct Reader<'a> {
    answer: &'a str,
    /// Bytes the JSON reader may still be given.
    budget: usize,
}

impl Reader<'_> {
    /// Reads `span` as JSON and returns its calls, charging the budget.
    fn calls_in(&mut self, span: Pair, layer: Format) -> Option<Vec<ParsedCall>> {
        let text = self.answer.get(span.start..span.end)?;
        let cost = text.len().saturating_mul(2);
        if cost > self.budget {
            self.budget = 0;
            return None;
        }
        self.budget -= cost;
        let value = read_json(text)?;
        let elements = match &value {
            Value::Array(items) => scan::element_spans(text).filter(|s| s.len() == items.len()),
            _ => None,
        };
        let calls = shapes::calls(value, layer)
            .into_iter()
            .map(|s| {
                let at = s.element.and_then(|i| elements.as_ref().and_then(|e| e.get(i))).copied();
                let own = at.map_or(span, |p| Pair { start: span.start + p.start, end: span.start + p.end });
                ParsedCall {
                    tool: s.tool,
                    arguments: s.arguments,
                    format: s.format,
                    span: Span { start: own.start, end: own.end },
                    call_id: s.call_id,
                }
            })
            .collect();
        Some(calls)
    }

    fn whole(&mut self) -> Vec<ParsedCall> {
        let lead = self.answer.len() - self.answer.trim_start().len();
        let span = Pair { start: lead, end: lead + self.answer.trim().len() };
        self.calls_in(span, Format::Json).unwrap_or_default()
    }

    fn fenced(&mut self) -> Vec<ParsedCall> {
        let mut calls = Vec::new();
        for block in lines::fenced_blocks(self.answer) {
            calls.extend(self.calls_in(block, Format::Fenced).unwrap_or_default());
        }
        calls
    }

    fn react(&mut self) -> Vec<ParsedCall> {
        let mut calls = Vec::new();
        for step in lines::react_steps(self.answer) {
            let Some(input) = self.answer.get(step.input.start..step.input.end) else { continue };
            // The input is the first balanced object of the step (prose may follow it).
            let forest = scan::scan(input);
            let Some(object) = forest.roots().first().and_then(|&r| forest.pair(r)) else { continue };
            if !input.get(object.start..).is_some_and(|s| s.starts_with('{')) {
                continue;
            }
            let Some(text) = input.get(object.start..object.end) else { continue };
            let cost = text.len().saturating_mul(2);
            if cost > self.budget {
                break;
            }
            self.budget -= cost;
            let Some(arguments) = read_json(text) else { continue };
            let end = step.input.start + object.end;
            calls.push(ParsedCall {
                tool: step.tool,
                arguments,
                format: Format::React,
                span: Span { start: step.start, end },
                call_id: None,
            });
        }
        calls
    }

    fn brackets(&mut self) -> Vec<ParsedCall> {
        // The other layers read disjoint texts once; only here can a failed candidate lead to
        // its children being read again, so this layer gets a fresh budget of its own.
        self.budget = self.answer.len().saturating_mul(4).saturating_add(4096);
        let forest = scan::scan(self.answer);
        let mut calls = Vec::new();
        let mut todo: Vec<usize> = forest.roots().iter().rev().copied().collect();
        while let Some(i) = todo.pop() {
            if self.budget == 0 {
                break;
            }
            let Some(pair) = forest.pair(i) else { continue };
            match self.calls_in(pair, Format::Bracket) {
                Some(found) => calls.extend(found),
                // Not JSON as a whole: its inner candidates may be.
                None => todo.extend(forest.children(i).into_iter().rev()),
            }
        }
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ParsedAnswer, Rejection> {
        parse_answer(text, &IntakeLimits::default())
    }

    #[test]
    fn whole_json_call() {
        let text = r#" {"tool": "calculate", "arguments": {"expression": "1+1"}} "#;
        let p = parse(text).ok();
        let call = p.as_ref().and_then(|p| p.calls.first());
        assert_eq!(call.map(|c| (c.tool.as_str(), c.format)), Some(("calculate", Format::Json)));
        let span = call.map(|c| c.span).unwrap_or(Span { start: 0, end: 0 });
        assert_eq!(text.get(span.start..span.end), Some(text.trim()));
    }

    #[test]
    fn array_elements_get_their_own_spans() {
        let t = r#"[{"tool": "a"}, {"tool": "b"}]"#;
        let spans: Vec<_> = parse(t).map(|p| p.calls.iter().map(|c| c.span).collect()).unwrap_or_default();
        assert_eq!(spans, [Span { start: 1, end: 14 }, Span { start: 16, end: 29 }]);
    }

    #[test]
    fn nothing_readable_is_unparseable() {
        for t in ["", "   ", "no calls here", "{not json", "[1, 2]", "{\"tool\": 3}"] {
            assert_eq!(parse(t).err().map(|r| r.code), Some(Code::UnparseableAnswer), "{t}");
        }
    }
}
