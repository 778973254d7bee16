//! Replay: a model that disagrees on a known 10 % of recorded decisions is caught on exactly
//! those; numbers within tolerance and different prose still agree; a run's first divergence
//! names its agent (the report's page is `bridle-apps`').

use std::collections::BTreeSet;
use std::sync::Arc;

use bridle_core::decision::DecisionRecord;
use bridle_core::replay::Tolerance;
use bridle_runtime::llm::scripted::ScriptedReply;
use bridle_runtime::llm::{Message, ScriptedModel, messages_hash};
use bridle_runtime::replay::{AbReport, Replayer};
use serde_json::{Value, json};
use time::macros::datetime;

fn registry() -> Arc<bridle_core::contract::Registry> {
    bridle_runtime::bundled::fab().unwrap().registry.clone()
}

fn messages(i: usize) -> Vec<Message> {
    vec![Message::system("You advise the corrective action."), Message::user(json!({"case": i}).to_string())]
}

fn advice(i: usize) -> Value {
    let temp = 360 + 5 * (i % 8);
    json!({
        "action_id": "set_temperature",
        "parameters": {"equipment": "etch-01", "temp_celsius": temp},
        "confidence": 0.8,
        "reasoning": format!("case {i}: trim the setpoint")
    })
}

fn record(i: usize, run: &str, agent: &str) -> DecisionRecord {
    DecisionRecord {
        decision_id: format!("d-{i:03}"),
        pipeline_run_id: run.to_owned(),
        tenant: "fab-1".into(),
        agent: agent.into(),
        model: "recorded".into(),
        input: serde_json::to_value(messages(i)).unwrap(),
        output: advice(i),
        prompt_tokens: 10,
        completion_tokens: 10,
        latency_ms: 5,
        harness_checks: json!({"schema_valid": true, "params_in_range": true}),
        final_verdict: "executed".into(),
        created_at: datetime!(2026-01-01 00:00 UTC) + time::Duration::seconds(i64::try_from(i).unwrap()),
        prompt_hash: None,
        tool_schema_hash: None,
        policy_version: None,
    }
}

/// A scripted model answering each recorded input by its hash, with `answer(i)`.
fn model(n: usize, answer: impl Fn(usize) -> Value) -> Arc<ScriptedModel> {
    let replies = (0..n)
        .map(|i| ScriptedReply {
            messages_hash: Some(messages_hash(&messages(i)).unwrap()),
            json: Some(answer(i)),
            ..ScriptedReply::default()
        })
        .collect();
    Arc::new(ScriptedModel::new("model-b", replies).unwrap())
}

/// The known 10 %: three other actions, four parameters out of tolerance, three out of range.
const CHANGED: [usize; 10] = [3, 11, 19, 27, 42, 50, 58, 71, 86, 99];

fn disagreeing(i: usize) -> Value {
    let mut a = advice(i);
    // Everywhere: other prose, and numbers written as floats (375 → 375.0) are the same numbers.
    a["reasoning"] = json!("said differently");
    if let Some(t) = a["parameters"]["temp_celsius"].as_f64() {
        a["parameters"]["temp_celsius"] = json!(t);
    }
    match CHANGED.iter().position(|c| *c == i) {
        Some(0..=2) => {
            a["action_id"] = json!("hold_equipment");
            a["parameters"] = json!({"equipment": "etch-01", "reason": "hold and inspect"});
        }
        Some(3..=6) => a["parameters"]["temp_celsius"] = json!(300),
        Some(_) => a["parameters"]["temp_celsius"] = json!(-500),
        None => {}
    }
    a
}

#[tokio::test]
async fn a_model_that_disagrees_on_a_known_tenth_is_caught_on_exactly_those() {
    let records: Vec<DecisionRecord> = (0..100).map(|i| record(i, &format!("run-{i}"), "advisor")).collect();
    let tolerance = Tolerance::default();

    let same = model(100, advice);
    let a = Replayer::new(same, registry(), tolerance).replay_all("model-a", &records, |_, _| {}).await;
    assert_eq!((a.total, a.agree), (100, 100));

    let mut ticks = 0;
    let b = Replayer::new(model(100, disagreeing), registry(), tolerance)
        .replay_all("model-b", &records, |_, _| ticks += 1)
        .await;
    assert_eq!(ticks, 100, "progress after every decision");
    let found: BTreeSet<String> = b.disagreements().map(|i| i.decision_id.clone()).collect();
    let expected: BTreeSet<String> = CHANGED.iter().map(|i| format!("d-{i:03}")).collect();
    assert_eq!(found, expected);
    assert_eq!(b.agree, 90);
    let advisor = &b.agents[0];
    assert_eq!((advisor.agent.as_str(), advisor.action, advisor.parameters, advisor.verdict), ("advisor", 97, 90, 97));
    // Out of range is a different verdict as well as different parameters.
    let d = b.items.iter().find(|i| i.decision_id == "d-099").unwrap().comparison.clone().unwrap();
    assert!(!d.verdict && !d.parameters && d.action, "{d:?}");

    let ab = AbReport::new(a, b, &tolerance);
    assert_eq!(ab.a_b_agree, 90);
}

#[tokio::test]
async fn a_run_replay_stops_at_the_first_divergence_and_names_its_agent() {
    // `scout` has no known schema: its answers are compared, not validated.
    let agents = ["scout", "advisor", "advisor"];
    let records: Vec<DecisionRecord> = agents.iter().enumerate().map(|(i, agent)| record(i, "run-7", agent)).collect();
    // Only the second decision (the first advisor call) comes back different.
    let m = model(3, |i| if i == 1 { advice(5) } else { advice(i) });
    let mut replayer = Replayer::new(m.clone(), registry(), Tolerance::default());
    let divergence = replayer.replay_run("run-7", &records).await;
    let first = divergence.first.unwrap();
    assert_eq!((first.agent.as_str(), first.decision_id.as_str()), ("advisor", "d-001"));
    assert_eq!((divergence.replayed, divergence.recorded), (2, 3));
    assert_eq!(m.requests().len(), 2, "nothing after the divergence was asked");
    // A record whose input was never sent to a model (a rule's fallback) is reported, not guessed.
    let mut fallback = record(9, "run-8", "advisor");
    fallback.input = json!({"anomaly": {"metric": "gas_flow_sccm"}});
    let item = replayer.replay(&fallback).await;
    assert!(item.error.unwrap().contains("never asked"));
}
