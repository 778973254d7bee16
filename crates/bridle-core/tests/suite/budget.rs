//! Token budgets, the cost circuit breaker and deadlines: pure values driven by hand.

use std::collections::BTreeMap;
use std::time::Duration;

use bridle_core::Code;
use bridle_core::budget::{
    Admission, CircuitConfig, CircuitState, CostCircuit, CostRates, SESSION_BUDGET, TokenBudget, TokenLimits,
};
use bridle_core::deadline::{Deadline, Deadlines};
use proptest::prelude::*;
use time::OffsetDateTime;
use time::macros::datetime;

const T0: OffsetDateTime = datetime!(2026-01-01 00:00:00 UTC);

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn at(n: u64) -> OffsetDateTime {
    T0 + secs(n)
}

fn limits(agent: &[(&str, u64)], default: Option<u64>, session: Option<u64>) -> TokenLimits {
    TokenLimits {
        per_agent_default: default,
        per_agent: agent.iter().map(|(a, n)| ((*a).to_owned(), *n)).collect::<BTreeMap<_, _>>(),
        per_session: session,
    }
}

#[test]
fn agent_budget_refuses_past_its_limit_and_names_itself() {
    let mut b = TokenBudget::new(limits(&[("advisor", 100)], None, None));
    assert!(b.debit("advisor", 60).is_ok());
    assert_eq!(b.remaining("advisor"), Some(40));
    let r = b.debit("advisor", 60).unwrap_err();
    assert_eq!(r.code, Code::BudgetExhausted);
    assert_eq!(r.detail["budget"], "tokens:agent:advisor");
    assert_eq!(r.detail["limit"], 100);
    assert_eq!(b.spent("advisor"), 100, "the counter stops at the limit");
    assert_eq!(b.check("advisor").unwrap_err().detail["budget"], "tokens:agent:advisor");
    // Another agent has no limit of its own.
    assert!(b.check("analyst").is_ok());
    assert!(b.debit("analyst", 10_000).is_ok());
}

#[test]
fn session_budget_is_shared_by_all_agents() {
    let mut b = TokenBudget::new(limits(&[], Some(1_000), Some(100)));
    assert!(b.debit("a", 60).is_ok());
    let r = b.debit("b", 60).unwrap_err();
    assert_eq!(r.detail["budget"], SESSION_BUDGET);
    assert_eq!(b.session_spent(), 100);
    assert_eq!(b.check("c").unwrap_err().detail["budget"], "tokens:session");
}

#[test]
fn the_agent_budget_is_named_before_the_session_budget() {
    let mut b = TokenBudget::new(limits(&[("x", 10)], None, Some(10)));
    assert_eq!(b.debit("x", 11).unwrap_err().detail["budget"], "tokens:agent:x");
}

#[test]
fn a_zero_limit_refuses_before_any_call() {
    let b = TokenBudget::new(limits(&[], Some(0), None));
    assert_eq!(b.check("any").unwrap_err().code, Code::BudgetExhausted);
}

#[test]
fn unlimited_budgets_never_refuse() {
    let mut b = TokenBudget::new(TokenLimits::default());
    assert!(b.debit("a", u64::MAX).is_ok());
    assert!(b.debit("a", u64::MAX).is_ok());
    assert_eq!(b.remaining("a"), None);
}

proptest! {
    #[test]
    fn debits_never_exceed_the_limits(
        debits in proptest::collection::vec((0usize..3, 0u64..200), 0..40),
        agent_limit in 0u64..500,
        session_limit in 0u64..800,
    ) {
        let agents = ["a", "b", "c"];
        let mut b = TokenBudget::new(limits(&[("a", agent_limit)], Some(agent_limit), Some(session_limit)));
        for (i, n) in debits {
            let agent = agents[i];
            let allowed = b.remaining(agent).is_none_or(|left| n <= left);
            prop_assert_eq!(b.debit(agent, n).is_ok(), allowed);
            for a in agents {
                prop_assert!(b.spent(a) <= agent_limit);
            }
            prop_assert!(b.session_spent() <= session_limit);
        }
    }
}

fn circuit() -> CostCircuit {
    CostCircuit::new(CircuitConfig { threshold: 1.0, window: secs(60), cool_down: secs(30) })
}

