//! The guard around one chat turn: the operator's text before any model call (sanitized for the
//! chat channel, then scanned), and the model's answer before anyone sees it (canary, system
//! prompt and tool leaks withheld; secrets, PII and sensitive terms masked).
//!
//! A block is described by categories, finding kinds and byte spans only, never by the text,
//! so its reason can go to the audit log.

use bridle_core::Code;
use bridle_core::config::GuardSettings;
use bridle_core::guard::GuardError;
use bridle_core::guard::mask::Masker;
use bridle_core::guard::sanitize::{Channel, Sanitizer};

use super::leak::Protected;
use crate::guard::{Guard, Refusal};
use crate::llm::{Message, Role};

/// Why a text was stopped, safe to audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Blocked {
    pub code: Code,
    pub reason: String,
}

/// The guard, sanitizer and masker of one chat, built once.
pub(super) struct ChatGuard {
    guard: Guard,
    sanitizer: Sanitizer,
    masker: Masker,
}

impl ChatGuard {
    pub(super) fn new(settings: &GuardSettings) -> Result<Self, GuardError> {
        Ok(Self {
            guard: Guard::from_settings(settings)?,
            sanitizer: Sanitizer::new(settings.limits)?,
            masker: Masker::new()?.with_terms(&settings.sensitive_terms)?,
        })
    }

    /// The operator's text, sanitized (control characters and NUL removed), or why it must not
    /// reach the model. Earlier turns are checked too, so a forged history smuggles nothing:
    /// user messages like the new one, assistant messages by the detector alone (an answer may
    /// be longer than the chat limit). Spans are byte offsets into the message they name.
    pub(super) fn check_input(&self, history: &[Message], text: &str) -> Result<String, Blocked> {
        let clean = self.check_user("message", text)?;
        for (i, m) in history.iter().enumerate() {
            let at = format!("history[{i}]");
            match m.role {
                Role::User => {
                    self.check_user(&at, &m.content)?;
                }
                Role::Assistant => self.scan(&at, &m.content)?,
                Role::System | Role::Tool => {}
            }
        }
        Ok(clean)
    }

    fn check_user(&self, at: &str, text: &str) -> Result<String, Blocked> {
        let clean = self
            .sanitizer
            .sanitize(Channel::Chat, text)
            .map_err(|r| Blocked { code: r.code, reason: format!("chat input `{at}` refused: {}", r.message) })?;
        // The raw text is scanned: what sanitizing removes (control characters, tags) is
        // evidence of its own.
        self.scan(at, text)?;
        Ok(clean.text)
    }

    fn scan(&self, at: &str, text: &str) -> Result<(), Blocked> {
        let Err(Refusal::Blocked(d)) = self.guard.detect(text) else { return Ok(()) };
        let spans: Vec<String> =
            d.spans.iter().map(|s| format!("{} at {}..{}", s.category.as_str(), s.start, s.end)).collect();
        Err(Blocked {
            code: Code::InjectionDetected,
            reason: format!(
                "chat input `{at}` blocked before any model call (score {}): {}",
                d.score,
                spans.join(", ")
            ),
        })
    }

    /// The answer masked, or why it is withheld: it holds the canary, or repeats the system
    /// prompt or the tools offered.
    pub(super) fn check_output(&self, answer: &str, canary: &str, protected: &Protected) -> Result<String, Blocked> {
        let mut leaks: Vec<&str> = Vec::new();
        if !canary.is_empty() && answer.contains(canary) {
            leaks.push("canary");
        }
        leaks.extend(protected.find(answer).into_iter().map(super::leak::Leak::as_str));
        if !leaks.is_empty() {
            return Err(Blocked {
                code: Code::OutputBlocked,
                reason: format!("chat answer withheld: it repeats {}", leaks.join(", ")),
            });
        }
        Ok(self.masker.mask(answer).masked)
    }
}
