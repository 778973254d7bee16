//! Validated agent outputs: valid, invalid then valid (one retry with the error fed back),
//! invalid twice (degraded), retry turned off, model errors, bad schemas.

use bridle_core::Code;
use bridle_runtime::agent::{Agent, AgentSpec, DecisionContext, advisor_output_schema};
use bridle_runtime::llm::scripted::ScriptedReply;
use bridle_runtime::llm::{LlmClient, Message, Role, ScriptedModel, Usage, messages_hash};
use serde_json::{Value, json};

const VALID: &str = r#"{"action_id": "set_temp", "parameters": {"chamber": "A", "delta": 2}, "confidence": 0.8, "reasoning": "chamber A is 2 degrees low"}"#;
const TOO_CONFIDENT: &str =
    r#"{"action_id": "set_temp", "parameters": {}, "confidence": 1.5, "reasoning": "very sure about this"}"#;

fn reply(turn: u32, attempt: Option<u32>, content: &str) -> ScriptedReply {
    ScriptedReply {
        agent: Some("advisor".into()),
        turn: Some(turn),
        attempt,
        content: Some(content.into()),
        usage: Some(Usage { prompt_tokens: 100, completion_tokens: 30 }),
        ..ScriptedReply::default()
    }
}

fn advisor(retry_invalid: bool) -> Agent {
    let mut spec = AgentSpec::new("advisor", "You advise on fab equipment. Answer in JSON.", advisor_output_schema());
    spec.retry_invalid = retry_invalid;
    Agent::new(spec).unwrap()
}

fn input() -> Vec<Message> {
    vec![Message::user("chamber A reads 348 K, target 350 K")]
}

#[tokio::test]
async fn a_valid_output_is_accepted() {
    let model = ScriptedModel::new("m", vec![reply(1, None, VALID)]).unwrap();
    let out = advisor(true).call(&model, 1, input()).await.unwrap();
    assert!(!out.is_degraded);
    assert_eq!(out.value["action_id"], "set_temp");
    assert!((out.confidence - 0.8).abs() < 1e-9);
    assert_eq!(out.attempts, 1);
    assert!(out.errors.is_empty());
    assert_eq!(out.usage.total(), 130);
    assert_eq!(out.verdict(), "accepted");

    let sent = &model.requests()[0];
    assert!(sent.json_mode);
    assert_eq!(sent.messages[0].role, Role::System);
    assert_eq!(sent.messages[1].content, "chamber A reads 348 K, target 350 K");
}

#[tokio::test]
async fn a_fenced_json_block_is_tolerated() {
    let fenced = format!("Here is my answer:\n```json\n{VALID}\n```\n");
    let model = ScriptedModel::new("m", vec![reply(1, None, &fenced)]).unwrap();
    let out = advisor(true).call(&model, 1, input()).await.unwrap();
    assert!(!out.is_degraded);
    assert_eq!(out.value["parameters"]["delta"], 2);
}

#[tokio::test]
async fn an_invalid_output_is_retried_once_with_the_error_fed_back() {
    let model = ScriptedModel::new("m", vec![reply(1, Some(1), TOO_CONFIDENT), reply(1, Some(2), VALID)]).unwrap();
    let out = advisor(true).call(&model, 1, input()).await.unwrap();
    assert!(!out.is_degraded);
    assert_eq!(out.attempts, 2);
    assert_eq!(out.usage.total(), 260, "both attempts are counted");
    assert_eq!(out.errors.len(), 1);
    assert!(out.errors[0].starts_with("attempt 1: at `/confidence`"), "{:?}", out.errors);

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].attempt, 2);
    assert_eq!(requests[1].turn, 1);
    let messages = &requests[1].messages;
    let fed_back = messages.last().unwrap();
    assert_eq!(fed_back.role, Role::User);
    assert!(fed_back.content.contains("/confidence"), "{}", fed_back.content);
    assert!(fed_back.content.contains("1.5"), "{}", fed_back.content);
    let previous = &messages[messages.len() - 2];
    assert_eq!((previous.role, previous.content.as_str()), (Role::Assistant, TOO_CONFIDENT));
}

