//! The limits wrapper: token budgets per agent and per session, the cost circuit, the call
//! deadline and cancellation, over the scripted model.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bridle_core::Code;
use bridle_core::budget::{CircuitConfig, CircuitState, CostRates, TokenLimits};
use bridle_core::ports::BudgetKind;
use bridle_runtime::cancel::{CancelState, CancelToken};
use bridle_runtime::clock::ManualClock;
use bridle_runtime::llm::limits::TokenLedger;
use bridle_runtime::llm::scripted::ScriptedReply;
use bridle_runtime::llm::{ChatRequest, LimitedClient, Limits, LlmClient, LlmError, Message, ScriptedModel, Usage};
use bridle_runtime::store::Stores;
use time::OffsetDateTime;
use time::macros::datetime;

const T0: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

/// Turns 1..=10 of agents `a`, `b` and `slow` (which answers after 1 s), 60 tokens each.
fn model() -> Arc<ScriptedModel> {
    let mut replies = Vec::new();
    for agent in ["a", "b", "slow"] {
        for turn in 1..=10 {
            replies.push(ScriptedReply {
                agent: Some(agent.into()),
                turn: Some(turn),
                content: Some(format!("{agent} {turn}")),
                usage: Some(Usage { prompt_tokens: 40, completion_tokens: 20 }),
                delay_ms: (agent == "slow").then_some(1000),
                ..ScriptedReply::default()
            });
        }
    }
    Arc::new(ScriptedModel::new("m", replies).unwrap())
}

fn ask(agent: &str, turn: u32) -> ChatRequest {
    ChatRequest::new(agent, turn, vec![Message::user("go")])
}

