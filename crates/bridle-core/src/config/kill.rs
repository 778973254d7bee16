//! `[kill_switch]`: how fresh the gate's view of the kill switch must be.
//!
//! ```toml
//! [kill_switch]
//! cache_ms = 0   # 0 (default): every gate call reads the store; at most 1000
//! ```
//!
//! With `cache_ms = N` a gate reuses one read of the switches for at most N milliseconds, so a
//! switch set on another replica takes effect there within N ms instead of on the next call.

use serde::Deserialize;

use super::validate::Errors;

/// Largest `cache_ms` accepted: a kill must never take longer than a second to hold.
pub const MAX_CACHE_MS: u64 = 1_000;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawKillSwitch {
    #[serde(default)]
    cache_ms: u64,
}

/// Validated `[kill_switch]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KillSwitchSettings {
    /// How long one read of the switches may be reused; zero: read on every call.
    pub cache: std::time::Duration,
}

pub(super) fn kill_switch_settings(raw: &RawKillSwitch, errors: &mut Errors) -> KillSwitchSettings {
    if raw.cache_ms > MAX_CACHE_MS {
        errors.push("kill_switch.cache_ms", format!("must be at most {MAX_CACHE_MS}"));
    }
    KillSwitchSettings { cache: std::time::Duration::from_millis(raw.cache_ms.min(MAX_CACHE_MS)) }
}
