//! The scripted model: replies by turn, by message hash, delays, each error kind, missing replies.

use std::time::{Duration, Instant};

use bridle_core::Code;
use bridle_runtime::llm::scripted::{ScriptError, ScriptedReply};
use bridle_runtime::llm::{ChatRequest, LlmClient, LlmError, Message, ScriptedModel, messages_hash};
use serde_json::json;
use sha2::{Digest, Sha256};

const SCRIPT: &str = r#"
model = "scripted-demo"

[[reply]]
agent = "advisor"
turn = 1
json = { action_id = "raise_temp", parameters = { delta = 2 }, confidence = 0.8, reasoning = "drift is within bounds" }
usage = { prompt_tokens = 40, completion_tokens = 20 }

[[reply]]
agent = "advisor"
turn = 2
content = "turn two, any attempt"

[[reply]]
agent = "advisor"
turn = 2
attempt = 2
content = "turn two, attempt two"
tool_calls = [{ id = "call_1", name = "calculate", arguments = '{"expression":"2*3"}' }]

[[reply]]
agent = "slow"
turn = 1
delay_ms = 400
content = "late but here"

[[reply]]
agent = "errors"
turn = 1
error = "timeout"

[[reply]]
agent = "errors"
turn = 2
error = "429"

[[reply]]
agent = "errors"
turn = 3
error = "500"

[[reply]]
agent = "errors"
turn = 4
error = "invalid_json"
"#;

fn ask(agent: &str, turn: u32) -> ChatRequest {
    ChatRequest::new(agent, turn, vec![Message::user(format!("{agent} {turn}"))])
}

#[tokio::test]
async fn replies_by_agent_turn_and_attempt() {
    let model = ScriptedModel::from_toml_str(SCRIPT).unwrap();
    let r = model.chat(&ask("advisor", 1)).await.unwrap();
    let value: serde_json::Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(value["action_id"], "raise_temp");
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (40, 20));
    assert_eq!(r.model, "scripted-demo");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));

    assert_eq!(model.chat(&ask("advisor", 2)).await.unwrap().content, "turn two, any attempt");
    let second = ChatRequest { attempt: 2, ..ask("advisor", 2) };
    let r = model.chat(&second).await.unwrap();
    assert_eq!(r.content, "turn two, attempt two");
    assert_eq!(r.tool_calls[0].name, "calculate");
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(model.requests().len(), 3);
}

#[test]
fn the_messages_hash_is_sha256_of_the_canonical_json() {
    let messages = vec![Message::user("hi"), Message::tool("c1", "42")];
    let canonical = r#"[{"content":"hi","role":"user"},{"content":"42","role":"tool","tool_call_id":"c1"}]"#;
    assert_eq!(messages_hash(&messages).unwrap(), hex::encode(Sha256::digest(canonical.as_bytes())));
}

#[tokio::test]
async fn a_recorded_input_is_answered_by_its_hash_first() {
    let recorded = vec![Message::system("you advise"), Message::user("temperature drifts up")];
    let hash = messages_hash(&recorded).unwrap();
    let script = json!({"replies": [
        {"messages_hash": hash, "content": "recorded answer", "usage": {"prompt_tokens": 1, "completion_tokens": 2}},
        {"agent": "advisor", "turn": 7, "content": "by turn"}
    ]});
    let model = ScriptedModel::from_json_str(&script.to_string()).unwrap();
    let r = model.chat(&ChatRequest::new("advisor", 7, recorded.clone())).await.unwrap();
    assert_eq!(r.content, "recorded answer");
    assert_eq!(r.usage.total(), 3);
    // Any agent and turn: the input decides.
    assert_eq!(model.chat(&ChatRequest::new("other", 99, recorded)).await.unwrap().content, "recorded answer");
    assert_eq!(model.chat(&ask("advisor", 7)).await.unwrap().content, "by turn");
}

