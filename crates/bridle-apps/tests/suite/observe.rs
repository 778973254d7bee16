//! `[[history.observe]]`: an executed fab change is read back on its resource and rated by what
//! was read (source `observation`), so the action history learns without an operator; a change
//! that did not show is a failure, and the same action for the same diagnosis then waits for a
//! human. Bad rules are refused at load with every problem listed.

use std::path::Path;
use std::sync::Arc;

use bridle_apps::pipelines::fab::{FabOptions, fab_graph};
use bridle_core::config::Config;
use bridle_core::history::{Outcome, OutcomeSource};
use bridle_core::ports::SystemClock;
use bridle_runtime::adapter::FabAdapter;
use bridle_runtime::engine::Engine;
use bridle_runtime::graph::{Graph, RunConfig, RunOutcome};
use bridle_runtime::llm::ScriptedModel;
use bridle_runtime::llm::scripted::ScriptedReply;
use bridle_runtime::store::Stores;
use serde_json::{Value, json};

/// The fab example with its own observation rule taken out and `extra` TOML appended.
fn fab_with(extra: &str) -> Result<Config, bridle_core::config::ConfigErrors> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fab");
    let example = std::fs::read_to_string(dir.join("bridle.toml")).unwrap();
    let (head, rest) = example.split_once("[[history.observe]]").unwrap();
    let (_, tail) = rest.split_once("[adapter]").unwrap();
    let text = format!("{head}[adapter]{tail}{extra}");
    let files = |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| format!("`{rel}`: {e}"));
    bridle_core::config::load(&text, &files)
}

fn rule(field: &str) -> String {
    format!(
        "\n[[history.observe]]\nafter = \"set_temperature\"\nread = \"get_recipe\"\nfield = \"{field}\"\nargument = \"temp_celsius\"\n"
    )
}

fn reply(agent: &str, turn: u32, value: Value) -> ScriptedReply {
    ScriptedReply { agent: Some(agent.into()), turn: Some(turn), json: Some(value), ..ScriptedReply::default() }
}

/// Two runs' worth of a confident diagnosis and a confident 5 °C trim (`auto` below 400 °C).
fn confident_trims() -> Vec<ScriptedReply> {
    let diagnosis = json!({"candidates": [{"cause": "heater drift", "confidence": 0.9, "evidence": "trend"}]});
    let advice = json!({"action_id": "set_temperature", "parameters": {"equipment": "etch-01", "temp_celsius": 375},
        "confidence": 0.85, "reasoning": "trim the setpoint"});
    vec![reply("diagnostician", 1, diagnosis), reply("advisor", 1, advice)]
}

struct Rig {
    graph: Graph,
    stores: Stores,
}

fn rig(config: Config) -> Rig {
    let config = Arc::new(config);
    let stores = Stores::memory();
    let gate = Engine::builder(config.clone(), stores.clone(), Arc::new(FabAdapter::from_config(&config)))
        .clock(Arc::new(SystemClock))
        .gate()
        .unwrap();
    // Every run asks the same questions: the script answers each run's turn 1.
    let model = Arc::new(ScriptedModel::new("test", confident_trims()).unwrap());
    let requester = config.principals["advisor-agent"].clone();
    let graph = fab_graph(gate, model, requester, FabOptions::from_config(&config)).unwrap();
    Rig { graph, stores }
}

async fn run(rig: &Rig, thread: &str) -> RunOutcome {
    let input =
        json!({"anomaly": {"equipment": "etch-01", "metric": "chamber_temp_c", "value": 388.0}, "incident": "inc-9"});
    rig.graph.invoke(RunConfig::new(thread), input).await.unwrap()
}

async fn history(rig: &Rig) -> Vec<bridle_core::history::ActionRecord> {
    let since = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    rig.stores.history.action_history("fab-1", "set_temperature", "heater drift", "etch", since).await.unwrap()
}

#[tokio::test]
async fn an_executed_change_that_reads_back_as_set_is_rated_a_success_by_observation() {
    // The example's own rule.
    let rig = rig(bridle_runtime::bundled::fab().unwrap());
    let done = run(&rig, "obs-1").await;
    let outcome = &done.state["outcome"];
    assert_eq!(outcome["status"], "executed", "{outcome}");
    assert_eq!(
        outcome["observation"],
        json!({"read": "get_recipe", "field": "temp_celsius", "expected": 375, "observed": 375, "outcome": "success"})
    );
    let actions = history(&rig).await;
    assert_eq!(actions.len(), 1);
    let rating = actions[0].rating.as_ref().unwrap();
    assert_eq!((rating.outcome, rating.source), (Outcome::Success, OutcomeSource::Observation));
    assert_eq!(rating.rated_by, "observation:get_recipe");
    let events = bridle_runtime::audit::export(rig.stores.audit.as_ref(), Some("fab-1")).await.unwrap();
    assert_eq!(events.iter().filter(|e| e.record.kind.as_str() == "action_outcome").count(), 1);
    assert!(bridle_core::audit::verify_chain("fab-1", &events).is_ok());
}

#[tokio::test]
async fn a_change_that_does_not_show_is_a_failure_and_the_same_action_then_waits_for_a_human() {
    // The recipe has no `setpoint_celsius`: the change cannot be seen, which counts as a failure.
    let rig = rig(fab_with(&rule("setpoint_celsius")).unwrap());
    let first = run(&rig, "obs-2").await;
    assert_eq!(first.state["outcome"]["observation"]["outcome"], "failure", "{}", first.state);
    assert_eq!(history(&rig).await[0].outcome(), Some(Outcome::Failure));
    // The same trim for the same diagnosis on the same equipment class: approval, with the history.
    let second = run(&rig, "obs-3").await;
    let plan = &second.interrupts[0].payload["plan"];
    assert_eq!(plan["level"], "approval", "{}", second.state);
    let why = plan["why"].as_str().unwrap();
    assert!(why.contains("fail"), "the history is the reason: {why}");
}

#[test]
fn bad_observation_rules_are_refused_with_every_problem_listed() {
    let bad = "
[[history.observe]]
after = \"get_recipe\"
read = \"set_temperature\"
field = \"\"
argument = \"temp_celsius\"

[[history.observe]]
after = \"no_such_tool\"
read = \"get_equipment\"
field = \"status\"
argument = \"x\"
";
    let errors = fab_with(bad).unwrap_err().0;
    let at: Vec<&str> = errors.iter().map(|e| e.at.as_str()).collect();
    for expected in
        ["history.observe[0].after", "history.observe[0].read", "history.observe[0].field", "history.observe[1].after"]
    {
        assert!(at.contains(&expected), "{expected} missing from {errors:?}");
    }
}
