//! The state-graph runtime: reducers, edges, fan-out with clean context, joins, loops and their
//! bounds, timeouts, retries, error handlers, streaming, hooks and the task-graph observer.

mod pauses;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bridle_core::Code;
use bridle_core::checkpoint::ThreadStatus;
use bridle_runtime::graph::hooks::HookHandler;
use bridle_runtime::graph::observer::{TaskGraph, TaskStatus};
use bridle_runtime::graph::{
    END, Event, Graph, GraphBuilder, Hooks, Kind, NodeError, NodeOptions, Reducer, RetryPolicy, RunConfig, START,
    State, StateSchema, Target, Update, node_fn,
};
use serde_json::{Value, json};

/// A node that adds 1 to `count`.
pub fn inc() -> Arc<dyn bridle_runtime::graph::Node> {
    node_fn(|s: State, _| async move { Ok(Update::new().set("count", s.int("count") + 1)) })
}

/// A node that writes nothing.
pub fn noop() -> Arc<dyn bridle_runtime::graph::Node> {
    node_fn(|_, _| async { Ok(Update::new()) })
}

pub fn counter_schema() -> StateSchema {
    StateSchema::new().field("count", Kind::Integer, Reducer::Replace).field("log", Kind::Array, Reducer::Append).field(
        "facts",
        Kind::Object,
        Reducer::Merge,
    )
}

pub fn chain(n: usize) -> Graph {
    let mut b = GraphBuilder::new("chain", counter_schema()).edge(START, "n0");
    for i in 0..n {
        b = b.node(&format!("n{i}"), inc());
        let next = if i + 1 == n { END.to_owned() } else { format!("n{}", i + 1) };
        b = b.edge(&format!("n{i}"), &next);
    }
    b.build().unwrap()
}

async fn events(graph: &Graph, config: RunConfig, input: Value) -> Vec<Event> {
    let mut stream = graph.stream(config, input);
    let mut all = Vec::new();
    while let Some(e) = stream.next().await {
        all.push(e);
    }
    all
}

