//! The sanitizer, per channel: length limits (`input_too_long`, never a silent cut), control
//! characters and NUL removed, newlines and whitespace normalized, HTML tags and script blocks
//! stripped, and a report of what changed.

use regex::Regex;
use serde::Serialize;

use crate::code::Code;
use crate::verdict::Rejection;

/// Where a text comes from; each channel has its own length limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    /// An operator's chat message (limit in characters).
    Chat,
    /// A workflow parameter, such as a `scan = true` argument (limit in characters).
    Workflow,
    /// A tool output or retrieved document (limit in bytes).
    Document,
}

/// Length limits per channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Chat, characters (default 2,000).
    pub chat_chars: usize,
    /// Workflow parameter, characters (default 500).
    pub workflow_chars: usize,
    /// Document, bytes (default 1 MB).
    pub document_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { chat_chars: 2_000, workflow_chars: 500, document_bytes: 1_000_000 }
    }
}

impl Limits {
    /// `input_too_long` if `text` is over the channel's limit.
    pub fn check(&self, channel: Channel, text: &str) -> Result<(), Rejection> {
        let (size, limit, unit) = match channel {
            Channel::Chat => (text.chars().count(), self.chat_chars, "characters"),
            Channel::Workflow => (text.chars().count(), self.workflow_chars, "characters"),
            Channel::Document => (text.len(), self.document_bytes, "bytes"),
        };
        if size > limit {
            return Err(Rejection::new(
                Code::InputTooLong,
                format!("input has {size} {unit}, more than the {limit} the channel allows"),
            )
            .with_detail(serde_json::json!({"size": size, "limit": limit, "unit": unit})));
        }
        Ok(())
    }
}

/// One kind of change the sanitizer made, with how many times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    /// `control_removed`, `nul_removed`, `newlines_normalized`, `whitespace_normalized`,
    /// `html_removed`.
    pub kind: &'static str,
    /// Occurrences.
    pub count: usize,
}

/// A sanitized text and the report of what changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sanitized {
    /// The clean text.
    pub text: String,
    /// What changed (empty when nothing did).
    pub changes: Vec<Change>,
}

/// The sanitizer (its patterns compiled once).
#[derive(Debug)]
pub struct Sanitizer {
    limits: Limits,
    blocks: Regex,
    tags: Regex,
}

impl Sanitizer {
    /// A sanitizer with `limits`.
    pub fn new(limits: Limits) -> Result<Self, super::GuardError> {
        let compile = |name: &str, p: &str| {
            Regex::new(p).map_err(|e| super::GuardError::Pattern { name: name.to_owned(), reason: e.to_string() })
        };
        Ok(Self {
            limits,
            blocks: compile("html blocks", r"(?is)<\s*(script|style)\b[^>]*>.*?<\s*/\s*(?:script|style)\s*>")?,
            tags: compile("html tags", r"</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]{0,1000})?/?>|<!--.*?-->")?,
        })
    }

    /// Sanitizes `text` for `channel`; over-length input is refused, never cut.
    pub fn sanitize(&self, channel: Channel, text: &str) -> Result<Sanitized, Rejection> {
        self.limits.check(channel, text)?;
        let mut changes = Vec::new();
        let mut note = |kind: &'static str, count: usize| {
            if count > 0 {
                changes.push(Change { kind, count });
            }
        };
        let s = text.replace("\r\n", "\n").replace('\r', "\n");
        note("newlines_normalized", text.matches('\r').count());
        let nul = s.matches('\0').count();
        note("nul_removed", nul);
        let control = s.chars().filter(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\0')).count();
        note("control_removed", control);
        let s: String = s.chars().filter(|c| !c.is_control() || matches!(c, '\n' | '\t')).collect();
        let blocks = self.blocks.find_iter(&s).count();
        let s = self.blocks.replace_all(&s, "").into_owned();
        let tags = self.tags.find_iter(&s).count();
        let s = self.tags.replace_all(&s, "").into_owned();
        note("html_removed", blocks + tags);
        let (s, ws) = normalize_whitespace(&s);
        note("whitespace_normalized", ws);
        Ok(Sanitized { text: s, changes })
    }
}

/// Tabs and Unicode spaces become one space, runs of spaces collapse, line ends are trimmed and
/// more than one blank line collapses to one. Returns the text and how many runs changed.
fn normalize_whitespace(s: &str) -> (String, usize) {
    let mut out = String::with_capacity(s.len());
    let mut changed = 0;
    let mut blank_lines = 0;
    for line in s.split('\n') {
        let mut l = String::with_capacity(line.len());
        let mut space = false;
        for c in line.chars() {
            if c.is_whitespace() {
                if space || c != ' ' {
                    changed += 1;
                }
                space = true;
            } else {
                if space && !l.is_empty() {
                    l.push(' ');
                }
                space = false;
                l.push(c);
            }
        }
        if space {
            changed += 1;
        }
        if l.is_empty() {
            blank_lines += 1;
            if blank_lines > 1 {
                changed += 1;
                continue;
            }
        } else {
            blank_lines = 0;
        }
        if !out.is_empty() || !l.is_empty() {
            out.push_str(&l);
            out.push('\n');
        }
    }
    while out.ends_with('\n') {
        out.pop();
    }
    (out, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sanitizer() -> Sanitizer {
        Sanitizer::new(Limits::default()).unwrap_or_else(|e| unreachable!("{e}"))
    }

    #[test]
    fn over_length_is_refused_not_cut() {
        let long = "가".repeat(2_001);
        let r = sanitizer().sanitize(Channel::Chat, &long);
        assert_eq!(r.map_err(|e| e.code), Err(Code::InputTooLong));
        assert!(sanitizer().sanitize(Channel::Chat, &"가".repeat(2_000)).is_ok());
        assert_eq!(
            sanitizer().sanitize(Channel::Workflow, &"a".repeat(501)).map_err(|e| e.code),
            Err(Code::InputTooLong)
        );
    }

    #[test]
    fn cleans_and_reports() {
        let r = sanitizer().sanitize(Channel::Document, "hi\0 <b>there</b>\r\n<script>x()</script>ok\t\tnow");
        let r = r.unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(r.text, "hi there\nok now");
        let kinds: Vec<_> = r.changes.iter().map(|c| c.kind).collect();
        assert!(kinds.contains(&"nul_removed"));
        assert!(kinds.contains(&"html_removed"));
        assert!(kinds.contains(&"newlines_normalized"));
        assert!(kinds.contains(&"whitespace_normalized"));
        let clean = sanitizer().sanitize(Channel::Chat, "plain text").unwrap_or_else(|e| unreachable!("{e}"));
        assert!(clean.changes.is_empty());
    }
}
