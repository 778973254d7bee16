//! Checkpoints, human pauses and resumption: pauses before nodes and inside them, answers by
//! interrupt id, side effects never repeated, finished siblings never re-run, crash recovery,
//! durability modes, cancellation and deadlines, and bad resumes refused.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bridle_core::Code;
use bridle_core::checkpoint::ThreadStatus;
use bridle_core::ports::Checkpointer;
use bridle_runtime::cancel::{CancelState, CancelToken};
use bridle_runtime::checkpoint::MemoryCheckpointer;
use bridle_runtime::gate::CallRequest;
use bridle_runtime::graph::{
    Durability, END, Event, Graph, GraphBuilder, NodeError, RunConfig, START, State, Update, node_fn,
};
use serde_json::{Value, json};

use super::{counter_schema, inc};
use crate::suite::support::{H, run};

fn saved(store: &Arc<MemoryCheckpointer>, thread: &str) -> RunConfig {
    RunConfig::new(thread).checkpointer(store.clone())
}

fn abc_pausing_before_b() -> Graph {
    GraphBuilder::new("abc", counter_schema())
        .node("a", inc())
        .node(
            "b",
            node_fn(|s: State, ctx| async move {
                let answer = ctx.resume_value().cloned().unwrap_or(Value::Null);
                Ok(Update::new().set("count", s.int("count") + 10).set("facts", json!({ "answer": answer })))
            }),
        )
        .node("c", inc())
        .edge(START, "a")
        .edge("a", "b")
        .edge("b", "c")
        .edge("c", END)
        .interrupt_before_with("b", |s| json!({"node": "b", "count": s.int("count")}))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_pause_before_a_node_waits_for_a_human_and_resumes_with_the_answer() {
    let store = Arc::new(MemoryCheckpointer::new());
    let graph = abc_pausing_before_b();
    let paused = graph.invoke(saved(&store, "t-1"), Value::Null).await.unwrap();
    assert_eq!(paused.status, ThreadStatus::Interrupted);
    assert_eq!(paused.state["count"], 1);
    let interrupt = &paused.interrupts[0];
    assert_eq!(interrupt.id, "t-1/1:0/before");
    assert_eq!(interrupt.payload, json!({"node": "b", "count": 1}));
    let stored = store.latest("t-1").await.unwrap().unwrap();
    assert_eq!((stored.status, stored.step), (ThreadStatus::Interrupted, 1));
    let done = graph.resume_invoke(saved(&store, "t-1"), &interrupt.id, json!({"approve": true})).await.unwrap();
    assert_eq!(done.status, ThreadStatus::Done);
    assert_eq!(done.state["count"], 12);
    assert_eq!(done.state["facts"]["answer"], json!({"approve": true}));
}

#[tokio::test]
async fn bad_resumes_are_refused_with_a_clear_code() {
    let store = Arc::new(MemoryCheckpointer::new());
    let graph = abc_pausing_before_b();
    let paused = graph.invoke(saved(&store, "t-2"), Value::Null).await.unwrap();
    let id = paused.interrupts[0].id.clone();
    let err = graph.resume_invoke(saved(&store, "t-2"), "t-2/1:0/7", json!(1)).await.unwrap_err();
    assert_eq!(err.code, Code::UnknownInterrupt);
    let err = graph.resume_invoke(saved(&store, "nope"), &id, json!(1)).await.unwrap_err();
    assert_eq!(err.code, Code::UnknownInterrupt);
    // another graph (same node names, another shape) must not pick up this thread
    let other = GraphBuilder::new("abc", counter_schema())
        .node("a", inc())
        .node("b", inc())
        .node("c", inc())
        .edge(START, "a")
        .edge("a", "b")
        .edge("b", "c")
        .edge("c", END)
        .build()
        .unwrap();
    let err = other.resume_invoke(saved(&store, "t-2"), &id, json!(1)).await.unwrap_err();
    assert_eq!(err.code, Code::StaleCheckpoint);
    graph.resume_invoke(saved(&store, "t-2"), &id, json!(1)).await.unwrap();
    let err = graph.resume_invoke(saved(&store, "t-2"), &id, json!(1)).await.unwrap_err();
    assert_eq!(err.code, Code::StaleCheckpoint, "{err}");
    let err = graph.invoke(saved(&store, "t-2"), Value::Null).await.unwrap_err();
    assert_eq!(err.code, Code::StaleCheckpoint, "a thread id is not reused: {err}");
    let err = graph.resume_invoke(RunConfig::new("t-2"), &id, json!(1)).await.unwrap_err();
    assert_eq!(err.code, Code::StaleCheckpoint, "no checkpointer: {err}");
}

#[tokio::test]
async fn a_node_that_interrupts_gets_the_chosen_candidate_and_never_repeats_its_side_effect() {
    // The node changes a real system through the gate, then asks a human to choose; on resume it
    // runs again from the top with the same idempotency key, and the gate returns the stored
    // result instead of changing anything twice.
    let h = Arc::new(H::checkout());
    let r = run();
    let args = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
    h.approved("a-1", &args, &r).await;
    let keys = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (h2, k2) = (h.clone(), keys.clone());
    let graph = GraphBuilder::new("choose", counter_schema())
        .node(
            "advisor",
            node_fn(move |_, ctx| {
                let (h, keys, args, r) = (h2.clone(), k2.clone(), args.clone(), r.clone());
                async move {
                    let key = ctx.idempotency_key();
                    keys.lock().unwrap().push(key.clone());
                    let me = h.who("requester-1");
                    let call = CallRequest::new("scale_replicas", args).with_key(&key);
                    let out = h.gate.call(&me, &r, &call).await.map_err(|e| NodeError::fatal(e.to_string()))?;
                    if let Some(code) = out.code() {
                        return Err(NodeError::fatal(format!("gate refused: {code}")));
                    }
                    let choice = ctx.interrupt(json!({"candidates": ["stuck gas valve", "vacuum pump wear"]}))?;
                    Ok(Update::new().set("facts", json!({ "chosen": choice["choose"] })))
                }
            }),
        )
        .edge(START, "advisor")
        .edge("advisor", END)
        .build()
        .unwrap();
    let store = Arc::new(MemoryCheckpointer::new());
    let paused = graph.invoke(saved(&store, "t-3"), Value::Null).await.unwrap();
    assert_eq!(paused.status, ThreadStatus::Interrupted);
    assert_eq!(paused.interrupts[0].id, "t-3/0:0/0");
    assert_eq!(paused.interrupts[0].payload["candidates"][0], "stuck gas valve");
    assert_eq!(h.adapter.changes_applied(), 1);
    let done = graph.resume_invoke(saved(&store, "t-3"), "t-3/0:0/0", json!({"choose": 0})).await.unwrap();
    assert_eq!(done.state["facts"]["chosen"], 0);
    assert_eq!(h.adapter.changes_applied(), 1, "resuming repeated the change");
    let keys = keys.lock().unwrap().clone();
    assert_eq!(keys, ["t-3/0:0", "t-3/0:0"]);
}

#[tokio::test]
async fn after_a_failed_branch_only_that_branch_runs_again() {
    let runs: Vec<Arc<AtomicUsize>> = (0..3).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    let branch = |i: usize, fail_first: bool| {
        let count = runs[i].clone();
        node_fn(move |_, _| {
            let n = count.fetch_add(1, Ordering::SeqCst);
            async move {
                if fail_first && n == 0 {
                    return Err(NodeError::fatal("the model endpoint went away"));
                }
                Ok(Update::new().set("log", vec![i]))
            }
        })
    };
    let graph = GraphBuilder::new("siblings", counter_schema())
        .node("x", branch(0, false))
        .node("y", branch(1, true))
        .node("z", branch(2, false))
        .node("after", inc())
        .edge(START, "x")
        .edge(START, "y")
        .edge(START, "z")
        .join(&["x", "y", "z"], "after")
        .edge("after", END)
        .build()
        .unwrap();
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        for r in &runs {
            r.store(0, Ordering::SeqCst);
        }
        let store = Arc::new(MemoryCheckpointer::new());
        let thread = format!("t-{durability:?}");
        let err = graph.invoke(saved(&store, &thread).durability(durability), Value::Null).await.unwrap_err();
        assert_eq!(err.code, Code::NodeFailed);
        assert!(err.message.starts_with("node `y`"), "{}", err.message);
        assert_eq!(store.latest(&thread).await.unwrap().unwrap().status, ThreadStatus::Failed);
        let done = graph.continue_invoke(saved(&store, &thread).durability(durability)).await.unwrap();
        assert_eq!(done.state["count"], 1);
        let counts: Vec<usize> = runs.iter().map(|r| r.load(Ordering::SeqCst)).collect();
        assert_eq!(counts, [1, 2, 1], "{durability:?}");
        assert_eq!(done.state["log"], json!([0, 1, 2]), "merged in task order");
    }
}