fn names(events: &[Event]) -> Vec<String> {
    events.iter().map(|e| serde_json::to_value(e).unwrap()["event"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn a_chain_runs_each_node_once_in_order_and_streams_its_events() {
    let graph = chain(3);
    let all = events(&graph, RunConfig::new("t-chain"), json!({"count": 10})).await;
    let Event::Finished { outcome } = all.last().unwrap() else { panic!("last event is not finished") };
    assert_eq!(outcome.status, ThreadStatus::Done);
    assert_eq!(outcome.state["count"], 13);
    assert_eq!(outcome.steps, 3);
    let kinds = names(&all);
    assert_eq!(kinds[0], "run_started");
    assert_eq!(&kinds[1..5], ["node_enter", "update", "node_exit", "step_done"]);
    assert_eq!(kinds.iter().filter(|k| *k == "node_enter").count(), 3);
    let entered: Vec<&str> = all
        .iter()
        .filter_map(|e| if let Event::NodeEnter { node, .. } = e { Some(node.as_str()) } else { None })
        .collect();
    assert_eq!(entered, ["n0", "n1", "n2"]);
    // invoke is the same run without the events
    let outcome = graph.invoke(RunConfig::new("t-chain-2"), json!({"count": 10})).await.unwrap();
    assert_eq!(outcome.state["count"], 13);
}

#[tokio::test]
async fn two_writes_to_a_replace_field_in_one_step_are_an_error_and_reducers_combine() {
    let schema = counter_schema();
    let both = |field: &'static str, value: Value| {
        let v = value.clone();
        GraphBuilder::new("two", schema.clone())
            .node(
                "a",
                node_fn(move |_, _| {
                    let v = v.clone();
                    async move { Ok(Update::new().set(field, v)) }
                }),
            )
            .node(
                "b",
                node_fn(move |_, _| {
                    let v = value.clone();
                    async move { Ok(Update::new().set(field, v)) }
                }),
            )
            .edge(START, "a")
            .edge(START, "b")
            .edge("a", END)
            .edge("b", END)
            .build()
            .unwrap()
    };
    let err = both("count", json!(1)).invoke(RunConfig::new("t"), Value::Null).await.unwrap_err();
    assert_eq!(err.code, Code::InvalidUpdate);
    assert!(err.message.contains("two writes to `count`"), "{}", err.message);
    let out = both("log", json!(["x"])).invoke(RunConfig::new("t"), Value::Null).await.unwrap();
    assert_eq!(out.state["log"], json!(["x", "x"]));
    let out = both("facts", json!({"k": 1})).invoke(RunConfig::new("t"), Value::Null).await.unwrap();
    assert_eq!(out.state["facts"], json!({"k": 1}));
}

#[tokio::test]
async fn an_update_of_the_wrong_type_or_to_an_unknown_field_is_refused_with_the_field_named() {
    let wrong = GraphBuilder::new("wrong", counter_schema())
        .node("a", node_fn(|_, _| async { Ok(Update::new().set("count", "seven")) }))
        .edge(START, "a")
        .edge("a", END)
        .build()
        .unwrap();
    let err = wrong.invoke(RunConfig::new("t"), Value::Null).await.unwrap_err();
    assert_eq!(err.code, Code::InvalidUpdate);
    assert!(err.message.contains("`count`") && err.message.contains("string"), "{}", err.message);
    let unknown = GraphBuilder::new("unknown", counter_schema())
        .node("a", node_fn(|_, _| async { Ok(Update::new().set("nope", 1)) }))
        .edge(START, "a")
        .edge("a", END)
        .build()
        .unwrap();
    let err = unknown.invoke(RunConfig::new("t"), Value::Null).await.unwrap_err();
    assert!(err.message.contains("no state field `nope`"), "{}", err.message);
    let err = chain(1).invoke(RunConfig::new("t"), json!([1])).await.unwrap_err();
    assert_eq!(err.code, Code::InvalidUpdate);
}

#[tokio::test]
async fn fan_out_branches_see_only_their_own_input_and_the_join_runs_once() {
    let schema = StateSchema::new()
        .field("topics", Kind::Array, Reducer::Replace)
        .field("results", Kind::Array, Reducer::Append)
        .field("joined", Kind::Integer, Reducer::Replace);
    let joins = Arc::new(AtomicUsize::new(0));
    let j = joins.clone();
    let graph = GraphBuilder::new("fan", schema)
        .node("dispatch", node_fn(|_, _| async { Ok(Update::new().set("topics", (0..8).collect::<Vec<_>>())) }))
        .node(
            "branch",
            node_fn(|s: State, _| async move {
                // clean context: only the input sent to this branch
                let keys: Vec<&String> = s.as_map().keys().collect();
                assert_eq!(keys, ["topic"], "a branch saw more than its input");
                Ok(Update::new().set("results", vec![s.int("topic") * 10]))
            }),
        )
        .node(
            "join",
            node_fn(move |s: State, _| {
                j.fetch_add(1, Ordering::SeqCst);
                let n = s.get("results").and_then(Value::as_array).map_or(0, Vec::len);
                async move { Ok(Update::new().set("joined", n)) }
            }),
        )
        .edge(START, "dispatch")
        .route("dispatch", &["branch"], |s| {
            s.get("topics")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|t| Target::send("branch", json!({ "topic": t })))
                .collect()
        })
        .edge("branch", "join")
        .edge("join", END)
        .build()
        .unwrap();
    let out = graph.invoke(RunConfig::new("t-fan"), Value::Null).await.unwrap();
    assert_eq!(out.state["joined"], 8);
    assert_eq!(out.state["results"], json!([0, 10, 20, 30, 40, 50, 60, 70]), "merged in task order");
    assert_eq!(joins.load(Ordering::SeqCst), 1);
    assert_eq!(out.steps, 3);
}

#[tokio::test]
async fn a_join_waits_for_branches_of_different_lengths() {
    let log = |name: &'static str| node_fn(move |_, _| async move { Ok(Update::new().set("log", vec![name])) });
    let graph = GraphBuilder::new("join", counter_schema())
        .node("a", log("a"))
        .node("b1", log("b1"))
        .node("b2", log("b2"))
        .node("c", log("c"))
        .node("d", log("d"))
        .edge(START, "a")
        .edge("a", "b1")
        .edge("a", "c")
        .edge("b1", "b2")
        .join(&["b2", "c"], "d")
        .edge("d", END)
        .build()
        .unwrap();
    let out = graph.invoke(RunConfig::new("t-join"), Value::Null).await.unwrap();
    assert_eq!(out.state["log"], json!(["a", "b1", "c", "b2", "d"]));
}

#[tokio::test]
async fn nodes_of_one_step_run_concurrently() {
    // Each node waits until both have started: run one after the other, they would never finish.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let waiting = |b: Arc<tokio::sync::Barrier>| {
        node_fn(move |_, _| {
            let b = b.clone();
            async move {
                b.wait().await;
                Ok(Update::new().set("log", vec![1]))
            }
        })
    };
    let graph = GraphBuilder::new("concurrent", counter_schema())
        .node("x", waiting(barrier.clone()))
        .node("y", waiting(barrier))
        .edge(START, "x")
        .edge(START, "y")
        .edge("x", END)
        .edge("y", END)
        .build()
        .unwrap();
    let run = graph.invoke(RunConfig::new("t"), Value::Null);
    let out = tokio::time::timeout(Duration::from_secs(10), run).await.expect("the step deadlocked").unwrap();
    assert_eq!(out.state["log"], json!([1, 1]));
}