fn refusal(e: LlmError) -> bridle_core::Rejection {
    match e {
        LlmError::Refused(r) => r,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn limited(model: &Arc<ScriptedModel>, limits: Limits, clock: &Arc<ManualClock>) -> LimitedClient {
    LimitedClient::new(model.clone(), limits, clock.clone())
}

#[tokio::test]
async fn the_agent_token_budget_runs_out_and_is_named() {
    let model = model();
    let clock = Arc::new(ManualClock::new(T0));
    let tokens = TokenLimits { per_agent: BTreeMap::from([("a".to_owned(), 100)]), ..TokenLimits::default() };
    let client = limited(&model, Limits { tokens, ..Limits::default() }, &clock);
    client.chat(&ask("a", 1)).await.unwrap();
    let r = refusal(client.chat(&ask("a", 2)).await.unwrap_err());
    assert_eq!(r.code, Code::BudgetExhausted);
    assert_eq!(r.detail["budget"], "tokens:agent:a");
    // Spent: the next call is refused before it reaches the model.
    let r = refusal(client.chat(&ask("a", 3)).await.unwrap_err());
    assert_eq!(r.detail["budget"], "tokens:agent:a");
    assert_eq!(model.requests().len(), 2);
    // Another agent is not limited.
    client.chat(&ask("b", 1)).await.unwrap();
    assert_eq!(client.token_budget().spent("a"), 100);
}

#[tokio::test]
async fn the_session_token_budget_is_shared_and_named() {
    let model = model();
    let clock = Arc::new(ManualClock::new(T0));
    let tokens = TokenLimits { per_session: Some(150), ..TokenLimits::default() };
    let client = limited(&model, Limits { tokens, ..Limits::default() }, &clock);
    client.chat(&ask("a", 1)).await.unwrap();
    client.chat(&ask("b", 1)).await.unwrap();
    let r = refusal(client.chat(&ask("a", 2)).await.unwrap_err());
    assert_eq!(r.code, Code::BudgetExhausted);
    assert_eq!(r.detail["budget"], "tokens:session");
    let r = refusal(client.chat(&ask("b", 2)).await.unwrap_err());
    assert_eq!(r.detail["budget"], "tokens:session");
    assert_eq!(client.token_budget().session_spent(), 150);
    // max_tokens was lowered to what the session had left (150 - 120).
    assert_eq!(model.requests()[2].max_tokens, Some(30));
}

/// Two sessions of one run on two "replicas" sharing a store: one budget between them.
#[tokio::test]
async fn a_runs_token_budget_is_counted_in_the_store_and_shared_by_every_session_of_the_run() {
    let dir = tempfile::TempDir::new().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let model = model();
    let clock = Arc::new(ManualClock::new(T0));
    let tokens = TokenLimits {
        per_session: Some(150),
        per_agent: BTreeMap::from([("a".to_owned(), 100)]),
        ..TokenLimits::default()
    };
    let limits = Limits { tokens, ..Limits::default() };
    let session = |store: &Stores, run: &str| {
        let ledger = TokenLedger { budgets: store.budgets.clone(), tenant: "t".into(), run_id: run.into() };
        LimitedClient::for_run(model.clone(), limits.clone(), clock.clone(), ledger)
    };
    let (one, two) = (Stores::open(&url).await.unwrap(), Stores::open(&url).await.unwrap());
    session(&one, "run-1").chat(&ask("a", 1)).await.unwrap();
    // The same run, another process: the agent's 60 of 100 are spent already.
    let r = refusal(session(&two, "run-1").chat(&ask("a", 2)).await.unwrap_err());
    assert_eq!((r.code, r.detail["budget"].as_str()), (Code::BudgetExhausted, Some("tokens:agent:a")));
    // Spent to its limit: the next call is refused before it reaches the model.
    let before = model.requests().len();
    let r = refusal(session(&one, "run-1").chat(&ask("a", 3)).await.unwrap_err());
    assert_eq!(r.detail["budget"], "tokens:agent:a");
    assert_eq!(model.requests().len(), before);
    // The session budget counts every agent of the run: 100 (a, at its cap) + 60 (b) > 150.
    let r = refusal(session(&two, "run-1").chat(&ask("b", 1)).await.unwrap_err());
    assert_eq!(r.detail["budget"], "tokens:session");
    // Another run has its own budget.
    session(&two, "run-2").chat(&ask("a", 4)).await.unwrap();
    assert_eq!(one.budgets.used("t", "run-1", BudgetKind::Tokens).await.unwrap(), 150);
}

fn circuit_limits() -> Limits {
    Limits {
        // 60 tokens at 10 per 1k cost 0.6: the second call in the window passes the threshold.
        rates: CostRates::flat(10.0),
        circuit: Some(CircuitConfig {
            threshold: 1.0,
            window: Duration::from_secs(60),
            cool_down: Duration::from_secs(30),
        }),
        ..Limits::default()
    }
}

#[tokio::test]
async fn the_cost_circuit_opens_rejects_half_opens_for_one_probe_and_closes() {
    let model = model();
    let clock = Arc::new(ManualClock::new(T0));
    let client = limited(&model, circuit_limits(), &clock);
    client.chat(&ask("a", 1)).await.unwrap();
    assert_eq!(client.circuit_state(), Some(CircuitState::Closed));
    clock.set(T0 + time::Duration::seconds(5));
    client.chat(&ask("a", 2)).await.unwrap();
    assert!(matches!(client.circuit_state(), Some(CircuitState::Open { .. })));

    clock.set(T0 + time::Duration::seconds(20));
    let r = refusal(client.chat(&ask("a", 3)).await.unwrap_err());
    assert_eq!(r.code, Code::CircuitOpen);
    assert_eq!(model.requests().len(), 2, "an open circuit keeps calls from the model");

    // After the cool-down: one probe (slow, so it is still out) and every other call refused.
    clock.set(T0 + time::Duration::seconds(36));
    let probe_request = ask("slow", 1);
    let probe = client.chat(&probe_request);
    let other = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(client.circuit_state(), Some(CircuitState::HalfOpen));
        client.chat(&ask("b", 1)).await
    };
    let (probe, other) = tokio::join!(probe, other);
    probe.unwrap();
    assert_eq!(refusal(other.unwrap_err()).code, Code::CircuitOpen);
    assert_eq!(client.circuit_state(), Some(CircuitState::Closed));
    client.chat(&ask("b", 2)).await.unwrap();
}

#[tokio::test]
async fn a_failed_probe_reopens_the_circuit() {
    let model = model();
    let clock = Arc::new(ManualClock::new(T0));
    let client = limited(&model, circuit_limits(), &clock);
    client.chat(&ask("a", 1)).await.unwrap();
    client.chat(&ask("a", 2)).await.unwrap();
    clock.set(T0 + time::Duration::seconds(31));
    // No reply is scripted for turn 11: the probe fails.
    assert_eq!(client.chat(&ask("a", 11)).await.unwrap_err().code(), Code::LlmUnavailable);
    assert!(matches!(client.circuit_state(), Some(CircuitState::Open { .. })));
    assert_eq!(refusal(client.chat(&ask("a", 3)).await.unwrap_err()).code, Code::CircuitOpen);
}

#[tokio::test]
async fn the_call_deadline_is_enforced() {
    let model = model();
    let clock = Arc::new(ManualClock::new(T0));
    let limits = Limits { call_timeout: Duration::from_millis(100), ..Limits::default() };
    let client = limited(&model, limits, &clock);
    let started = Instant::now();
    let e = client.chat(&ask("slow", 1)).await.unwrap_err();
    assert_eq!(e.code(), Code::LlmTimeout);
    assert!(started.elapsed() < Duration::from_millis(900));
    // The inner client was handed the deadline.
    assert_eq!(model.requests()[0].timeout, Some(Duration::from_millis(100)));
}

#[tokio::test]
async fn cancellation_before_and_during_a_call() {
    let model = model();
    let clock = Arc::new(ManualClock::new(T0));
    let client = limited(&model, Limits::default(), &clock);

    let cancel = CancelToken::new();
    cancel.cancel();
    assert_eq!(cancel.state(), CancelState::CancelRequested);
    let e = client.chat(&ChatRequest { cancel: Some(cancel.clone()), ..ask("a", 1) }).await.unwrap_err();
    assert_eq!(e.code(), Code::Cancelled);
    assert_eq!(cancel.state(), CancelState::Cancelled);
    assert!(model.requests().is_empty());

    let cancel = CancelToken::new();
    let request = ChatRequest { cancel: Some(cancel.clone()), ..ask("slow", 1) };
    let call = client.chat(&request);
    let stop = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    };
    let started = Instant::now();
    let (result, ()) = tokio::join!(call, stop);
    assert_eq!(result.unwrap_err().code(), Code::Cancelled);
    assert!(started.elapsed() < Duration::from_millis(900));
    assert_eq!(cancel.state(), CancelState::Cancelled);
}
