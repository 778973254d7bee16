//! The limits around any [`LlmClient`]: cancellation ([`CancelToken`]), token budgets, the cost circuit and the
//! per-call deadline, checked in that order before the call, and debited after it.
//!
//! The bookkeeping is bridle-core's ([`TokenBudget`], [`CostCircuit`]); this wrapper only holds
//! it behind a lock, reads the clock and times the call. The deadline is the smaller of the
//! request's `timeout` and the configured call deadline (30 s by default). A call that returns
//! more tokens than the budget had left is refused (`budget_exhausted`) and the budget is then
//! spent; `max_tokens` is lowered to what the budget has left so an answer rarely overshoots.
//! A cost-circuit probe that is dropped before it reports counts as a failed probe.
//!
//! A session of a run ([`LimitedClient::for_run`]) counts its tokens in the store's budget
//! counters of that run ([`TokenLedger`]: the run, and each agent in it), so every replica and
//! every resume of the run draws on the same budget; each debit is one conditional update. A
//! session without a ledger keeps its budget in memory.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bridle_core::budget::{
    Admission, CircuitConfig, CircuitState, CostCircuit, CostRates, SESSION_BUDGET, TokenBudget, TokenLimits,
    agent_budget_name, exhausted,
};
use bridle_core::deadline::Deadlines;
use bridle_core::ports::Clock;
use bridle_core::ports::{BudgetKind, BudgetStore, Debit, StoreError};
use bridle_core::{Code, Rejection};
use tracing::Instrument;

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

/// Where a run's token spending is counted: the store's `tokens` budget counters of the run
/// (key: the run id) and of each agent in it (key: `RUN#agent:NAME`, which no run id can be).
#[derive(Clone)]
pub struct TokenLedger {
    /// The store's budget counters.
    pub budgets: Arc<dyn BudgetStore>,
    /// Tenant.
    pub tenant: String,
    /// The run.
    pub run_id: String,
}

impl TokenLedger {
    fn agent_key(&self, agent: &str) -> String {
        format!("{}#agent:{agent}", self.run_id)
    }

    /// The budget as the store has counted it, for the check before a call.
    async fn snapshot(&self, limits: &TokenLimits, agent: &str) -> Result<TokenBudget, LlmError> {
        let budgets = &self.budgets;
        let agent_spent = budgets.used(&self.tenant, &self.agent_key(agent), BudgetKind::Tokens).await;
        let session_spent = budgets.used(&self.tenant, &self.run_id, BudgetKind::Tokens).await;
        Ok(TokenBudget::with_spent(limits.clone(), agent, agent_spent.map_err(store)?, session_spent.map_err(store)?))
    }

    /// Debits `tokens` to the agent's and the run's counters, each one conditional update; a
    /// debit past a limit spends that budget to its limit and names it (the agent's first).
    async fn debit(&self, limits: &TokenLimits, agent: &str, tokens: u64) -> Result<(), LlmError> {
        let mut refusal = None;
        for (key, name, limit) in [
            (self.agent_key(agent), agent_budget_name(agent), limits.for_agent(agent)),
            (self.run_id.clone(), SESSION_BUDGET.to_owned(), limits.per_session),
        ] {
            let limit = limit.unwrap_or(u64::MAX);
            let debit = self.budgets.debit(&self.tenant, &key, BudgetKind::Tokens, tokens, limit).await;
            if let Debit::Exhausted { used } = debit.map_err(store)? {
                // Spent to the limit (saturating), as the in-memory budget does.
                let rest = limit.saturating_sub(used);
                self.budgets.debit(&self.tenant, &key, BudgetKind::Tokens, rest, limit).await.map_err(store)?;
                refusal.get_or_insert_with(|| exhausted(&name, limit, used, tokens));
            }
        }
        refusal.map_or(Ok(()), |r| Err(LlmError::Refused(r)))
    }
}

/// A budget store that cannot answer: the call is refused, never made unbudgeted.
fn store(e: StoreError) -> LlmError {
    LlmError::Refused(Rejection::new(Code::StateUnavailable, format!("token budget unavailable: {e}")))
}