fn looping(bound: Option<u32>, until: i64) -> Result<Graph, bridle_runtime::graph::GraphError> {
    let options = bound.map_or_else(NodeOptions::default, |b| NodeOptions::default().max_iterations(b));
    GraphBuilder::new("loop", counter_schema())
        .node_with("step", inc(), options)
        .edge(START, "step")
        .route("step", &["step", END], move |s| {
            vec![if s.int("count") < until { Target::node("step") } else { Target::End }]
        })
        .build()
}

#[tokio::test]
async fn a_loop_ends_on_its_condition_and_stops_at_its_bound_or_the_recursion_limit() {
    let out = looping(Some(100), 50).unwrap().invoke(RunConfig::new("t"), Value::Null).await.unwrap();
    assert_eq!(out.state["count"], 50);
    let err = looping(Some(5), 1000).unwrap().invoke(RunConfig::new("t"), Value::Null).await.unwrap_err();
    assert_eq!(err.code, Code::MaxIterationsExceeded);
    assert!(err.message.contains("node `step` would run 6 times; its bound is 5"), "{}", err.message);
    let mut config = RunConfig::new("t");
    config.recursion_limit = Some(7);
    let err = looping(Some(100), 1000).unwrap().invoke(config, Value::Null).await.unwrap_err();
    assert_eq!(err.code, Code::RecursionLimit);
}

