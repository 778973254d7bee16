//! The guard: detects injection and obfuscation in text that will reach a model or an operator,
//! and (in its submodules) sanitizes inputs, masks outputs and spotlights untrusted content.
//!
//! Pure and total: every function here takes text and returns a value; nothing reads files or
//! the network. Time is linear in the input: patterns run on the `regex` crate (no
//! backtracking) and keyword sets on aho-corasick; decoding is bounded in depth and size.

pub mod combine;
mod decode;
pub mod detect;
pub mod eval;
mod jamo;
pub mod mask;
mod mention;
pub mod model;
mod normalize;
mod rules;
pub mod sanitize;
pub mod scanner;
pub mod spotlight;

use serde::{Deserialize, Serialize};

pub use detect::{Detector, RuleHit};

/// What the detector concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardVerdict {
    /// Nothing found that must stop the text.
    Allow,
    /// The text must not reach a model or an operator.
    Block,
}

impl GuardVerdict {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Block => "block",
        }
    }
}

/// A family of attack (or of obfuscation) the detector recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// "ignore the previous instructions", "이전 지시를 무시".
    InstructionOverride,
    /// "you are now …", "너는 이제 …".
    RoleRedefinition,
    /// Asking for the system prompt, hidden rules, secrets or internal structure.
    PromptExtraction,
    /// Switching on admin, debug or developer modes.
    PrivilegeEscalation,
    /// Chat-template tokens and closing tags that fake a turn or a system block.
    DelimiterInjection,
    /// Text shaped like a tool call the harness might execute.
    ToolCallSmuggling,
    /// Markdown images or links that carry data to an outside URL, "send … to <address>".
    Exfiltration,
    /// Jailbreak personas and "no restrictions" framings.
    Jailbreak,
    /// An encoded payload, or a request to decode and follow one.
    EncodedPayload,
    /// Zero-width, bidi, variation-selector or tag characters (removed before matching).
    InvisibleCharacters,
    /// Other obfuscation: combining-mark floods, spaced or interleaved letters, jamo or chosung
    /// spelling, terminal escapes.
    Obfuscation,
    /// The learned detector's score passed its channel's threshold (no rule needed).
    Learned,
}

impl Category {
    /// Stable snake_case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InstructionOverride => "instruction_override",
            Self::RoleRedefinition => "role_redefinition",
            Self::PromptExtraction => "prompt_extraction",
            Self::PrivilegeEscalation => "privilege_escalation",
            Self::DelimiterInjection => "delimiter_injection",
            Self::ToolCallSmuggling => "tool_call_smuggling",
            Self::Exfiltration => "exfiltration",
            Self::Jailbreak => "jailbreak",
            Self::EncodedPayload => "encoded_payload",
            Self::InvisibleCharacters => "invisible_characters",
            Self::Obfuscation => "obfuscation",
            Self::Learned => "learned",
        }
    }
}

/// A byte range of the UTF-8 input, `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
    /// What was found here.
    pub category: Category,
}

/// The detector's answer for one text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// Allow or block.
    pub verdict: GuardVerdict,
    /// Evidence in `0.0..=1.0`; blocks at [`BLOCK_SCORE`] and above.
    pub score: f64,
    /// Families found, sorted, without duplicates.
    pub categories: Vec<Category>,
    /// Where (byte offsets into the input), sorted.
    pub spans: Vec<Span>,
}

/// The score at which a text is blocked.
pub const BLOCK_SCORE: f64 = 0.5;

impl Detection {
    /// Nothing found.
    pub fn clean() -> Self {
        Self { verdict: GuardVerdict::Allow, score: 0.0, categories: Vec::new(), spans: Vec::new() }
    }

    /// Whether the text is blocked.
    pub fn blocked(&self) -> bool {
        self.verdict == GuardVerdict::Block
    }
}

/// The guard could not be built (a bad extra rule, a bad configured term).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuardError {
    /// A pattern did not compile.
    #[error("pattern `{name}` does not compile: {reason}")]
    Pattern {
        /// Rule name.
        name: String,
        /// Compiler message.
        reason: String,
    },
    /// A rule file could not be read.
    #[error("rule file is invalid: {0}")]
    RuleFile(String),
    /// The learned detector's weights were refused (checksum or format): no guard is built.
    #[error("guard model refused: {0}")]
    Model(String),
}