/// An [`LlmClient`] that enforces [`Limits`] around another one. One instance is one session:
/// its token budget is the session's (in memory), or its run's (in the store).
pub struct LimitedClient {
    inner: Arc<dyn LlmClient>,
    clock: Arc<dyn Clock>,
    call_timeout: Duration,
    rates: CostRates,
    tokens: TokenLimits,
    ledger: Option<TokenLedger>,
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
        let tokens = limits.tokens.clone();
        let state = State { budget: TokenBudget::new(limits.tokens), circuit: limits.circuit.map(CostCircuit::new) };
        Self {
            inner,
            clock,
            call_timeout: limits.call_timeout,
            rates: limits.rates,
            tokens,
            ledger: None,
            state: Mutex::new(state),
        }
    }

    /// A session of a run whose tokens are counted in the store (see [`TokenLedger`]). With no
    /// token limit configured nothing is counted, in memory or in the store.
    pub fn for_run(inner: Arc<dyn LlmClient>, limits: Limits, clock: Arc<dyn Clock>, ledger: TokenLedger) -> Self {
        let counted = limits.tokens != TokenLimits::default();
        Self { ledger: counted.then_some(ledger), ..Self::new(inner, limits, clock) }
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

    /// Budget check (the store's counts for a run's session), then circuit admission (so a
    /// refused budget never uses up the probe).
    async fn admit(&self, agent: &str) -> Result<(Option<Admission>, Option<u64>), LlmError> {
        let counted = match &self.ledger {
            Some(ledger) => Some(ledger.snapshot(&self.tokens, agent).await?),
            None => None,
        };
        let now = self.clock.now();
        let mut state = self.lock();
        let budget = counted.as_ref().unwrap_or(&state.budget);
        budget.check(agent)?;
        let remaining = budget.remaining(agent);
        let admission = match state.circuit.as_mut() {
            Some(circuit) => Some(circuit.admit(now)?),
            None => None,
        };
        Ok((admission, remaining))
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
            Some(r) if self.client.ledger.is_none() => {
                state.budget.debit(agent, r.usage.total()).map_err(LlmError::Refused)
            }
            _ => Ok(()),
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
    fn system(&self) -> &str {
        self.inner.system()
    }

    fn model(&self) -> Option<&str> {
        self.inner.model()
    }

    /// One model call in a CLIENT span with OpenTelemetry's `gen_ai.*` attributes: operation,
    /// system, request and response model, token usage, finish reason, and on a failure
    /// `error.type` (the stable code) with an ERROR status.
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let model = self.inner.model().unwrap_or("unknown");
        let span = tracing::info_span!(
            "gen_ai_chat",
            otel.name = %format!("chat {model}"),
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            gen_ai.operation.name = "chat",
            gen_ai.system = %self.inner.system(),
            gen_ai.request.model = %model,
            gen_ai.agent.name = %request.agent,
            gen_ai.response.model = tracing::field::Empty,
            gen_ai.response.finish_reasons = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
            error.r#type = tracing::field::Empty,
        );
        let result = self.limited_chat(request).instrument(span.clone()).await;
        match &result {
            Ok(r) => {
                span.record("gen_ai.response.model", r.model.as_str());
                if let Some(reason) = &r.finish_reason {
                    span.record("gen_ai.response.finish_reasons", reason.as_str());
                }
                span.record("gen_ai.usage.input_tokens", i64::try_from(r.usage.prompt_tokens).unwrap_or(i64::MAX));
                span.record("gen_ai.usage.output_tokens", i64::try_from(r.usage.completion_tokens).unwrap_or(i64::MAX));
            }
            Err(e) => {
                span.record("otel.status_code", "ERROR");
                span.record("error.type", e.code().as_str());
            }
        }
        result
    }
}

impl LimitedClient {
    /// [`LlmClient::chat`] under the limits: cancellation, admission, budgets, the deadline.
    async fn limited_chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let agent = request.agent.as_str();
        let what = format!("model call of agent `{agent}`");
        if let Some(cancel) = &request.cancel
            && cancel.is_requested()
        {
            return Err(cancelled(cancel, &what));
        }
        let (admission, remaining) = self.admit(agent).await?;
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
                if let Some(ledger) = &self.ledger {
                    ledger.debit(&self.tokens, agent, response.usage.total()).await?;
                }
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
