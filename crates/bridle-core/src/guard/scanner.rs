//! The wording of a guard block (step 4's `injection_detected`): the rejection names categories
//! and byte spans, never the text, in English and Korean. The scanner itself is the runtime's
//! guard facade (`bridle_runtime::guard`).

use serde_json::json;

use super::Detection;
use crate::code::Code;
use crate::verdict::Rejection;

/// What the caller is told when an argument is blocked (stable, English and Korean).
pub const BLOCKED_EN: &str = "the text was blocked by the guard";
/// Korean form of [`BLOCKED_EN`].
pub const BLOCKED_KO: &str = "입력이 보안 검사에서 차단되었습니다";

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
