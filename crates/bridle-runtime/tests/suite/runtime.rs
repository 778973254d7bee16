//! The runtime builder: `[runtime]` and `[llm]` read in two phases with every error listed,
//! the parts wired in order (stores, checkpointer, model under its limits, hooks, task graph,
//! gate), environment precedence, background runs drained by `shutdown`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bridle_core::Code;
use bridle_core::checkpoint::{Durability, Strictness, ThreadStatus};
use bridle_core::config::{LlmSettings, load};
use bridle_runtime::graph::{END, Event, GraphBuilder, Kind, Reducer, START, State, StateSchema, Update, node_fn};
use bridle_runtime::llm::scripted::ScriptedReply;
use bridle_runtime::llm::{ChatRequest, Message, ScriptedModel};
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use serde_json::{Value, json};

use super::support::{FAB_POLICY, FAB_SCHEMA, FAB_TOML};

fn with(extra: &str, script: Option<&str>) -> Result<bridle_core::config::Config, bridle_core::config::ConfigErrors> {
    let script = script.map(str::to_owned);
    let files = move |p: &str| match p {
        "fab.cedarschema" => Ok(FAB_SCHEMA.to_owned()),
        "fab.cedar" => Ok(FAB_POLICY.to_owned()),
        "script.toml" => script.clone().ok_or_else(|| "no such file".to_owned()),
        _ => Err(format!("no file `{p}`")),
    };
    load(&format!("{FAB_TOML}\n{extra}"), &files)
}

#[test]
fn runtime_and_llm_sections_are_read_with_every_error_listed() {
    let config = with(
        r#"
[runtime]
durability = "async"
strictness = "strict"
keep_checkpoints = 5
[runtime.deadlines]
pipeline_ms = 120000
[runtime.tokens]
per_session = 5000
[runtime.cost.rates]
prompt_per_1k = 0.5
completion_per_1k = 1.5
[runtime.cost.circuit]
threshold = 2.0
window_ms = 60000
cool_down_ms = 30000
[llm]
script = "script.toml"
"#,
        Some("[[reply]]\nagent = \"a\"\nturn = 1\ncontent = \"hi\"\n"),
    )
    .unwrap();
    let r = &config.runtime;
    assert_eq!((r.durability, r.strictness, r.keep_checkpoints), (Durability::Async, Strictness::Strict, 5));
    assert_eq!(r.deadlines.pipeline.as_secs(), 120);
    assert_eq!(r.deadlines.llm_call.as_secs(), 30, "unset deadlines keep their defaults");
    assert_eq!(r.tokens.per_session, Some(5000));
    assert!(r.circuit.is_some());
    assert!(matches!(&config.llm, LlmSettings::Script { path, .. } if path == "script.toml"));

    let errors = with(
        r#"
[runtime]
keep_checkpoints = 0
recursion_limit = 0
[runtime.deadlines]
llm_call_ms = 0
[llm]
provider = "openai"
script = "script.toml"
"#,
        None,
    )
    .unwrap_err()
    .to_string();
    for expected in [
        "runtime.keep_checkpoints",
        "runtime.recursion_limit",
        "runtime.deadlines.llm_call_ms",
        "llm.script: only the `scripted` provider",
        "llm.base_url",
        "llm.model",
    ] {
        assert!(errors.contains(expected), "missing `{expected}` in:\n{errors}");
    }
    let errors = with("[llm]\nprovider = \"magic\"\n", None).unwrap_err().to_string();
    assert!(errors.contains("unknown provider `magic`"), "{errors}");
    let errors = with("[runtime]\nturbo = true\n", None).unwrap_err().to_string();
    assert!(errors.contains("turbo"), "{errors}");
}

fn script() -> Arc<ScriptedModel> {
    let reply = |turn| ScriptedReply {
        agent: Some("writer".into()),
        turn: Some(turn),
        content: Some(format!("draft {turn}")),
        usage: Some(bridle_runtime::llm::Usage { prompt_tokens: 40, completion_tokens: 10 }),
        ..ScriptedReply::default()
    };
    Arc::new(ScriptedModel::new("scripted", vec![reply(1), reply(2), reply(3)]).unwrap())
}

