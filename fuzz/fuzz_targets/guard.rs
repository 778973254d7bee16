//! Fuzz target: any UTF-8 text through the guard: detection (with its decode-and-rescan of
//! base64, hex, URL, ROT13 … layers), the length check of every channel and masking with a
//! canary and sensitive terms. Spans must point into the input, scores stay in 0..=1, and a
//! masked text never still holds the canary or a sensitive term.
#![no_main]

use std::sync::LazyLock;

use bridle_core::guard::mask::Masker;
use bridle_core::guard::sanitize::{Channel, Limits, Sanitizer};
use bridle_core::guard::{BLOCK_SCORE, Detector, GuardVerdict};
use libfuzzer_sys::fuzz_target;

const CANARY: &str = "CNRY-7Q2X";
const TERM: &str = "orders_db";

struct Guard {
    detector: Detector,
    masker: Masker,
    sanitizer: Sanitizer,
}

static GUARD: LazyLock<Guard> = LazyLock::new(|| {
    let terms = vec![TERM.to_owned(), "payments_ledger".to_owned()];
    Guard {
        detector: Detector::new().unwrap_or_else(|e| panic!("detector: {e}")),
        masker: Masker::new()
            .and_then(|m| m.with_terms(&terms))
            .map(|m| m.with_canary(CANARY))
            .unwrap_or_else(|e| panic!("masker: {e}")),
        sanitizer: Sanitizer::new(Limits::default()).unwrap_or_else(|e| panic!("sanitizer: {e}")),
    }
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let g = &*GUARD;

    let d = g.detector.detect(text);
    assert!((0.0..=1.0).contains(&d.score), "score {}", d.score);
    assert_eq!(d.verdict == GuardVerdict::Block, d.score >= BLOCK_SCORE);
    for s in &d.spans {
        assert!(s.start <= s.end && text.get(s.start..s.end).is_some(), "span {s:?} outside the input");
    }

    for channel in [Channel::Chat, Channel::Workflow, Channel::Document] {
        let _ = g.sanitizer.sanitize(channel, text);
    }

    let m = g.masker.mask(text);
    let mut last = 0;
    for f in &m.findings {
        assert!(f.start >= last && f.start < f.end && text.get(f.start..f.end).is_some(), "finding {f:?}");
        last = f.end;
    }
    assert!(!m.masked.contains(CANARY), "the canary survived masking");
    assert_eq!(m.blocked.is_some(), text.contains(CANARY));
    assert!(!m.masked.to_ascii_lowercase().contains(TERM), "a sensitive term survived masking");
});
