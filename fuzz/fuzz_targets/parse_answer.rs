//! Fuzz target: any UTF-8 text through the answer parser, with the default limits and with the
//! length limit raised; every result must be a verdict whose spans point into the input.
#![no_main]

use bridle_core::answer::{IntakeLimits, parse_answer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for limits in [IntakeLimits::default(), IntakeLimits { max_calls: 100, max_chars: 1_000_000 }] {
        if let Ok(parsed) = parse_answer(text, &limits) {
            assert!(!parsed.calls.is_empty() && parsed.calls.len() <= limits.max_calls);
            for call in &parsed.calls {
                assert!(call.span.start < call.span.end && text.get(call.span.start..call.span.end).is_some());
            }
        }
    }
});