#[tokio::test]
async fn a_run_killed_mid_step_continues_from_its_last_checkpoint() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let first_runs = Arc::new(AtomicUsize::new(0));
    let build = |gate: Arc<tokio::sync::Semaphore>, first_runs: Arc<AtomicUsize>| {
        GraphBuilder::new("crash", counter_schema())
            .node(
                "first",
                node_fn(move |s: State, _| {
                    first_runs.fetch_add(1, Ordering::SeqCst);
                    async move { Ok(Update::new().set("count", s.int("count") + 1)) }
                }),
            )
            .node(
                "second",
                node_fn(move |s: State, _| {
                    let gate = gate.clone();
                    async move {
                        let _permit = gate.acquire().await.map_err(|e| NodeError::fatal(e.to_string()))?;
                        Ok(Update::new().set("count", s.int("count") + 100))
                    }
                }),
            )
            .edge(START, "first")
            .edge("first", "second")
            .edge("second", END)
            .build()
            .unwrap()
    };
    let store = Arc::new(MemoryCheckpointer::new());
    let graph = build(gate.clone(), first_runs.clone());
    let mut stream = graph.stream(saved(&store, "t-crash"), Value::Null);
    while let Some(e) = stream.next().await {
        if matches!(e, Event::NodeEnter { ref node, .. } if node == "second") {
            stream.abort();
            break;
        }
    }
    let cp = store.latest("t-crash").await.unwrap().unwrap();
    assert_eq!((cp.status, cp.step, cp.state["count"].clone()), (ThreadStatus::Running, 1, json!(1)));
    // a new process: a new graph value over the same checkpoints
    gate.add_permits(1);
    let again = build(gate, first_runs.clone());
    let done = again.continue_invoke(saved(&store, "t-crash")).await.unwrap();
    assert_eq!(done.state["count"], 101);
    assert_eq!(first_runs.load(Ordering::SeqCst), 1, "the finished step ran again");
}

