//! Token budgets (per agent, per session) and the cost circuit breaker: pure bookkeeping.
//!
//! Nothing here reads a clock or does I/O: every time-dependent call takes `now`, so the
//! runtime drives these values with its [`crate::ports::Clock`] and tests drive them by hand.
//! A spent budget or an open circuit is a [`Rejection`] (`budget_exhausted` with a `budget`
//! field naming which, or `circuit_open`), never a panic.
//! INVARIANT: a token counter never exceeds its limit (a debit past it saturates at the limit).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;

use crate::code::Code;
use crate::verdict::Rejection;

/// Token limits; `None` means unlimited.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenLimits {
    /// Limit for an agent without an entry in `per_agent`.
    #[serde(default)]
    pub per_agent_default: Option<u64>,
    /// Limits by agent name.
    #[serde(default)]
    pub per_agent: BTreeMap<String, u64>,
    /// Limit for the whole session, all agents together.
    #[serde(default)]
    pub per_session: Option<u64>,
}

impl TokenLimits {
    /// The limit that applies to `agent`.
    pub fn for_agent(&self, agent: &str) -> Option<u64> {
        self.per_agent.get(agent).copied().or(self.per_agent_default)
    }
}

/// The name of an agent's token budget, as reported in the `budget` field.
pub fn agent_budget_name(agent: &str) -> String {
    format!("tokens:agent:{agent}")
}

/// The name of the session's token budget.
pub const SESSION_BUDGET: &str = "tokens:session";

/// Tokens spent by each agent and by the whole session, against [`TokenLimits`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenBudget {
    limits: TokenLimits,
    by_agent: BTreeMap<String, u64>,
    session: u64,
}

impl TokenBudget {
    /// A fresh budget (nothing spent).
    pub fn new(limits: TokenLimits) -> Self {
        Self { limits, by_agent: BTreeMap::new(), session: 0 }
    }

    /// A budget of which `agent` has spent `agent_spent` and the session `session_spent` (as a
    /// store counted them), to check and size a call with.
    pub fn with_spent(limits: TokenLimits, agent: &str, agent_spent: u64, session_spent: u64) -> Self {
        let by_agent = BTreeMap::from([(agent.to_owned(), agent_spent)]);
        Self { limits, by_agent, session: session_spent }
    }

    /// The limits in force.
    pub fn limits(&self) -> &TokenLimits {
        &self.limits
    }

    /// Tokens spent by `agent`.
    pub fn spent(&self, agent: &str) -> u64 {
        self.by_agent.get(agent).copied().unwrap_or(0)
    }

    /// Tokens spent by the session.
    pub fn session_spent(&self) -> u64 {
        self.session
    }

    /// Tokens `agent` may still spend: the smaller of its own and the session's remainder
    /// (`None` when neither is limited).
    pub fn remaining(&self, agent: &str) -> Option<u64> {
        let own = self.limits.for_agent(agent).map(|l| l.saturating_sub(self.spent(agent)));
        let session = self.limits.per_session.map(|l| l.saturating_sub(self.session));
        match (own, session) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Refuses when `agent`'s budget or the session's has nothing left (checked before a call).
    pub fn check(&self, agent: &str) -> Result<(), Rejection> {
        self.refusal(agent, 0, |spent, _, limit| spent >= limit).map_or(Ok(()), Err)
    }

    /// Debits `tokens` to `agent` and the session. When that passes a limit, the counters stop
    /// at their limits (the budget is then spent) and the first budget passed is named, the
    /// agent's before the session's.
    pub fn debit(&mut self, agent: &str, tokens: u64) -> Result<(), Rejection> {
        let refusal = self.refusal(agent, tokens, |spent, tokens, limit| spent.saturating_add(tokens) > limit);
        let agent_limit = self.limits.for_agent(agent);
        let entry = self.by_agent.entry(agent.to_owned()).or_insert(0);
        *entry = cap(entry.saturating_add(tokens), agent_limit);
        self.session = cap(self.session.saturating_add(tokens), self.limits.per_session);
        refusal.map_or(Ok(()), Err)
    }

    /// The first budget (agent, then session) for which `fails(spent, tokens, limit)` holds.
    fn refusal(&self, agent: &str, tokens: u64, fails: impl Fn(u64, u64, u64) -> bool) -> Option<Rejection> {
        let candidates = [
            (agent_budget_name(agent), self.limits.for_agent(agent), self.spent(agent)),
            (SESSION_BUDGET.to_owned(), self.limits.per_session, self.session),
        ];
        candidates.into_iter().find_map(|(name, limit, spent)| {
            let limit = limit?;
            fails(spent, tokens, limit).then(|| exhausted(&name, limit, spent, tokens))
        })
    }
}

fn cap(value: u64, limit: Option<u64>) -> u64 {
    limit.map_or(value, |l| value.min(l))
}

/// The `budget_exhausted` rejection of token budget `budget` (named as [`agent_budget_name`] or
/// [`SESSION_BUDGET`]).
pub fn exhausted(budget: &str, limit: u64, spent: u64, requested: u64) -> Rejection {
    Rejection::new(
        Code::BudgetExhausted,
        format!("token budget `{budget}` is spent ({spent} of {limit} tokens used, {requested} more asked)"),
    )
    .with_detail(json!({"budget": budget, "limit": limit, "spent": spent, "requested": requested}))
}

/// Prices of tokens, in any cost unit (the circuit's threshold uses the same unit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostRates {
    /// Cost of 1,000 prompt tokens.
    pub prompt_per_1k: f64,
    /// Cost of 1,000 completion tokens.
    pub completion_per_1k: f64,
}