#[test]
fn a_bad_graph_is_refused_with_every_problem_listed() {
    let err = GraphBuilder::new("bad", counter_schema())
        .node("a", inc())
        .node("a", inc())
        .node("orphan", inc())
        .node("dead_end", inc())
        .edge(START, "a")
        .edge("a", "nowhere")
        .edge("ghost", "a")
        .edge("a", "dead_end")
        .edge("orphan", END)
        .build()
        .unwrap_err();
    let text = err.to_string();
    for expected in [
        "node `a` is defined twice",
        "the edge from `a` leads to `nowhere`, which is not a node",
        "an edge starts at `ghost`, which is not a node",
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    // Shape problems are reported once names resolve.
    let err = GraphBuilder::new("shape", counter_schema())
        .node("a", inc())
        .node("orphan", inc())
        .node("dead_end", inc())
        .edge(START, "a")
        .edge("a", "dead_end")
        .edge("orphan", END)
        .build()
        .unwrap_err();
    assert_eq!(err.problems.len(), 2, "{err}");
    assert!(err.to_string().contains("node `dead_end` has no way out"));
    assert!(err.to_string().contains("node `orphan` cannot be reached"));
    let err = looping(None, 3).unwrap_err();
    assert!(err.to_string().contains("the cycle through `step` has no iteration bound"), "{err}");
    let err = GraphBuilder::new("empty", counter_schema()).build().unwrap_err();
    assert!(err.to_string().contains("nothing starts the graph"));
}

#[tokio::test]
async fn a_router_choosing_an_undeclared_target_fails_the_run() {
    let graph = GraphBuilder::new("r", counter_schema())
        .node("a", inc())
        .node("b", inc())
        .edge(START, "a")
        .route("a", &["b", END], |_| vec![Target::node("a")])
        .edge("b", END)
        .build()
        .unwrap();
    let err = graph.invoke(RunConfig::new("t"), Value::Null).await.unwrap_err();
    assert!(err.message.contains("not among its declared targets"), "{}", err.message);
}

fn flaky(failures: usize, calls: Arc<AtomicUsize>, error: fn() -> NodeError) -> Arc<dyn bridle_runtime::graph::Node> {
    node_fn(move |_, _| {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        async move { if n < failures { Err(error()) } else { Ok(Update::new().set("count", 1)) } }
    })
}

fn single(node: Arc<dyn bridle_runtime::graph::Node>, options: NodeOptions) -> Graph {
    GraphBuilder::new("one", counter_schema())
        .node_with("x", node, options)
        .edge(START, "x")
        .edge("x", END)
        .build()
        .unwrap()
}

fn fast_retry(attempts: u32) -> RetryPolicy {
    RetryPolicy { max_attempts: attempts, initial_backoff: Duration::from_millis(1), ..RetryPolicy::default() }
}

#[tokio::test]
async fn transient_errors_are_retried_with_backoff_and_refusals_never() {
    let calls = Arc::new(AtomicUsize::new(0));
    let transient = || NodeError::transient(Code::LlmUnavailable, "503 from the model");
    let graph = single(flaky(2, calls.clone(), transient), NodeOptions::default().retry(fast_retry(3)));
    let all = events(&graph, RunConfig::new("t"), Value::Null).await;
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let retries: Vec<(u32, bool)> = all
        .iter()
        .filter_map(
            |e| if let Event::NodeError { attempt, retrying, .. } = e { Some((*attempt, *retrying)) } else { None },
        )
        .collect();
    assert_eq!(retries, [(1, true), (2, true)]);
    let refused = Arc::new(AtomicUsize::new(0));
    let policy = || NodeError::rejected(bridle_core::Rejection::new(Code::PolicyDenied, "denied by `p1`"));
    let graph = single(flaky(5, refused.clone(), policy), NodeOptions::default().retry(fast_retry(3)));
    let err = graph.invoke(RunConfig::new("t"), Value::Null).await.unwrap_err();
    assert_eq!((err.code, refused.load(Ordering::SeqCst)), (Code::PolicyDenied, 1));
    let policy = RetryPolicy::default();
    let waits: Vec<Duration> = (1..=6).map(|a| policy.backoff(a, 42)).collect();
    assert!(waits[0] >= Duration::from_millis(100) && waits[0] <= Duration::from_millis(200), "{waits:?}");
    assert!(waits[3] >= Duration::from_millis(800), "grows exponentially: {waits:?}");
    assert!(waits.iter().all(|w| *w <= policy.max_backoff));
    assert_ne!(policy.backoff(2, 1), policy.backoff(2, 2), "jitter differs between tasks");
}

#[tokio::test]
async fn a_slow_node_times_out_and_an_error_handler_turns_failure_into_a_degraded_update() {
    let slow = node_fn(|_, _| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(Update::new())
    });
    let err = single(slow.clone(), NodeOptions::default().timeout(Duration::from_millis(20)))
        .invoke(RunConfig::new("t"), Value::Null)
        .await
        .unwrap_err();
    assert_eq!(err.code, Code::NodeTimeout);
    let degraded = NodeOptions::default()
        .timeout(Duration::from_millis(20))
        .on_error(|e, _| Some(Update::new().set("facts", json!({"degraded": true, "error": e.rejection.code}))));
    let all = events(&single(slow, degraded), RunConfig::new("t"), Value::Null).await;
    let Some(Event::Finished { outcome }) = all.last() else { panic!() };
    assert_eq!(outcome.state["facts"], json!({"degraded": true, "error": "node_timeout"}));
    assert!(all.iter().any(|e| matches!(e, Event::NodeExit { degraded: true, .. })));
}