#[tokio::test]
async fn durability_modes_write_per_step_or_only_at_the_end() {
    let graph = super::chain(6);
    for (durability, expected) in
        [(Durability::Sync, vec![4, 5, 6]), (Durability::Async, vec![4, 5, 6]), (Durability::Exit, vec![6])]
    {
        let store = Arc::new(MemoryCheckpointer::new());
        let out = graph.invoke(saved(&store, "t").durability(durability), Value::Null).await.unwrap();
        assert_eq!(out.state["count"], 6);
        assert_eq!(store.steps("t").await.unwrap(), expected, "{durability:?} (3 kept)");
        let last = store.latest("t").await.unwrap().unwrap();
        assert_eq!((last.status, last.state["count"].clone()), (ThreadStatus::Done, json!(6)));
    }
}

fn sleeper() -> Graph {
    GraphBuilder::new("sleepy", counter_schema())
        .node(
            "wait",
            node_fn(|_, _| async {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(Update::new())
            }),
        )
        .edge(START, "wait")
        .edge("wait", END)
        .build()
        .unwrap()
}

#[tokio::test]
async fn cancellation_goes_from_requested_to_cancelled_and_deadlines_stop_runs() {
    let store = Arc::new(MemoryCheckpointer::new());
    let cancel = CancelToken::new();
    let mut stream = sleeper().stream(saved(&store, "t-c").cancel(cancel.clone()), Value::Null);
    while let Some(e) = stream.next().await {
        if matches!(e, Event::NodeEnter { .. }) {
            break;
        }
    }
    cancel.cancel();
    assert!(matches!(cancel.state(), CancelState::CancelRequested | CancelState::Cancelled));
    let outcome = stream.outcome().await;
    assert_eq!(outcome.status, ThreadStatus::Cancelled);
    assert_eq!(outcome.error.unwrap().code, Code::Cancelled);
    assert_eq!(cancel.state(), CancelState::Cancelled);
    assert_eq!(store.latest("t-c").await.unwrap().unwrap().status, ThreadStatus::Cancelled);
    let err =
        sleeper().invoke(RunConfig::new("t-d").deadline(Duration::from_millis(30)), Value::Null).await.unwrap_err();
    assert_eq!(err.code, Code::DeadlineExceeded);
}