#[tokio::test]
async fn a_built_runtime_runs_graphs_with_its_checkpointer_hooks_task_graph_and_limits() {
    let config =
        Arc::new(with("[runtime]\nkeep_checkpoints = 2\n[runtime.tokens]\nper_session = 100\n", None).unwrap());
    let runtime =
        RuntimeBuilder::new(config).env(Env::default()).store_url("memory").llm(script()).build().await.unwrap();
    let llm = runtime.session_llm("tenant-a", "run-1");
    let schema =
        StateSchema::new().field("drafts", Kind::Array, Reducer::Append).field("error", Kind::Any, Reducer::Replace);
    let graph = GraphBuilder::new("writer", schema)
        .node(
            "write",
            node_fn(move |_: State, _| {
                let llm = llm.clone();
                async move {
                    let mut drafts = Vec::new();
                    for turn in 1..=3 {
                        match llm.chat(&ChatRequest::new("writer", turn, vec![Message::user("write")])).await {
                            Ok(answer) => drafts.push(answer.content),
                            Err(e) => return Ok(Update::new().set("drafts", drafts).set("error", e.code())),
                        }
                    }
                    Ok(Update::new().set("drafts", drafts))
                }
            }),
        )
        .edge(START, "write")
        .edge("write", END)
        .build()
        .unwrap();
    let out = runtime.invoke(&graph, "w-1", Value::Null).await.unwrap();
    // 50 tokens per call against a session budget of 100: the third call is refused.
    assert_eq!(out.state["drafts"], json!(["draft 1", "draft 2"]));
    assert_eq!(out.state["error"], json!(Code::BudgetExhausted));
    assert_eq!(runtime.checkpointer.steps("w-1").await.unwrap(), vec![0, 1], "keep_checkpoints = 2");
    let last = runtime.checkpointer.latest("w-1").await.unwrap().unwrap();
    assert_eq!(last.status, ThreadStatus::Done);
    let progress = runtime.task_graph.as_ref().unwrap().progress("w-1");
    assert_eq!(progress.tasks.len(), 1);
    runtime.shutdown().await;
}

#[tokio::test]
async fn shutdown_waits_for_background_runs() {
    let config = Arc::new(with("", None).unwrap());
    let runtime = RuntimeBuilder::new(config).env(Env::default()).store_url("memory").build().await.unwrap();
    let graph = GraphBuilder::new("slow", StateSchema::new().field("n", Kind::Integer, Reducer::Replace))
        .node(
            "wait",
            node_fn(|_, _| async {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                Ok(Update::new().set("n", 1))
            }),
        )
        .edge(START, "wait")
        .edge("wait", END)
        .build()
        .unwrap();
    let finished = Arc::new(AtomicUsize::new(0));
    for i in 0..3 {
        let f = finished.clone();
        runtime.spawn_run(&graph, runtime.run_config(&format!("bg-{i}")), Value::Null, move |e| {
            if matches!(e, Event::Finished { .. }) {
                f.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    runtime.shutdown().await;
    assert_eq!(finished.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_environment_overrides_the_file_and_the_builder_overrides_both() {
    let config = Arc::new(with("[store]\nurl = \"sqlite://does/not/matter.db\"\n", None).unwrap());
    let env = Env { store_url: Some("memory".into()), ..Env::default() };
    let runtime = RuntimeBuilder::new(config.clone()).env(env.clone()).build().await.unwrap();
    assert_eq!(runtime.stores.url, "memory");
    let runtime = RuntimeBuilder::new(config).env(env).store_url("sqlite::memory:").build().await.unwrap();
    assert_eq!(runtime.stores.url, "sqlite::memory:");
    // Without a script the scripted model names what it was asked.
    let err = runtime
        .session_llm("tenant-a", "run-1")
        .chat(&ChatRequest::new("advisor", 1, vec![Message::user("hi")]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::LlmUnavailable);
    assert!(err.to_string().contains("advisor"), "{err}");
}