#[tokio::test]
async fn a_delay_is_waited_and_a_delay_past_the_timeout_times_out() {
    let model = ScriptedModel::from_toml_str(SCRIPT).unwrap();
    let started = Instant::now();
    let r = model.chat(&ask("slow", 1)).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert!(r.latency >= Duration::from_millis(400));

    let short = ChatRequest { timeout: Some(Duration::from_millis(50)), ..ask("slow", 1) };
    let started = Instant::now();
    let e = model.chat(&short).await.unwrap_err();
    assert_eq!(e.code(), Code::LlmTimeout);
    assert!(started.elapsed() < Duration::from_millis(350));
}

#[tokio::test]
async fn each_scripted_error_maps_to_its_code() {
    let model = ScriptedModel::from_toml_str(SCRIPT).unwrap();
    let e = model.chat(&ask("errors", 1)).await.unwrap_err();
    assert_eq!(e.code(), Code::LlmTimeout);
    let e = model.chat(&ask("errors", 2)).await.unwrap_err();
    assert!(matches!(e, LlmError::Unavailable { status: Some(429), .. }), "{e:?}");
    let e = model.chat(&ask("errors", 3)).await.unwrap_err();
    assert!(matches!(e, LlmError::Unavailable { status: Some(500), .. }), "{e:?}");
    assert_eq!(e.code(), Code::LlmUnavailable);
    let e = model.chat(&ask("errors", 4)).await.unwrap_err();
    assert_eq!(e.code(), Code::LlmInvalidOutput);
}

#[tokio::test]
async fn a_missing_reply_is_unavailable_naming_agent_and_turn() {
    let model = ScriptedModel::from_toml_str(SCRIPT).unwrap();
    let e = model.chat(&ask("nobody", 3)).await.unwrap_err();
    assert_eq!(e.code(), Code::LlmUnavailable);
    let text = e.to_string();
    assert!(text.contains("agent `nobody` turn 3"), "{text}");
    assert_eq!(e.to_rejection().detail["agent"], "nobody");
}

#[tokio::test]
async fn usage_is_estimated_when_the_script_gives_none() {
    let model = ScriptedModel::new(
        "m",
        vec![ScriptedReply {
            agent: Some("a".into()),
            turn: Some(1),
            content: Some("12345678".into()),
            ..ScriptedReply::default()
        }],
    )
    .unwrap();
    let r = model.chat(&ChatRequest::new("a", 1, vec![Message::user("hello")])).await.unwrap();
    assert_eq!((r.usage.prompt_tokens, r.usage.completion_tokens), (2, 2));
}

#[test]
fn a_bad_script_lists_every_problem() {
    let text = r#"
[[reply]]
content = "no key"

[[reply]]
agent = "a"
turn = 1
messages_hash = "00"

[[reply]]
agent = "a"
turn = 2
content = "x"
json = 1

[[reply]]
agent = "a"
turn = 2

[[reply]]
messages_hash = "not-hex"
"#;
    let Err(ScriptError::Invalid(problems)) = ScriptedModel::from_toml_str(text) else { panic!("expected invalid") };
    assert_eq!(problems.len(), 5, "{problems:?}");
    assert!(problems[0].starts_with("reply 1:"));
    assert!(problems.iter().any(|p| p.contains("second reply for agent `a` turn 2")));
    assert!(matches!(ScriptedModel::from_toml_str("[[reply]]\nagnet = 1"), Err(ScriptError::Parse(_))));
}

#[tokio::test]
async fn scripts_load_from_toml_and_json_files() {
    let dir = tempfile::tempdir().unwrap();
    let toml_path = dir.path().join("script.toml");
    std::fs::write(&toml_path, SCRIPT).unwrap();
    let model = ScriptedModel::from_file(&toml_path).unwrap();
    assert_eq!(model.chat(&ask("advisor", 2)).await.unwrap().content, "turn two, any attempt");

    let json_path = dir.path().join("script.json");
    std::fs::write(&json_path, r#"{"model": "j", "reply": [{"agent": "a", "turn": 1, "content": "from json"}]}"#)
        .unwrap();
    let model = ScriptedModel::from_file(&json_path).unwrap();
    assert_eq!(model.chat(&ask("a", 1)).await.unwrap().content, "from json");

    let missing = ScriptedModel::from_file(&dir.path().join("nope.toml")).unwrap_err();
    assert!(matches!(missing, ScriptError::Read { .. }));
}