struct Seen(std::sync::Mutex<Vec<String>>);

impl bridle_runtime::graph::HookHandler for Seen {
    fn name(&self) -> &str {
        "seen"
    }

    fn handle(&self, hook: &str, _thread: &str, _event: &Event) -> Result<(), bridle_runtime::graph::HookError> {
        self.0.lock().unwrap().push(hook.to_owned());
        Ok(())
    }
}

#[tokio::test]
async fn a_change_waits_for_approval_inside_a_run_and_executes_once_after_it() {
    // The node asks the gate; the gate wants an approval; the node pauses with the approval id;
    // an operator grants it; the resumed node repeats the call with the same key and the change
    // runs exactly once, also across a second resume of the finished step.
    let h = Arc::new(H::checkout());
    let r = run();
    let args = json!({"service": "checkout", "replicas": 4, "resource_version": 7});
    let h2 = h.clone();
    let graph = GraphBuilder::new("approve", counter_schema())
        .node(
            "scale",
            node_fn(move |_, ctx| {
                let (h, args, r) = (h2.clone(), args.clone(), r.clone());
                async move {
                    let me = h.who("requester-1");
                    let call = CallRequest::new("scale_replicas", args);
                    let out = bridle_runtime::graph::tool::call_tool(&h.gate, &ctx, &me, &r, call).await?;
                    if out.code() == Some(Code::ApprovalRequired) {
                        let answer = ctx.interrupt(json!({"approval_id": out.approval_id}))?;
                        return Ok(Update::new().set("facts", json!({"answer": answer})));
                    }
                    Ok(Update::new().set("facts", json!({"replicas": out.result().map(|v| v["replicas"].clone())})))
                }
            }),
        )
        .edge(START, "scale")
        .edge("scale", END)
        .build()
        .unwrap();
    let store = Arc::new(MemoryCheckpointer::new());
    let seen = Arc::new(Seen(std::sync::Mutex::new(Vec::new())));
    let hooks = Arc::new(bridle_runtime::graph::Hooks::new().on_all(0, seen.clone()));
    let paused = graph.invoke(saved(&store, "t-ap").hooks(hooks.clone()), Value::Null).await.unwrap();
    let approval = paused.interrupts[0].payload["approval_id"].as_str().unwrap().to_owned();
    assert!(seen.0.lock().unwrap().iter().any(|h| h == "approval_requested"));
    assert_eq!(h.adapter.changes_applied(), 0);
    h.desk.grant(&h.who("operator-2"), &approval).await.unwrap();
    // The node runs again from the top: its call now finds the granted approval.
    let done = graph
        .resume_invoke(saved(&store, "t-ap").hooks(hooks), &paused.interrupts[0].id, json!("approved"))
        .await
        .unwrap();
    assert_eq!(done.state["facts"]["replicas"], 4);
    assert_eq!(h.adapter.changes_applied(), 1);
    let hooks_seen = seen.0.lock().unwrap().clone();
    assert_eq!(hooks_seen.iter().filter(|h| *h == "tool_call_decided").count(), 2);
}

