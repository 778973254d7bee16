//! Seed 003's agent-loop lab through the gate: transcripts that reach the three loop goals'
//! references with the real workbench tools, the stop rules on real verdicts, a call outside
//! the workbench principal's scope, and the audit (metadata only, never the pasted text).

use std::sync::Arc;

use bridle_apps::lab::Outcome;
use bridle_apps::lab::loop_lab::{Goal, LoopInput, LoopReport, Stop};
use bridle_apps::lab::{LabError, replay_loop};
use bridle_core::answer::IntakeLimits;
use bridle_core::audit::EventKind;
use bridle_core::{Code, RunContext};
use bridle_runtime::check::{gate, workbench_principal};
use bridle_runtime::gate::Gate;
use bridle_runtime::store::Stores;
use serde_json::{Value, json};

fn bench() -> Gate {
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    gate(config, Stores::memory(), std::sync::Arc::new(bridle_tools::Workbench)).unwrap()
}

async fn run(gate: &Gate, goal: Goal, answers: &[String]) -> Result<LoopReport, LabError> {
    let input = LoopInput {
        goal,
        value: None,
        answers: answers.to_vec(),
        max_rounds: None,
        stop_after_failures: None,
        tolerance: None,
    };
    let principal = workbench_principal(gate.config()).unwrap();
    replay_loop(gate, &principal, &RunContext::new("run-lab", "workbench"), input, &IntakeLimits::default()).await
}

fn call(tool: &str, args: Value) -> String {
    format!("Thought: I need a tool.\n```json\n{}\n```", json!({"tool": tool, "arguments": args}))
}

#[tokio::test]
async fn the_three_goals_reach_their_references_through_the_gate() {
    let gate = bench();
    let guardrail = [
        call("search_law", json!({"query": "안전난간 중간 난간대 간격 제13조제2호"})),
        call("calculate", json!({"expression": "150 / (2 + 1) * 10"})),
        "최종 답: 상부 난간대가 150 cm이므로 중간 난간대는 2단, 간격은 500 mm입니다.".to_owned(),
    ];
    let scaffold = [
        call("search_law", json!({"query": "강관비계 비계기둥 간격 제60조제1호", "top_k": 1})),
        format!(
            "[{}, {}]",
            json!({"tool": "calculate", "arguments": {"expression": "ceil(20 / 1.85) + 1"}}),
            json!({"tool": "calculate", "arguments": {"expression": "round(20000 / ceil(20 / 1.85) * 100) / 100"}})
        ),
        "Final answer: 12 posts, spaced 1818.18 mm apart.".to_owned(),
    ];
    let force =
        [call("convert_unit", json!({"value": 100, "from": "kgf", "to": "N"})), "100 kgf = 980.665 N".to_owned()];
    for (goal, answers, calls) in
        [(Goal::Guardrail, &guardrail[..], 2), (Goal::Scaffold, &scaffold[..], 3), (Goal::Force, &force[..], 1)]
    {
        let r = run(&gate, goal, answers).await.unwrap();
        assert_eq!(
            (r.verdict, r.stop, r.rounds, r.tool_calls, r.failed_calls),
            (Outcome::Pass, Stop::FinalAnswer, answers.len(), calls, 0),
            "{goal:?}: {r:#?}"
        );
        assert!(r.references.iter().all(|c| c.ok), "{goal:?}");
        assert!(r.round_log.iter().flat_map(|r| &r.calls).all(|c| c.result.is_some()));
    }
    // The converter's result is the gate's: the call really ran.
    let r = run(&gate, Goal::Force, &force).await.unwrap();
    assert_eq!(r.round_log[0].calls[0].result, Some(json!({"value": 980.665, "unit": "N"})));
}

#[tokio::test]
async fn real_rejections_drive_the_stop_rules() {
    let gate = bench();
    // A calculator error and an unknown unit: two failed rounds in a row stop the loop.
    let answers = [
        call("calculate", json!({"expression": "100 *"})),
        call("convert_unit", json!({"value": 100, "from": "kgf", "to": "lbf"})),
        "980.665 N".to_owned(),
    ];
    let r = run(&gate, Goal::Force, &answers).await.unwrap();
    assert_eq!(
        (r.stop, r.rounds, r.failed_calls, r.unused_answers, r.verdict),
        (Stop::ConsecutiveFailures, 2, 2, 1, Outcome::Fail)
    );
    let codes: Vec<_> = r.round_log.iter().flat_map(|r| &r.calls).map(|c| c.code).collect();
    assert_eq!(codes, [Some(Code::CalcSyntaxError), Some(Code::UnknownUnit)]);
    // A failure then a success resets the count; a wrong final number fails the check.
    let answers = [
        call("calculate", json!({"expression": "100 *"})),
        call("calculate", json!({"expression": "100 * 9.80665"})),
        "about 1000 N".to_owned(),
    ];
    let r = run(&gate, Goal::Force, &answers).await.unwrap();
    assert_eq!((r.stop, r.failed_calls, r.verdict), (Stop::FinalAnswer, 1, Outcome::Fail));
    assert_eq!(r.reasons, ["the final answer does not state force_n = 980.665"]);
    // A change tool of the checkout example is outside the workbench principal's scope.
    let answers = [
        call("scale_replicas", json!({"service": "checkout", "replicas": 3, "resource_version": 7})),
        "done".to_owned(),
    ];
    let r = run(&gate, Goal::Force, &answers).await.unwrap();
    assert_eq!(r.round_log[0].calls[0].code, Some(Code::PolicyDenied));
    // The same call twice: the repeat is not executed.
    let same = call("calculate", json!({"expression": "1 + 1"}));
    let r = run(&gate, Goal::Force, &[same.clone(), same, "2".to_owned()]).await.unwrap();
    assert_eq!((r.stop, r.rounds, r.tool_calls), (Stop::RepeatedCall, 2, 1));
}

#[tokio::test]
async fn limits_are_refused_before_anything_runs() {
    let gate = bench();
    let principal = workbench_principal(gate.config()).unwrap();
    let input = LoopInput {
        goal: Goal::Guardrail,
        value: None,
        answers: vec![call("calculate", json!({"expression": "1"}))],
        max_rounds: Some(11),
        stop_after_failures: None,
        tolerance: None,
    };
    let err = replay_loop(&gate, &principal, &RunContext::new("r", "workbench"), input, &IntakeLimits::default()).await;
    assert!(matches!(err, Err(LabError::Invalid(r)) if r.code == Code::TooManyRounds));
    let events = bridle_runtime::audit::export(gate.stores().audit.as_ref(), None).await.unwrap();
    assert!(events.is_empty());
}

#[tokio::test]
async fn loop_calls_are_audited_without_the_pasted_text() {
    let gate = bench();
    let secret = "PASTED-LOOP-7d1f";
    let answers = [
        call("search_law", json!({"query": format!("{secret} 난간")})),
        call(secret, json!({"note": secret})),
        format!("{secret}: 980.665 N"),
    ];
    let r = run(&gate, Goal::Force, &answers).await.unwrap();
    assert_eq!(r.tool_calls, 2);
    let events = bridle_runtime::audit::export(gate.stores().audit.as_ref(), None).await.unwrap();
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|e| e.record.kind == EventKind::ToolCall && e.record.reason.is_none()));
    let exported: String = events.iter().map(|e| serde_json::to_string(e).unwrap()).collect();
    assert!(!exported.contains("PASTED-LOOP") && !exported.contains("난간"), "{exported}");
}