struct Recorder {
    name: &'static str,
    seen: Arc<std::sync::Mutex<Vec<String>>>,
    fail: bool,
}

impl HookHandler for Recorder {
    fn name(&self) -> &str {
        self.name
    }

    fn handle(&self, hook: &str, _thread: &str, _event: &Event) -> Result<(), bridle_runtime::graph::HookError> {
        self.seen.lock().unwrap().push(format!("{}:{hook}", self.name));
        if self.fail {
            if self.name == "panics" {
                panic!("handler bug");
            }
            return Err("handler refused".into());
        }
        Ok(())
    }
}

#[tokio::test]
async fn hooks_run_by_priority_survive_failing_handlers_and_see_custom_events() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let rec = |name, fail| Arc::new(Recorder { name, seen: seen.clone(), fail });
    let hooks = Hooks::new()
        .on("node_enter", 1, rec("low", false))
        .on("node_enter", 10, rec("high", false))
        .on("node_enter", 5, rec("fails", true))
        .on("node_enter", 5, rec("panics", true))
        .on("analyst_complete", 0, rec("custom", false))
        .on("node_bootstrap", 0, rec("boot", false))
        .on("pipeline_end", 0, rec("end", false));
    let graph = GraphBuilder::new("hooked", counter_schema())
        .node(
            "analyst",
            node_fn(|_, ctx| async move {
                ctx.emit("analyst_complete", json!({"score": 0.8}));
                Ok(Update::new())
            }),
        )
        .edge(START, "analyst")
        .edge("analyst", END)
        .build()
        .unwrap();
    let all = events(&graph, RunConfig::new("t-h").hooks(Arc::new(hooks)), Value::Null).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "boot:node_bootstrap",
            "high:node_enter",
            "fails:node_enter",
            "panics:node_enter",
            "low:node_enter",
            "custom:analyst_complete",
            "end:pipeline_end"
        ]
    );
    let failed: Vec<&str> = all
        .iter()
        .filter_map(|e| if let Event::HookFailed { handler, .. } = e { Some(handler.as_str()) } else { None })
        .collect();
    assert_eq!(failed, ["fails", "panics"]);
    assert!(matches!(all.last(), Some(Event::Finished { outcome }) if outcome.status == ThreadStatus::Done));
}

#[tokio::test]
async fn the_task_graph_observer_draws_the_run_and_removing_it_changes_nothing() {
    let graph = GraphBuilder::new("dag", counter_schema())
        .node("a", inc())
        .node("b", noop())
        .node("c", noop())
        .node("d", inc())
        .edge(START, "a")
        .edge("a", "b")
        .edge("a", "c")
        .edge("b", "d")
        .edge("c", "d")
        .edge("d", END)
        .build()
        .unwrap();
    let observer = Arc::new(TaskGraph::new());
    let hooks = Arc::new(Hooks::new().on_all(0, observer.clone()));
    let with = events(&graph, RunConfig::new("t-dag").hooks(hooks), Value::Null).await;
    let without = events(&graph, RunConfig::new("t-dag"), Value::Null).await;
    let strip = |events: Vec<Event>| -> Vec<Value> {
        events
            .into_iter()
            .map(|e| {
                let mut v = serde_json::to_value(e).unwrap();
                v.as_object_mut().unwrap().remove("duration_us");
                v
            })
            .collect()
    };
    assert_eq!(strip(with), strip(without), "the observer changed the run");
    let progress = observer.progress("t-dag");
    let nodes: Vec<(&str, &str)> = progress.tasks.iter().map(|(id, v)| (id.as_str(), v.node.as_str())).collect();
    assert_eq!(nodes, [("0:0", "a"), ("1:0", "b"), ("1:1", "c"), ("2:0", "d")]);
    assert!(progress.tasks.values().all(|v| v.status == TaskStatus::Done));
    let mut edges = progress.edges.clone();
    edges.sort();
    let expected = [("0:0", "1:0"), ("0:0", "1:1"), ("1:0", "2:0"), ("1:1", "2:0")];
    assert_eq!(edges, expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
}