#[tokio::test]
async fn a_run_killed_mid_step_continues_from_its_sqlite_file_in_a_new_process() {
    use bridle_runtime::checkpoint::{SqliteCheckpointer, Strictness};
    let dir = tempfile::TempDir::new().unwrap();
    let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let calls: Vec<Arc<AtomicUsize>> = (0..4).map(|_| Arc::new(AtomicUsize::new(0))).collect();
    let block = Arc::new(tokio::sync::Semaphore::new(0));
    let build = |calls: Vec<Arc<AtomicUsize>>, block: Arc<tokio::sync::Semaphore>| {
        let node = |i: usize, waits: bool| {
            let (count, block) = (calls[i].clone(), block.clone());
            node_fn(move |s: State, _| {
                count.fetch_add(1, Ordering::SeqCst);
                let block = block.clone();
                async move {
                    if waits {
                        let _permit = block.acquire().await.map_err(|e| NodeError::fatal(e.to_string()))?;
                    }
                    Ok(Update::new().set("log", vec![i]).set("facts", json!({ format!("n{i}"): s.int("count") })))
                }
            })
        };
        GraphBuilder::new("crash-sqlite", counter_schema())
            .node("a", node(0, false))
            .node("b", node(1, false))
            .node("c", node(2, true))
            .node("d", node(3, false))
            .edge(START, "a")
            .edge("a", "b")
            .edge("a", "c")
            .join(&["b", "c"], "d")
            .edge("d", END)
            .build()
            .unwrap()
    };
    {
        let store: Arc<dyn Checkpointer> = Arc::new(SqliteCheckpointer::open(&url, Strictness::Normal).await.unwrap());
        let graph = build(calls.clone(), block.clone());
        let mut stream = graph.stream(RunConfig::new("t-k").checkpointer(store), Value::Null);
        // b finishes (its writes are stored) while c hangs: then the process dies.
        while let Some(e) = stream.next().await {
            if matches!(e, Event::NodeExit { ref node, .. } if node == "b") {
                stream.abort();
                break;
            }
        }
    }
    // A new process: a new connection to the same file, a new graph value.
    block.add_permits(10);
    let store: Arc<dyn Checkpointer> = Arc::new(SqliteCheckpointer::open(&url, Strictness::Normal).await.unwrap());
    let cp = store.latest("t-k").await.unwrap().unwrap();
    assert_eq!((cp.status, cp.step), (ThreadStatus::Running, 1));
    let graph = build(calls.clone(), block);
    let done = graph.continue_invoke(RunConfig::new("t-k").checkpointer(store)).await.unwrap();
    assert_eq!(done.state["log"], json!([0, 1, 2, 3]));
    let counts: Vec<usize> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    assert_eq!(counts, [1, 1, 2, 1], "only the unfinished branch ran again");
}

#[tokio::test]
async fn pauses_resume_through_postgres_checkpoints() {
    let Some(url) = crate::suite::support::postgres_url() else { return };
    let store: Arc<dyn Checkpointer> = Arc::new(
        bridle_runtime::checkpoint::PostgresCheckpointer::open(&url).await.expect("PostgreSQL must be reachable"),
    );
    let thread = format!("pg-{}", uuid::Uuid::new_v4());
    let graph = abc_pausing_before_b();
    let paused = graph.invoke(RunConfig::new(&thread).checkpointer(store.clone()), Value::Null).await.unwrap();
    assert_eq!(paused.status, ThreadStatus::Interrupted);
    let done = graph
        .resume_invoke(RunConfig::new(&thread).checkpointer(store.clone()), &paused.interrupts[0].id, json!("ok"))
        .await
        .unwrap();
    assert_eq!(done.state["count"], 12);
    assert_eq!(store.latest(&thread).await.unwrap().unwrap().status, ThreadStatus::Done);
    store.delete_thread(&thread).await.unwrap();
}

#[tokio::test]
async fn a_retrieved_document_taints_the_run_so_a_later_change_needs_approval() {
    use bridle_runtime::graph::tool::{call_tool, took_in_untrusted};
    let h = Arc::new(H::fab());
    let h2 = h.clone();
    let graph = GraphBuilder::new("rag", counter_schema())
        .node(
            "retrieve_then_act",
            node_fn(move |_, ctx| {
                let h = h2.clone();
                async move {
                    let (me, r) = (h.who("engineer"), run());
                    // +5 °C is an automatic change on its own
                    let call = || CallRequest {
                        dry_run: true,
                        ..CallRequest::new("set_temperature", json!({"equipment": "etch-01", "temp_celsius": 385}))
                    };
                    let before = call_tool(&h.gate, &ctx, &me, &r, call()).await?;
                    took_in_untrusted(&h.gate, &ctx, &me, &r, "runbook page `etch-drift`").await?;
                    let after = call_tool(&h.gate, &ctx, &me, &r, call()).await?;
                    Ok(Update::new().set("facts", json!({"before": before.level, "after": after.level})))
                }
            }),
        )
        .edge(START, "retrieve_then_act")
        .edge("retrieve_then_act", END)
        .build()
        .unwrap();
    let out = graph.invoke(RunConfig::new("t-rag"), Value::Null).await.unwrap();
    assert_eq!(out.state["facts"]["before"], "auto");
    assert_eq!(out.state["facts"]["after"], "approval", "taint escalates the change");
    let reason = h.gate.stores().run_flags.run_taint("fab-1", "run-101").await.unwrap().unwrap();
    assert!(reason.contains("runbook page `etch-drift`") && reason.contains("retrieve_then_act"), "{reason}");
}