impl CostRates {
    /// The same price for prompt and completion tokens.
    pub fn flat(per_1k: f64) -> Self {
        Self { prompt_per_1k: per_1k, completion_per_1k: per_1k }
    }

    /// The cost of one call's tokens.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.prompt_per_1k + completion_tokens as f64 * self.completion_per_1k) / 1000.0
    }
}

/// When the cost circuit opens and how long it stays open.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CircuitConfig {
    /// The circuit opens when the cost spent within `window` passes this.
    pub threshold: f64,
    /// The sliding window over which cost is summed.
    #[serde(with = "crate::deadline::millis", rename = "window_ms")]
    pub window: Duration,
    /// How long the circuit stays open before it lets one probe through.
    #[serde(with = "crate::deadline::millis", rename = "cool_down_ms")]
    pub cool_down: Duration,
}

/// Where the circuit stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CircuitState {
    /// Calls pass.
    Closed,
    /// Calls are refused until the cool-down after `since` ends.
    Open {
        /// When it opened.
        since: OffsetDateTime,
    },
    /// The cool-down is over and one probe is out; its outcome closes or reopens the circuit.
    HalfOpen,
}

/// What [`CostCircuit::admit`] let through; hand it back to [`CostCircuit::record`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// An ordinary call while the circuit is closed.
    Normal,
    /// The single probe of a half-open circuit.
    Probe,
}

/// A circuit breaker over the cost spent in a sliding window.
#[derive(Debug, Clone)]
pub struct CostCircuit {
    config: CircuitConfig,
    state: CircuitState,
    spends: VecDeque<(OffsetDateTime, f64)>,
}

impl CostCircuit {
    /// A closed circuit.
    pub fn new(config: CircuitConfig) -> Self {
        Self { config, state: CircuitState::Closed, spends: VecDeque::new() }
    }

    /// The state at the last admission or record.
    pub fn state(&self) -> CircuitState {
        self.state
    }

    /// Cost spent within the window ending at `now`.
    pub fn spent_in_window(&self, now: OffsetDateTime) -> f64 {
        let start = crate::deadline::earlier(now, self.config.window);
        self.spends.iter().filter(|(at, _)| *at > start).map(|(_, c)| c).sum()
    }

    /// Lets a call through or refuses it with `circuit_open`. After the cool-down exactly one
    /// call is admitted as the [`Admission::Probe`]; the others are refused until it reports.
    pub fn admit(&mut self, now: OffsetDateTime) -> Result<Admission, Rejection> {
        match self.state {
            CircuitState::Closed => Ok(Admission::Normal),
            CircuitState::Open { since } => {
                let reopens = crate::deadline::later(since, self.config.cool_down);
                if now >= reopens {
                    self.state = CircuitState::HalfOpen;
                    Ok(Admission::Probe)
                } else {
                    let wait = reopens - now;
                    Err(self.refusal(now, "is open", wait.whole_milliseconds()))
                }
            }
            CircuitState::HalfOpen => Err(self.refusal(now, "is half-open and its probe is out", 0)),
        }
    }

    /// Records the outcome of an admitted call: its cost, and whether it succeeded. A probe's
    /// success closes the circuit (and starts a fresh window); its failure reopens it. An ordinary
    /// call's cost opens the circuit once the window's total passes the threshold.
    pub fn record(&mut self, now: OffsetDateTime, admission: Admission, cost: f64, success: bool) {
        if admission == Admission::Probe {
            if success {
                self.state = CircuitState::Closed;
                self.spends.clear();
            } else {
                self.state = CircuitState::Open { since: now };
                return;
            }
        }
        if cost > 0.0 {
            self.spends.push_back((now, cost));
        }
        let start = crate::deadline::earlier(now, self.config.window);
        while self.spends.front().is_some_and(|(at, _)| *at <= start) {
            self.spends.pop_front();
        }
        if self.state == CircuitState::Closed && self.spent_in_window(now) > self.config.threshold {
            self.state = CircuitState::Open { since: now };
        }
    }

    fn refusal(&self, now: OffsetDateTime, what: &str, retry_after_ms: i128) -> Rejection {
        Rejection::new(Code::CircuitOpen, format!("the cost circuit {what}")).with_detail(json!({
            "spent_in_window": self.spent_in_window(now),
            "threshold": self.config.threshold,
            "retry_after_ms": retry_after_ms.max(0),
        }))
    }
}

/// Which budget a debit draws on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    /// Tool calls.
    Calls,
    /// Model tokens.
    Tokens,
    /// Cost in micro-units of the configured currency.
    Cost,
}

impl BudgetKind {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Calls => "calls",
            Self::Tokens => "tokens",
            Self::Cost => "cost",
        }
    }
}
