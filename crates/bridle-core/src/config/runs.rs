//! `[limits]`, `[taint]` and `[identity]`: how far a run may go, how long taint follows an agent,
//! and whether a change needs a credential that names its agent.
//!
//! ```toml
//! [limits]                        # absent: nothing of this is limited
//! run_calls = 200                 # calls per run (refused ones count too)
//! run_deadline_ms = 3_600_000     # from the run's first call
//! run_concurrency = 4             # calls of one run in flight at once
//! [limits.tenants.tenant-a]       # per tenant, key by key over the defaults
//! run_concurrency = 8
//! [limits.agents.incident-responder]   # per agent, key by key over its tenant's
//! run_calls = 20
//!
//! [taint]
//! window = "1h"                   # taint follows the agent (or subject) this long; "0": the run only
//!
//! [identity]
//! require_agent = false           # true: `change` calls need a credential naming an agent
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::validate::Errors;
use crate::agents::AgentRegistry;
use crate::runs::{LimitSettings, RunLimits};

/// Longest run deadline accepted (30 days).
const MAX_DEADLINE_MS: u64 = 30 * 86_400_000;
/// Most concurrent calls of one run accepted.
const MAX_CONCURRENCY: u32 = 10_000;
/// Longest taint window accepted (30 days).
const MAX_TAINT_WINDOW: Duration = Duration::from_secs(30 * 86_400);
/// The taint window when `[taint]` says nothing.
pub const DEFAULT_TAINT_WINDOW: Duration = Duration::from_secs(3600);

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRunLimits {
    run_calls: Option<u64>,
    run_deadline_ms: Option<u64>,
    run_concurrency: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    run_calls: Option<u64>,
    run_deadline_ms: Option<u64>,
    run_concurrency: Option<u32>,
    #[serde(default)]
    tenants: BTreeMap<String, RawRunLimits>,
    #[serde(default)]
    agents: BTreeMap<String, RawRunLimits>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTaint {
    window: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIdentity {
    #[serde(default)]
    require_agent: bool,
}

/// Validated `[taint]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaintSettings {
    /// How long after an untrusted result a change by the same agent (or, with no agent, the
    /// same subject) in any run needs approval; zero: only in the run that took it in.
    pub window: Duration,
}

impl Default for TaintSettings {
    fn default() -> Self {
        Self { window: DEFAULT_TAINT_WINDOW }
    }
}

/// Validated `[identity]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdentitySettings {
    /// `change` calls of credentials that name no agent (no claim, no binding) are refused with
    /// `agent_required`.
    pub require_agent: bool,
}

pub(super) fn limit_settings(raw: &RawLimits, agents: &AgentRegistry, errors: &mut Errors) -> LimitSettings {
    let own = RawRunLimits {
        run_calls: raw.run_calls,
        run_deadline_ms: raw.run_deadline_ms,
        run_concurrency: raw.run_concurrency,
    };
    let defaults = run_limits("limits", &own, errors);
    let mut tenants = BTreeMap::new();
    for (tenant, limits) in &raw.tenants {
        let at = format!("limits.tenants.{tenant}");
        if let Err(e) = crate::bounds::check_id("tenant", tenant) {
            errors.push(at.clone(), e.to_string());
        }
        tenants.insert(tenant.clone(), run_limits(&at, limits, errors));
    }
    let mut by_agent = BTreeMap::new();
    for (agent, limits) in &raw.agents {
        let at = format!("limits.agents.{agent}");
        if agents.get(agent).is_none() {
            errors.push(at.clone(), format!("agent `{agent}` is not registered in [[agents]]"));
        }
        by_agent.insert(agent.clone(), run_limits(&at, limits, errors));
    }
    LimitSettings { defaults, tenants, agents: by_agent }
}

fn run_limits(at: &str, raw: &RawRunLimits, errors: &mut Errors) -> RunLimits {
    if raw.run_calls == Some(0) {
        errors.push(format!("{at}.run_calls"), "must be at least 1");
    }
    if let Some(ms) = raw.run_deadline_ms
        && !(1..=MAX_DEADLINE_MS).contains(&ms)
    {
        errors.push(format!("{at}.run_deadline_ms"), format!("must be between 1 and {MAX_DEADLINE_MS} (30 days)"));
    }
    if let Some(n) = raw.run_concurrency
        && !(1..=MAX_CONCURRENCY).contains(&n)
    {
        errors.push(format!("{at}.run_concurrency"), format!("must be between 1 and {MAX_CONCURRENCY}"));
    }
    RunLimits {
        calls: raw.run_calls,
        deadline: raw.run_deadline_ms.map(Duration::from_millis),
        concurrency: raw.run_concurrency,
    }
}

pub(super) fn taint_settings(raw: &RawTaint, errors: &mut Errors) -> TaintSettings {
    let window = match &raw.window {
        None => DEFAULT_TAINT_WINDOW,
        Some(value) => match parse_window(value) {
            Some(w) if w <= MAX_TAINT_WINDOW => w,
            _ => {
                errors.push(
                    "taint.window",
                    "must be a duration such as \"90s\", \"15m\", \"1h\" or \"0\" (seconds as a number), at most 30 days",
                );
                DEFAULT_TAINT_WINDOW
            }
        },
    };
    TaintSettings { window }
}

pub(super) fn identity_settings(raw: &RawIdentity) -> IdentitySettings {
    IdentitySettings { require_agent: raw.require_agent }
}

/// `0`, `90` (seconds), `"90s"`, `"15m"`, `"1h"`, `"1d"`.
fn parse_window(value: &toml::Value) -> Option<Duration> {
    match value {
        toml::Value::Integer(n) => u64::try_from(*n).ok().map(Duration::from_secs),
        toml::Value::String(text) => {
            let text = text.trim();
            let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
            let (number, unit) = text.split_at(split);
            let n: u64 = number.parse().ok()?;
            let factor = match unit {
                "" | "s" => 1,
                "m" => 60,
                "h" => 3600,
                "d" => 86_400,
                _ => return None,
            };
            Some(Duration::from_secs(n.checked_mul(factor)?))
        }
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn windows_read_with_units_and_bad_ones_are_errors() {
        let w = |v: toml::Value| parse_window(&v);
        assert_eq!(w(toml::Value::String("1h".into())), Some(Duration::from_secs(3600)));
        assert_eq!(w(toml::Value::String("0".into())), Some(Duration::ZERO));
        assert_eq!(w(toml::Value::Integer(90)), Some(Duration::from_secs(90)));
        assert_eq!(w(toml::Value::Integer(-1)), None);
        assert_eq!(w(toml::Value::String("1y".into())), None);
        let mut errors = Errors::default();
        let raw = RawTaint { window: Some(toml::Value::String("31d".into())) };
        let _ = taint_settings(&raw, &mut errors);
        assert_eq!(errors.0.len(), 1);
    }
}