/// The child process of `a_killed_process_continues_its_run_from_the_sqlite_file`: runs
/// a → (b ∥ c) → d on the SQLite file named by `BRIDLE_CRASH_DB`, appending each node's name to
/// `BRIDLE_CRASH_LOG`; with `BRIDLE_CRASH=1`, node c aborts the process (no destructors, no
/// flush) after b has finished and stored its writes; without it, the thread continues from its
/// last checkpoint. Prints the final log.
#[test]
#[ignore = "a child process of a_killed_process_continues_its_run_from_the_sqlite_file"]
fn crash_child() {
    use bridle_runtime::checkpoint::{SqliteCheckpointer, Strictness};
    let var = |k: &str| std::env::var(k).unwrap();
    let (db, log, crash) = (var("BRIDLE_CRASH_DB"), var("BRIDLE_CRASH_LOG"), std::env::var("BRIDLE_CRASH").is_ok());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let node = |name: &'static str| {
            let log = log.clone();
            node_fn(move |_, _| {
                use std::io::Write;
                let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&log).unwrap();
                writeln!(f, "{name}").unwrap();
                async move {
                    if name == "c" && crash {
                        // b runs beside c and stores its writes first.
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        std::process::abort();
                    }
                    Ok(Update::new().set("log", vec![name]))
                }
            })
        };
        let graph = GraphBuilder::new("crash", counter_schema())
            .node("a", node("a"))
            .node("b", node("b"))
            .node("c", node("c"))
            .node("d", node("d"))
            .edge(START, "a")
            .edge("a", "b")
            .edge("a", "c")
            .join(&["b", "c"], "d")
            .edge("d", END)
            .build()
            .unwrap();
        let store: Arc<dyn Checkpointer> = Arc::new(SqliteCheckpointer::open(&db, Strictness::Normal).await.unwrap());
        let config = RunConfig::new("t-kill").checkpointer(store.clone());
        let outcome = if store.latest("t-kill").await.unwrap().is_some() {
            graph.continue_invoke(config).await.unwrap()
        } else {
            graph.invoke(config, Value::Null).await.unwrap()
        };
        println!("FINAL {}", outcome.state["log"]);
    });
}

#[test]
fn a_killed_process_continues_its_run_from_the_sqlite_file() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bridle.db").display());
    let log = dir.path().join("ran.log");
    // This test binary again, running only the child above.
    let run = |crash: bool| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args(["--ignored", "--exact", "suite::graph::pauses::crash_child", "--nocapture", "--test-threads=1"])
            .env("BRIDLE_CRASH_DB", &db)
            .env("BRIDLE_CRASH_LOG", &log);
        if crash {
            cmd.env("BRIDLE_CRASH", "1");
        }
        cmd.output().unwrap()
    };
    let killed = run(true);
    assert!(!killed.status.success(), "the first process must die in node c");
    let resumed = run(false);
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(resumed.status.success(), "{stdout}{}", String::from_utf8_lossy(&resumed.stderr));
    assert!(stdout.contains(r#"FINAL ["a","b","c","d"]"#), "{stdout}");
    let ran: Vec<String> = std::fs::read_to_string(&log).unwrap().lines().map(str::to_owned).collect();
    let count = |n: &str| ran.iter().filter(|r| *r == n).count();
    assert_eq!((count("a"), count("b"), count("c"), count("d")), (1, 1, 2, 1), "only c ran again: {ran:?}");
}
