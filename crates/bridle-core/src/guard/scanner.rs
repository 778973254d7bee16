//! The guard as the gate's `ArgumentScanner` (step 4): a `scan = true` argument longer than the
//! workflow channel allows is refused with `input_too_long`; one the detector blocks is refused
//! with `injection_detected`. The rejection names categories and byte spans, never the text.

use serde_json::json;

use super::sanitize::{Channel, Limits};
use super::{Detection, Detector};
use crate::code::Code;
use crate::ports::ArgumentScanner;
use crate::verdict::Rejection;

/// What the caller is told when an argument is blocked (stable, English and Korean).
pub const BLOCKED_EN: &str = "the text was blocked by the guard";
/// Korean form of [`BLOCKED_EN`].
pub const BLOCKED_KO: &str = "입력이 보안 검사에서 차단되었습니다";

/// The detector wired as an argument scanner.
#[derive(Debug)]
pub struct GuardScanner {
    detector: Detector,
    limits: Limits,
}

impl GuardScanner {
    /// A scanner over `detector` with channel `limits`.
    pub fn new(detector: Detector, limits: Limits) -> Self {
        Self { detector, limits }
    }

    /// The built-in detector with the limits of a validated `[guard]` section.
    pub fn from_settings(settings: &crate::config::GuardSettings) -> Result<Self, super::GuardError> {
        Ok(Self::new(Detector::new()?, settings.limits))
    }

    /// The built-in detector with default limits.
    pub fn builtin() -> Result<Self, super::GuardError> {
        Ok(Self::new(Detector::new()?, Limits::default()))
    }
}

/// The rejection for a blocked text: categories and spans, never the text itself.
pub fn blocked(param: &str, d: &Detection) -> Rejection {
    let found: Vec<String> =
        d.spans.iter().map(|s| format!("{} at {}..{}", s.category.as_str(), s.start, s.end)).collect();
    Rejection::new(
        Code::InjectionDetected,
        format!("argument `{param}`: {BLOCKED_EN} ({}); {BLOCKED_KO}", found.join(", ")),
    )
    .with_detail(json!({
        "param": param,
        "score": d.score,
        "categories": d.categories.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        "spans": d.spans.iter().map(|s| json!({"category": s.category.as_str(), "start": s.start, "end": s.end})).collect::<Vec<_>>(),
        "message_en": BLOCKED_EN,
        "message_ko": BLOCKED_KO,
    }))
}

impl ArgumentScanner for GuardScanner {
    fn scan(&self, param: &str, text: &str) -> Result<(), Rejection> {
        self.limits
            .check(Channel::Workflow, text)
            .map_err(|r| Rejection::new(r.code, format!("argument `{param}`: {}", r.message)).with_detail(r.detail))?;
        let d = self.detector.detect(text);
        if d.blocked() { Err(blocked(param, &d)) } else { Ok(()) }
    }
}