#[tokio::test]
async fn invalid_twice_is_degraded_with_both_errors() {
    let model =
        ScriptedModel::new("m", vec![reply(1, Some(1), TOO_CONFIDENT), reply(1, Some(2), "I think we should heat it")])
            .unwrap();
    let out = advisor(true).call(&model, 1, input()).await.unwrap();
    assert!(out.is_degraded);
    assert_eq!(out.confidence, 0.0);
    assert_eq!(out.value, Value::Null);
    assert_eq!(out.attempts, 2);
    assert_eq!(out.errors.len(), 2);
    assert!(out.errors[0].contains("/confidence"));
    assert!(out.errors[1].starts_with("attempt 2: the output is not JSON"), "{:?}", out.errors);
    assert_eq!(out.verdict(), "degraded");
    let shape = serde_json::to_value(&out).unwrap();
    assert_eq!(shape["is_degraded"], true);
    assert_eq!(shape["confidence"], 0.0);
    assert_eq!(shape["errors"].as_array().unwrap().len(), 2);
    assert!(shape["latency_ms"].is_u64());
}

#[tokio::test]
async fn without_the_retry_an_invalid_output_degrades_at_once() {
    let short_reason = r#"{"action_id": "x", "parameters": {}, "confidence": 0.5, "reasoning": "short"}"#;
    let model = ScriptedModel::new("m", vec![reply(1, None, short_reason)]).unwrap();
    let out = advisor(false).call(&model, 1, input()).await.unwrap();
    assert!(out.is_degraded);
    assert_eq!(out.attempts, 1);
    assert!(out.errors[0].contains("/reasoning"), "{:?}", out.errors);
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn model_failures_are_errors_not_degraded_results() {
    let model = ScriptedModel::new("m", vec![]).unwrap();
    let client: &dyn LlmClient = &model;
    let e = advisor(true).call(client, 4, input()).await.unwrap_err();
    assert_eq!(e.code(), Code::LlmUnavailable);
}

#[test]
fn the_advisor_schema_rules() {
    let agent = advisor(true);
    assert!(agent.validate(VALID).is_ok());
    let bad = json!({"action_id": 3, "parameters": [], "confidence": -0.1, "reasoning": "short", "extra": 1});
    let problems = agent.validate(&bad.to_string()).unwrap_err();
    assert_eq!(problems.len(), 5, "{problems:?}");
    assert!(agent.validate(r#"{"action_id": "a", "parameters": {}, "reasoning": "long enough text"}"#).is_err());
}

#[test]
fn a_bad_schema_is_refused_when_the_agent_is_built() {
    let e = Agent::new(AgentSpec::new("x", "p", json!({"type": "no-such-type"}))).unwrap_err();
    assert_eq!(e.agent, "x");
}

#[tokio::test]
async fn an_agent_call_becomes_a_decision_record() {
    let model = ScriptedModel::new("m", vec![reply(1, Some(1), TOO_CONFIDENT), reply(1, Some(2), "no json")]).unwrap();
    let out = advisor(true).call(&model, 1, input()).await.unwrap();
    let context = DecisionContext {
        decision_id: "d1".into(),
        pipeline_run_id: "run-1".into(),
        tenant: "fab".into(),
        created_at: time::macros::datetime!(2026-01-01 00:00 UTC),
    };
    let record = out.decision_record(&context);
    assert_eq!(record.agent, "advisor");
    assert_eq!(record.model, "m");
    assert_eq!(record.final_verdict, "degraded");
    assert_eq!(record.output, json!("no json"));
    assert_eq!((record.prompt_tokens, record.completion_tokens), (200, 60));
    assert_eq!(record.input[0]["role"], "system");
    assert_eq!(record.input[1]["content"], "chamber A reads 348 K, target 350 K");
    // The recorded input is what a replay by messages hash is keyed on.
    let recorded: Vec<Message> = serde_json::from_value(record.input.clone()).unwrap();
    assert_eq!(messages_hash(&recorded).unwrap(), messages_hash(&model.requests()[0].messages).unwrap());
    assert_eq!(record.harness_checks["output_schema"]["attempts"], 2);
    assert_eq!(record.harness_checks["output_schema"]["errors"].as_array().unwrap().len(), 2);
}