#[test]
fn the_circuit_opens_rejects_half_opens_with_one_probe_and_closes() {
    let mut c = circuit();
    assert_eq!(c.admit(at(0)), Ok(Admission::Normal));
    c.record(at(0), Admission::Normal, 0.6, true);
    assert_eq!(c.state(), CircuitState::Closed);
    c.record(at(10), Admission::Normal, 0.6, true);
    assert_eq!(c.state(), CircuitState::Open { since: at(10) });

    let r = c.admit(at(20)).unwrap_err();
    assert_eq!(r.code, Code::CircuitOpen);
    assert_eq!(r.detail["retry_after_ms"], 20_000);

    assert_eq!(c.admit(at(40)), Ok(Admission::Probe));
    assert_eq!(c.state(), CircuitState::HalfOpen);
    assert_eq!(c.admit(at(41)).unwrap_err().code, Code::CircuitOpen, "only one probe");
    c.record(at(42), Admission::Probe, 0.1, true);
    assert_eq!(c.state(), CircuitState::Closed);
    assert_eq!(c.admit(at(43)), Ok(Admission::Normal));
    assert!((c.spent_in_window(at(43)) - 0.1).abs() < 1e-9, "a closed circuit starts a fresh window");
}

#[test]
fn a_failed_probe_reopens_the_circuit() {
    let mut c = circuit();
    c.record(at(0), Admission::Normal, 2.0, true);
    assert_eq!(c.admit(at(30)), Ok(Admission::Probe));
    c.record(at(31), Admission::Probe, 0.0, false);
    assert_eq!(c.state(), CircuitState::Open { since: at(31) });
    assert!(c.admit(at(60)).is_err());
    assert_eq!(c.admit(at(61)), Ok(Admission::Probe));
}

#[test]
fn cost_outside_the_window_is_forgotten() {
    let mut c = circuit();
    c.record(at(0), Admission::Normal, 0.9, true);
    c.record(at(61), Admission::Normal, 0.9, true);
    assert_eq!(c.state(), CircuitState::Closed);
    assert!((c.spent_in_window(at(61)) - 0.9).abs() < 1e-9);
}

#[test]
fn cost_rates_price_prompt_and_completion_tokens() {
    let rates = CostRates { prompt_per_1k: 0.5, completion_per_1k: 1.5 };
    assert!((rates.cost(1000, 2000) - 3.5).abs() < 1e-9);
    assert!((CostRates::flat(2.0).cost(500, 500) - 2.0).abs() < 1e-9);
}

#[test]
fn deadline_defaults_and_workflow_scaling() {
    let d = Deadlines::default();
    assert_eq!(d.llm_call, secs(30));
    assert_eq!(d.pipeline, secs(300));
    assert_eq!(d.chat_turn, secs(60));
    assert_eq!(d.workflow(0), secs(300));
    assert_eq!(d.workflow(10), secs(600), "a 10-node workflow gets 10 minutes");
    assert_eq!(d.workflow(20), secs(900));
    assert_eq!(d.workflow(usize::MAX), d.workflow_base + d.workflow_per_node * u32::MAX);
}

#[test]
fn deadlines_read_milliseconds_and_keep_defaults() {
    let d: Deadlines = serde_json::from_str(r#"{"llm_call_ms": 5000, "workflow_per_node_ms": 1000}"#).unwrap();
    assert_eq!(d.llm_call, secs(5));
    assert_eq!(d.workflow(3), secs(303));
    assert_eq!(d.pipeline, secs(300));
    let back = serde_json::to_value(d).unwrap();
    assert_eq!(back["llm_call_ms"], 5000);
    assert!(serde_json::from_str::<Deadlines>(r#"{"llm_call": 5}"#).is_err(), "unknown fields are refused");
}

#[test]
fn a_deadline_passes_with_a_named_rejection() {
    let d = Deadline::after(at(0), secs(30));
    assert!(d.check(at(29), "pipeline").is_ok());
    assert_eq!(d.remaining(at(10)), secs(20));
    let r = d.check(at(31), "pipeline").unwrap_err();
    assert_eq!(r.code, Code::DeadlineExceeded);
    assert_eq!(r.detail["deadline"], "pipeline");
    assert_eq!(r.detail["late_ms"], 1000);
    assert_eq!(d.remaining(at(31)), Duration::ZERO);
    assert_eq!(d.min(Deadline::after(at(0), secs(5))), Deadline::after(at(0), secs(5)));
    // Saturates instead of overflowing.
    assert!(!Deadline::after(at(0), Duration::MAX).is_past(at(1_000_000_000)));
}
