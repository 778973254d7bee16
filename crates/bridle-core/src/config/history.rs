//! `[history]`: how the action history weighs on a proposal.
//!
//! ```toml
//! [history]
//! failure_window_hours = 720     # a failure of the same action for the same diagnosis on the
//!                                # same equipment class this recent escalates to approval
//! auto_after_successes = 5       # optional: this many successes (and no failure in the window)
//!                                # make an `approval` tool eligible for `auto`; absent: never
//!
//! [[history.observe]]            # optional: rate an executed change by reading it back
//! after = "set_temperature"      # a change tool with a resource
//! read = "get_recipe"            # a read tool of the same resource kind, called on that resource
//! field = "temp_celsius"         # the read result's field …
//! argument = "temp_celsius"      # … must equal this argument of the change (else: failure)
//! ```

use serde::Deserialize;

use super::validate::Errors;
use crate::contract::{Mode, Registry};
use crate::history::{HistorySettings, ObserveRule};

/// Longest window accepted (10 years).
const MAX_WINDOW_HOURS: u32 = 87_600;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHistory {
    failure_window_hours: Option<u32>,
    auto_after_successes: Option<u32>,
    #[serde(default)]
    observe: Vec<RawObserve>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObserve {
    after: String,
    read: String,
    field: String,
    argument: String,
}

/// A rule whose tools are registered with the right modes on one resource kind, else `None`
/// with every problem in `errors`.
fn observe_rule(at: &str, raw: &RawObserve, registry: &Registry, errors: &mut Errors) -> Option<ObserveRule> {
    let mut ok = true;
    let mut fail = |errors: &mut Errors, key: &str, message: String| {
        ok = false;
        errors.push(format!("{at}.{key}"), message);
    };
    let kind = |name: &str, mode: Mode| match registry.get(name) {
        None => Err(format!("no tool `{name}`")),
        Some(t) if t.mode != mode => Err(format!("`{name}` is not a {} tool", mode.as_str())),
        Some(t) => t.resource.as_ref().map(|r| r.kind.clone()).ok_or_else(|| format!("`{name}` names no resource")),
    };
    let change = kind(&raw.after, Mode::Change).map_err(|m| fail(errors, "after", m)).ok();
    let read = kind(&raw.read, Mode::Read).map_err(|m| fail(errors, "read", m)).ok();
    if let (Some(c), Some(r)) = (&change, &read)
        && c != r
    {
        fail(errors, "read", format!("reads a `{r}`, the change acts on a `{c}`"));
    }
    for (key, value) in [("field", &raw.field), ("argument", &raw.argument)] {
        if value.trim().is_empty() {
            fail(errors, key, "must not be empty".to_owned());
        }
    }
    ok.then(|| ObserveRule {
        after: raw.after.clone(),
        read: raw.read.clone(),
        field: raw.field.clone(),
        argument: raw.argument.clone(),
    })
}

pub(super) fn history_settings(raw: &RawHistory, registry: &Registry, errors: &mut Errors) -> HistorySettings {
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
    for (i, rule) in raw.observe.iter().enumerate() {
        let at = format!("history.observe[{i}]");
        if raw.observe.iter().take(i).any(|r| r.after == rule.after) {
            errors.push(format!("{at}.after"), format!("`{}` is observed twice", rule.after));
        } else if let Some(rule) = observe_rule(&at, rule, registry, errors) {
            settings.observe.push(rule);
        }
    }
    settings
}
