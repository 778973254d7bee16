//! The limits around any [`LlmClient`]: cancellation ([`CancelToken`]), token budgets, the cost circuit and the
//! per-call deadline, checked in that order before the call, and debited after it.
//!
//! The bookkeeping is bridle-core's ([`TokenBudget`], [`CostCircuit`]); this wrapper only holds
//! it behind a lock, reads the clock and times the call. The deadline is the smaller of the
//! request's `timeout` and the configured call deadline (30 s by default). A call that returns
//! more tokens than the budget had left is refused (`budget_exhausted`) and the budget is then
//! spent; `max_tokens` is lowered to what the budget has left so an answer rarely overshoots.
//! A cost-circuit probe that is dropped before it reports counts as a failed probe.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bridle_core::budget::{Admission, CircuitConfig, CircuitState, CostCircuit, CostRates, TokenBudget, TokenLimits};
use bridle_core::deadline::Deadlines;
use bridle_core::ports::Clock;
use bridle_core::{Code, Rejection};

use super::{CancelToken, ChatRequest, ChatResponse, LlmClient, LlmError, millis};

/// What [`LimitedClient`] enforces.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Deadline of one call, retries included (default: [`Deadlines::default`]'s 30 s).
    pub call_timeout: Duration,
    /// Token limits per agent and per session (default: unlimited).
    pub tokens: TokenLimits,
    /// The cost circuit; `None` turns it off (the default).
    pub circuit: Option<CircuitConfig>,
    /// Token prices used for the circuit's cost (default: free).
    pub rates: CostRates,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            call_timeout: Deadlines::default().llm_call,
            tokens: TokenLimits::default(),
            circuit: None,
            rates: CostRates::default(),
        }
    }
}

#[derive(Debug)]
struct State {
    budget: TokenBudget,
    circuit: Option<CostCircuit>,
}

/// An [`LlmClient`] that enforces [`Limits`] around another one. One instance is one session:
/// its token budget is the session's.
pub struct LimitedClient {
    inner: Arc<dyn LlmClient>,
    clock: Arc<dyn Clock>,
    call_timeout: Duration,
    rates: CostRates,
    state: Mutex<State>,
}

impl std::fmt::Debug for LimitedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LimitedClient").field("call_timeout", &self.call_timeout).finish_non_exhaustive()
    }
}

impl LimitedClient {
    /// Wraps `inner`; `clock` times the cost circuit's window and cool-down.
    pub fn new(inner: Arc<dyn LlmClient>, limits: Limits, clock: Arc<dyn Clock>) -> Self {
        let state = State { budget: TokenBudget::new(limits.tokens), circuit: limits.circuit.map(CostCircuit::new) };
        Self { inner, clock, call_timeout: limits.call_timeout, rates: limits.rates, state: Mutex::new(state) }
    }

    /// A snapshot of the token budget.
    pub fn token_budget(&self) -> TokenBudget {
        self.lock().budget.clone()
    }

    /// The circuit's state, when there is a circuit.
    pub fn circuit_state(&self) -> Option<CircuitState> {
        self.lock().circuit.as_ref().map(CostCircuit::state)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The lock is never held across a panic point, so a poisoned state is still consistent.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Budget check, then circuit admission (so a refused budget never uses up the probe).
    fn admit(&self, agent: &str) -> Result<(Option<Admission>, Option<u64>), LlmError> {
        let now = self.clock.now();
        let mut state = self.lock();
        state.budget.check(agent)?;
        let admission = match state.circuit.as_mut() {
            Some(circuit) => Some(circuit.admit(now)?),
            None => None,
        };
        Ok((admission, state.budget.remaining(agent)))
    }
}

/// An admitted call that has not reported yet; dropped unreported, it reports a failure.
struct Pending<'a> {
    client: &'a LimitedClient,
    admission: Option<Admission>,
}

impl Pending<'_> {
    /// Records the outcome; on success also debits the tokens.
    fn finish(mut self, agent: &str, response: Option<&ChatResponse>) -> Result<(), LlmError> {
        let now = self.client.clock.now();
        let mut state = self.client.lock();
        let cost = response.map_or(0.0, |r| self.client.rates.cost(r.usage.prompt_tokens, r.usage.completion_tokens));
        if let (Some(circuit), Some(admission)) = (state.circuit.as_mut(), self.admission.take()) {
            circuit.record(now, admission, cost, response.is_some());
        }
        match response {
            Some(r) => state.budget.debit(agent, r.usage.total()).map_err(LlmError::Refused),
            None => Ok(()),
        }
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if let Some(admission) = self.admission.take() {
            let now = self.client.clock.now();
            if let Some(circuit) = self.client.lock().circuit.as_mut() {
                circuit.record(now, admission, 0.0, false);
            }
        }
    }
}

#[async_trait]
impl LlmClient for LimitedClient {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let agent = request.agent.as_str();
        let what = format!("model call of agent `{agent}`");
        if let Some(cancel) = &request.cancel
            && cancel.is_requested()
        {
            return Err(cancelled(cancel, &what));
        }
        let (admission, remaining) = self.admit(agent)?;
        let pending = Pending { client: self, admission };
        let timeout = request.timeout.map_or(self.call_timeout, |t| t.min(self.call_timeout));
        let mut limited = request.clone();
        limited.timeout = Some(timeout);
        if let Some(left) = remaining {
            let left = u32::try_from(left).unwrap_or(u32::MAX).max(1);
            limited.max_tokens = Some(limited.max_tokens.map_or(left, |m| m.min(left)));
        }
        let call = tokio::time::timeout(timeout, self.inner.chat(&limited));
        let outcome = match &request.cancel {
            Some(cancel) => tokio::select! {
                outcome = call => outcome,
                () = cancel.requested() => {
                    pending.finish(agent, None)?;
                    return Err(cancelled(cancel, &what));
                }
            },
            None => call.await,
        };
        match outcome {
            Err(_elapsed) => {
                pending.finish(agent, None)?;
                Err(LlmError::Timeout { agent: agent.to_owned(), elapsed_ms: millis(timeout), attempts: 1 })
            }
            Ok(Err(e)) => {
                pending.finish(agent, None)?;
                Err(e)
            }
            Ok(Ok(response)) => {
                pending.finish(agent, Some(&response))?;
                Ok(response)
            }
        }
    }
}

/// The work stopped because of the request: the token becomes `cancelled` and so is the call.
fn cancelled(cancel: &CancelToken, what: &str) -> LlmError {
    cancel.mark_cancelled();
    LlmError::Refused(Rejection::new(Code::Cancelled, format!("{what} was cancelled")))
}
