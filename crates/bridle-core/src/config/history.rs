//! `[history]`: how the action history weighs on a proposal.
//!
//! ```toml
//! [history]
//! failure_window_hours = 720     # a failure of the same action for the same diagnosis on the
//!                                # same equipment class this recent escalates to approval
//! auto_after_successes = 5       # optional: this many successes (and no failure in the window)
//!                                # make an `approval` tool eligible for `auto`; absent: never
//! ```

use serde::Deserialize;

use super::validate::Errors;
use crate::history::HistorySettings;

/// Longest window accepted (10 years).
const MAX_WINDOW_HOURS: u32 = 87_600;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHistory {
    failure_window_hours: Option<u32>,
    auto_after_successes: Option<u32>,
}

pub(super) fn history_settings(raw: &RawHistory, errors: &mut Errors) -> HistorySettings {
    let mut settings = HistorySettings::default();
    if let Some(h) = raw.failure_window_hours {
        if (1..=MAX_WINDOW_HOURS).contains(&h) {
            settings.failure_window = time::Duration::hours(i64::from(h));
        } else {
            errors.push("history.failure_window_hours", format!("must be between 1 and {MAX_WINDOW_HOURS}"));
        }
    }
    if let Some(n) = raw.auto_after_successes {
        if n == 0 {
            errors.push("history.auto_after_successes", "must be at least 1 (leave it out to turn it off)");
        }
        settings.auto_after_successes = Some(n);
    }
    settings
}
