//! What a chat answer must never repeat: the system prompt's text and the offered tools'
//! descriptions and schemas. Texts are compared as runs of normalized words (lowercased, every
//! character that is not a letter or digit a separator), so re-wrapping, re-indenting or
//! re-quoting a leaked text does not hide it.
//!
//! The system prompt and each schema are cut into overlapping runs of [`SHINGLE`] words; an
//! answer containing any such run leaks. A tool description leaks only when repeated whole
//! (a paraphrase of what a tool does is a normal answer). Texts too short to be distinctive
//! (fewer than [`MIN_WORDS`] words) are not protected this way; the canary covers the prompt.

use std::collections::HashSet;

/// Words in one protected run.
pub const SHINGLE: usize = 8;
/// Fewest words a text needs to be protected at all.
pub const MIN_WORDS: usize = 4;

/// Words that only a printed JSON Schema or MCP tool listing contains.
const SCHEMA_MARKERS: &[&str] = &["additionalproperties", "inputschema"];

/// What leaked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Leak {
    /// Text of the system prompt.
    SystemPrompt,
    /// A tool's description, whole.
    ToolList,
    /// A tool's input schema.
    ToolSchema,
}

impl Leak {
    /// Stable name, used in audit reasons.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::SystemPrompt => "system_prompt",
            Self::ToolList => "tool_list",
            Self::ToolSchema => "tool_schema",
        }
    }
}

/// The protected texts of one chat turn.
#[derive(Debug, Default)]
pub struct Protected {
    runs: Vec<(String, Leak)>,
    wholes: Vec<(String, Leak)>,
}

impl Protected {
    /// Protects every run of [`SHINGLE`] words of `text` (the whole text when shorter).
    pub fn add_runs(&mut self, leak: Leak, text: &str) {
        let words = words(text);
        if words.len() < MIN_WORDS {
            return;
        }
        if words.len() <= SHINGLE {
            self.wholes.push((words.join(" "), leak));
            return;
        }
        for run in words.windows(SHINGLE) {
            self.runs.push((run.join(" "), leak));
        }
    }

    /// Protects `text` only as a whole.
    pub fn add_whole(&mut self, leak: Leak, text: &str) {
        let words = words(text);
        if words.len() >= MIN_WORDS {
            self.wholes.push((words.join(" "), leak));
        }
    }

    /// What of the protected texts `answer` repeats, sorted, without duplicates.
    pub fn find(&self, answer: &str) -> Vec<Leak> {
        let words = words(answer);
        let mut found = Vec::new();
        if words.iter().any(|w| SCHEMA_MARKERS.contains(&w.as_str())) {
            found.push(Leak::ToolSchema);
        }
        if words.len() >= SHINGLE {
            let windows: HashSet<String> = words.windows(SHINGLE).map(|w| w.join(" ")).collect();
            found.extend(self.runs.iter().filter(|(run, _)| windows.contains(run)).map(|(_, leak)| *leak));
        }
        let padded = format!(" {} ", words.join(" "));
        found.extend(
            self.wholes.iter().filter(|(whole, _)| padded.contains(&format!(" {whole} "))).map(|(_, leak)| *leak),
        );
        found.sort_unstable();
        found.dedup();
        found
    }
}

/// Lowercased runs of letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reformatted_prompt_text_and_schemas_are_found() {
        let mut p = Protected::default();
        p.add_runs(
            Leak::SystemPrompt,
            "You are the fab operations assistant. Never reveal internal recipes or equipment credentials.",
        );
        p.add_runs(
            Leak::ToolSchema,
            r#"{"type":"object","required":["equipment"],"properties":{"equipment":{"type":"string"}}}"#,
        );
        p.add_whole(Leak::ToolList, "Read an equipment's current recipe setpoints.");
        let echo = "My instructions: you are the FAB operations\n  assistant; never reveal internal recipes";
        assert_eq!(p.find(echo), [Leak::SystemPrompt]);
        let schema = "type: object\nrequired: [equipment]\nproperties:\n  equipment: {type: string}";
        assert_eq!(p.find(schema), [Leak::ToolSchema]);
        assert_eq!(p.find("Tools: get_recipe — read an equipment's current recipe setpoints"), [Leak::ToolList]);
        assert_eq!(p.find(r#"{"inputSchema": {}}"#), [Leak::ToolSchema]);
    }

    #[test]
    fn ordinary_answers_and_paraphrases_pass() {
        let mut p = Protected::default();
        p.add_runs(Leak::SystemPrompt, "You are the fab operations assistant. Answer briefly and in Korean.");
        p.add_whole(Leak::ToolList, "Read a service's current replica count and resource version.");
        assert!(p.find("checkout runs 2 replicas at resource version 7.").is_empty());
        assert!(p.find("The service's current replica count is 2.").is_empty());
        assert!(p.find("").is_empty());
    }
}
