//! Verdict values: what a check returns instead of an error when it refuses something.

use serde::{Deserialize, Serialize};

use crate::code::Code;

/// A refusal with its stable code and a human-readable reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rejection {
    /// Stable reject code.
    pub code: Code,
    /// Lowercase message without a final period; user values in backticks.
    pub message: String,
    /// Structured extras (the budget that ran out, the deciding policies, a pending approval id).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub detail: serde_json::Value,
}

impl Rejection {
    /// A rejection without details.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), detail: serde_json::Value::Null }
    }

    /// Adds structured details.
    #[must_use]
    pub fn with_detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = detail;
        self
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// `text` cut to at most `max_chars` characters (with `…` when cut), so user-supplied text never
/// floods a message or an audit record.
pub fn clip(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or_default()),
        None => text.to_owned(),
    }
}
