//! The checkpointer contract: each behaviour of the port written once and run against every
//! backend (`memory`, an SQLite file at `Normal` and at `Strict`, `sqlite::memory:`, and
//! PostgreSQL when `BRIDLE_TEST_POSTGRES_URL` is set), plus what only a database can show
//! (reopening, corrupt rows, concurrent openers).
//!
//! Thread ids are fresh UUIDs, so tests share one PostgreSQL database safely, in parallel and
//! across runs. Database-only properties live in `checkpoint_contract/databases.rs`.

mod databases;

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::ensure;
use bridle_core::checkpoint::{Checkpoint, InterruptRecord, TaskSpec, TaskWrites, ThreadQuery, ThreadStatus};
use bridle_core::ports::Checkpointer;
use bridle_runtime::checkpoint::{Strictness, open_checkpointer};
use serde_json::json;
use tempfile::TempDir;

use super::support::postgres_url;

/// A backend under test; keeps its temporary directory alive.
struct Backend {
    cp: Arc<dyn Checkpointer>,
    _dir: Option<TempDir>,
}

async fn memory() -> anyhow::Result<Option<Backend>> {
    Ok(Some(Backend { cp: open_checkpointer("memory", Strictness::Normal).await?, _dir: None }))
}

/// An SQLite file in a directory that does not exist yet (the checkpointer creates it).
async fn sqlite_file(strictness: Strictness) -> anyhow::Result<Option<Backend>> {
    let dir = TempDir::new()?;
    let url = format!("sqlite://{}", dir.path().join("nested/bridle.db").display());
    Ok(Some(Backend { cp: open_checkpointer(&url, strictness).await?, _dir: Some(dir) }))
}

async fn sqlite_file_normal() -> anyhow::Result<Option<Backend>> {
    sqlite_file(Strictness::Normal).await
}

async fn sqlite_file_strict() -> anyhow::Result<Option<Backend>> {
    sqlite_file(Strictness::Strict).await
}

async fn sqlite_memory() -> anyhow::Result<Option<Backend>> {
    Ok(Some(Backend { cp: open_checkpointer("sqlite::memory:", Strictness::Normal).await?, _dir: None }))
}

/// `None` (skip) when no PostgreSQL URL is configured; an unreachable server is an error.
async fn postgres() -> anyhow::Result<Option<Backend>> {
    let Some(url) = postgres_url() else { return Ok(None) };
    Ok(Some(Backend { cp: open_checkpointer(&url, Strictness::Normal).await?, _dir: None }))
}

/// Runs each named `async fn(Arc<dyn Checkpointer>) -> anyhow::Result<()>` once per backend:
/// `<name>::memory`, `::sqlite_file_normal`, `::sqlite_file_strict`, `::sqlite_memory`,
/// `::postgres`.
macro_rules! contract {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            contract!(@backends $name: memory, sqlite_file_normal, sqlite_file_strict, sqlite_memory, postgres);
        }
    )*};
    (@backends $name:ident: $($backend:ident),*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $backend() -> anyhow::Result<()> {
            match super::$backend().await? {
                Some(b) => super::$name(b.cp.clone()).await,
                None => Ok(()),
            }
        }
    )*};
}

contract!(
    unknown_thread_is_empty,
    put_then_latest_round_trips_everything,
    put_at_the_same_step_replaces,
    retention_keeps_the_newest_and_drops_older_writes,
    put_writes_replaces_and_keeps_storage_order,
    threads_are_isolated,
    delete_thread_removes_everything,
    concurrent_put_writes_all_land,
    threads_lists_a_prefix_by_id_descending_with_the_newest_status,
    run_events_keep_the_first_and_the_newest,
    run_events_of_idle_runs_are_pruned,
);

// ---- fixtures ----

fn thread() -> String {
    format!("thread-{}", uuid::Uuid::new_v4())
}

/// A checkpoint using every field: interrupts, resumes, a fan-out input, an error.
fn checkpoint(thread_id: &str, step: u64) -> Checkpoint {
    Checkpoint {
        thread_id: thread_id.to_owned(),
        step,
        graph: "triage@3f2a9c".into(),
        status: ThreadStatus::Interrupted,
        state: json!({"zeta": step, "alpha": {"nested": [1, 2.5, null, "é ✓"]}, "ok": true}),
        tasks: vec![
            TaskSpec { id: format!("{step}:0"), node: "plan".into(), input: None },
            TaskSpec { id: format!("{step}:1"), node: "scale".into(), input: Some(json!({"replicas": 4})) },
        ],
        visits: BTreeMap::from([("plan".to_owned(), 2), ("scale".to_owned(), u32::try_from(step).unwrap_or(0))]),
        barriers: BTreeMap::from([("join".to_owned(), vec!["plan".to_owned()])]),
        interrupts: vec![InterruptRecord {
            id: format!("{thread_id}/{step}:1/0"),
            task_id: format!("{step}:1"),
            node: "scale".into(),
            payload: json!({"question": "scale checkout to 4?"}),
        }],
        resumes: BTreeMap::from([(format!("{thread_id}/0:1/0"), json!({"approved": true}))]),
        error: Some(json!({"code": "tool_failed", "message": "upstream timeout"})),
    }
}

fn writes(task_id: &str, value: u64) -> TaskWrites {
    TaskWrites { task_id: task_id.to_owned(), node: "scale".into(), update: json!({"replicas": value}) }
}

fn task_ids(w: &[TaskWrites]) -> Vec<&str> {
    w.iter().map(|w| w.task_id.as_str()).collect()
}

// ---- the contract ----

async fn unknown_thread_is_empty(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let t = thread();
    ensure!(cp.latest(&t).await?.is_none());
    ensure!(cp.steps(&t).await?.is_empty());
    ensure!(cp.writes(&t, 0).await?.is_empty());
    cp.delete_thread(&t).await?;
    Ok(())
}

async fn put_then_latest_round_trips_everything(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let t = thread();
    let c = checkpoint(&t, 7);
    cp.put(&c, 5).await?;
    let back = cp.latest(&t).await?;
    assert_eq!(back.as_ref(), Some(&c));
    // Field order of the state survives too (serde_json keeps insertion order in this build).
    let text = serde_json::to_string(&back.map(|b| b.state))?;
    assert_eq!(text, serde_json::to_string(&Some(c.state))?);
    assert_eq!(cp.steps(&t).await?, [7]);
    Ok(())
}

async fn put_at_the_same_step_replaces(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let t = thread();
    cp.put(&checkpoint(&t, 3), 5).await?;
    let mut done = checkpoint(&t, 3);
    done.status = ThreadStatus::Done;
    done.state = json!({"final": true});
    done.interrupts.clear();
    cp.put(&done, 5).await?;
    assert_eq!(cp.latest(&t).await?, Some(done));
    assert_eq!(cp.steps(&t).await?, [3]);
    Ok(())
}

async fn retention_keeps_the_newest_and_drops_older_writes(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let t = thread();
    for step in 0..6 {
        cp.put_writes(&t, step, &writes(&format!("{step}:0"), step)).await?;
        cp.put(&checkpoint(&t, step), 3).await?;
        let expected: Vec<u64> = (step.saturating_sub(2)..=step).collect();
        assert_eq!(cp.steps(&t).await?, expected, "after step {step}");
        // Writes of the step being checkpointed stay (they belong to its running tasks).
        assert_eq!(task_ids(&cp.writes(&t, step).await?), [format!("{step}:0")]);
    }
    for step in 0..5 {
        ensure!(cp.writes(&t, step).await?.is_empty(), "writes of step {step} were kept");
    }
    // A smaller `keep` later trims harder; 0 counts as 1.
    cp.put_writes(&t, 6, &writes("6:0", 6)).await?;
    cp.put(&checkpoint(&t, 6), 1).await?;
    assert_eq!(cp.steps(&t).await?, [6]);
    ensure!(cp.writes(&t, 5).await?.is_empty());
    assert_eq!(task_ids(&cp.writes(&t, 6).await?), ["6:0"]);
    cp.put(&checkpoint(&t, 7), 0).await?;
    assert_eq!(cp.steps(&t).await?, [7]);
    ensure!(cp.writes(&t, 6).await?.is_empty());
    assert_eq!(cp.latest(&t).await?, Some(checkpoint(&t, 7)));
    Ok(())
}

async fn put_writes_replaces_and_keeps_storage_order(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let t = thread();
    cp.put(&checkpoint(&t, 2), 5).await?;
    for id in ["2:2", "2:0", "2:1"] {
        cp.put_writes(&t, 2, &writes(id, 1)).await?;
    }
    assert_eq!(task_ids(&cp.writes(&t, 2).await?), ["2:2", "2:0", "2:1"]);
    // Replacing moves the task's writes to the end, with the new value.
    cp.put_writes(&t, 2, &writes("2:2", 9)).await?;
    let stored = cp.writes(&t, 2).await?;
    assert_eq!(stored, [writes("2:0", 1), writes("2:1", 1), writes("2:2", 9)]);
    // Other steps have their own lists.
    cp.put_writes(&t, 3, &writes("3:0", 1)).await?;
    assert_eq!(cp.writes(&t, 2).await?.len(), 3);
    assert_eq!(task_ids(&cp.writes(&t, 3).await?), ["3:0"]);
    ensure!(cp.writes(&t, 1).await?.is_empty());
    Ok(())
}

async fn threads_are_isolated(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let (a, b) = (thread(), thread());
    cp.put(&checkpoint(&b, 0), 1).await?;
    cp.put_writes(&b, 0, &writes("0:0", 1)).await?;
    cp.put_writes(&a, 0, &writes("0:1", 2)).await?;
    for step in 0..4 {
        cp.put(&checkpoint(&a, step), 1).await?;
    }
    // Retention and writes of `a` never touch `b`.
    assert_eq!(cp.steps(&a).await?, [3]);
    assert_eq!(cp.steps(&b).await?, [0]);
    assert_eq!(cp.writes(&b, 0).await?, [writes("0:0", 1)]);
    ensure!(cp.writes(&a, 0).await?.is_empty());
    assert_eq!(cp.latest(&b).await?, Some(checkpoint(&b, 0)));
    cp.delete_thread(&a).await?;
    assert_eq!(cp.latest(&b).await?, Some(checkpoint(&b, 0)));
    assert_eq!(cp.writes(&b, 0).await?.len(), 1);
    Ok(())
}

async fn delete_thread_removes_everything(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let t = thread();
    cp.put(&checkpoint(&t, 0), 3).await?;
    cp.put(&checkpoint(&t, 1), 3).await?;
    cp.put_writes(&t, 1, &writes("1:0", 1)).await?;
    cp.put_writes(&t, 2, &writes("2:0", 1)).await?;
    cp.delete_thread(&t).await?;
    ensure!(cp.latest(&t).await?.is_none());
    ensure!(cp.steps(&t).await?.is_empty());
    ensure!(cp.writes(&t, 1).await?.is_empty());
    ensure!(cp.writes(&t, 2).await?.is_empty());
    // The thread can start again.
    cp.put(&checkpoint(&t, 0), 3).await?;
    assert_eq!(cp.steps(&t).await?, [0]);
    Ok(())
}

/// The parallel tasks of a step store their writes at once; none is lost.
async fn concurrent_put_writes_all_land(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let t = thread();
    cp.put(&checkpoint(&t, 4), 2).await?;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let (cp, t) = (cp.clone(), t.clone());
        tasks.spawn(async move { cp.put_writes(&t, 4, &writes(&format!("4:{i}"), i)).await });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let mut ids: Vec<String> = cp.writes(&t, 4).await?.into_iter().map(|w| w.task_id).collect();
    ids.sort();
    assert_eq!(ids, (0..8).map(|i| format!("4:{i}")).collect::<Vec<_>>());
    Ok(())
}

/// A tenant's listing: only ids under the prefix (taken literally, `%` and `_` included), the
/// newest checkpoint's status and step, byte order descending, pages with `before` and `limit`.
async fn threads_lists_a_prefix_by_id_descending_with_the_newest_status(
    cp: Arc<dyn Checkpointer>,
) -> anyhow::Result<()> {
    let prefix = format!("t_{}%/", uuid::Uuid::new_v4().simple());
    let id = |name: &str| format!("{prefix}{name}");
    let with = |thread: &str, step: u64, status: ThreadStatus| {
        let mut c = checkpoint(thread, step);
        c.status = status;
        c
    };
    // `b`: interrupted at step 0, done at step 1 (two checkpoints kept).
    cp.put(&with(&id("b"), 0, ThreadStatus::Interrupted), 5).await?;
    cp.put(&with(&id("b"), 1, ThreadStatus::Done), 5).await?;
    cp.put(&with(&id("a"), 2, ThreadStatus::Interrupted), 5).await?;
    cp.put(&with(&id("C"), 0, ThreadStatus::Running), 5).await?;
    // Only task writes: not listed.
    cp.put_writes(&id("d"), 0, &writes("0:0", 1)).await?;
    // Outside the prefix: a LIKE would let these through.
    let outside = prefix.replace('_', "x").replace('%', "y");
    cp.put(&with(&format!("{outside}a"), 0, ThreadStatus::Done), 5).await?;
    cp.put(&with(prefix.trim_end_matches('/'), 0, ThreadStatus::Done), 5).await?;

    let query = |before: Option<String>, status: Option<ThreadStatus>, limit: u32| ThreadQuery {
        prefix: prefix.clone(),
        before,
        status,
        limit,
    };
    let all = cp.threads(&query(None, None, 10)).await?;
    let ids: Vec<&str> = all.iter().map(|t| t.thread_id.as_str()).collect();
    // Byte order: `C` (0x43) sorts before `a` and `b`.
    assert_eq!(ids, [id("b"), id("a"), id("C")]);
    let b = &all[0];
    assert_eq!((b.status, b.step, b.graph.as_str()), (ThreadStatus::Done, 1, "triage@3f2a9c"));

    let page = cp.threads(&query(None, None, 2)).await?;
    assert_eq!(page.iter().map(|t| t.thread_id.clone()).collect::<Vec<_>>(), [id("b"), id("a")]);
    let rest = cp.threads(&query(Some(id("a")), None, 2)).await?;
    assert_eq!(rest.iter().map(|t| t.thread_id.clone()).collect::<Vec<_>>(), [id("C")]);
    ensure!(cp.threads(&query(Some(id("C")), None, 2)).await?.is_empty());

    // The status is the newest checkpoint's: `b` is no longer interrupted.
    let interrupted = cp.threads(&query(None, Some(ThreadStatus::Interrupted), 10)).await?;
    assert_eq!(interrupted.iter().map(|t| t.thread_id.clone()).collect::<Vec<_>>(), [id("a")]);
    let done = cp.threads(&query(None, Some(ThreadStatus::Done), 10)).await?;
    assert_eq!(done.iter().map(|t| t.thread_id.clone()).collect::<Vec<_>>(), [id("b")]);

    cp.delete_thread(&id("b")).await?;
    let left = cp.threads(&query(None, None, 10)).await?;
    assert_eq!(left.iter().map(|t| t.thread_id.clone()).collect::<Vec<_>>(), [id("a"), id("C")]);
    Ok(())
}

// ---- run histories ----

/// A time well after the prune test's (so its prune never touches these).
const RECENT_MS: i64 = 1_700_000_000_000;

async fn run_events_keep_the_first_and_the_newest(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let (t, other) = (thread(), thread());
    ensure!(cp.run_events(&t).await?.is_empty() && cp.run_event_span(&t).await?.is_none());
    cp.append_run_event(&t, RECENT_MS, &json!({"event": "started", "by": "ops-1"}), 4).await?;
    let span = cp.run_event_span(&t).await?.ok_or_else(|| anyhow::anyhow!("no span"))?;
    ensure!(span.0 == span.1 && span.0.seq == 1, "{span:?}");
    for n in 2..=10_i64 {
        cp.append_run_event(&t, RECENT_MS + n, &json!({"event": "node_exit", "n": n}), 4).await?;
    }
    cp.append_run_event(&other, RECENT_MS, &json!({"event": "started"}), 4).await?;
    let kept = cp.run_events(&t).await?;
    let seqs: Vec<u64> = kept.iter().map(|e| e.seq).collect();
    // The bound: the first event (who started it) and the newest three.
    ensure!(seqs == [1, 8, 9, 10], "{seqs:?}");
    ensure!(kept.first().map(|e| e.body["by"].clone()) == Some(json!("ops-1")));
    ensure!(kept.last().map(|e| (e.at_ms, e.body["n"].clone())) == Some((RECENT_MS + 10, json!(10))));
    let (first, last) = cp.run_event_span(&t).await?.ok_or_else(|| anyhow::anyhow!("no span"))?;
    ensure!(first.seq == 1 && last.seq == 10, "{first:?} {last:?}");
    ensure!(cp.run_events(&other).await?.len() == 1, "another run's history is its own");
    cp.delete_thread(&t).await?;
    ensure!(cp.run_events(&t).await?.is_empty() && cp.run_events(&other).await?.len() == 1);
    Ok(())
}

async fn run_events_of_idle_runs_are_pruned(cp: Arc<dyn Checkpointer>) -> anyhow::Result<()> {
    let (idle, busy) = (thread(), thread());
    cp.append_run_event(&idle, 1_000, &json!({"event": "started"}), 10).await?;
    cp.append_run_event(&idle, 1_500, &json!({"event": "finished"}), 10).await?;
    cp.append_run_event(&busy, 1_000, &json!({"event": "started"}), 10).await?;
    cp.append_run_event(&busy, RECENT_MS, &json!({"event": "node_enter"}), 10).await?;
    let gone = cp.prune_run_events(2_000).await?;
    ensure!(gone >= 2, "{gone} events pruned");
    ensure!(cp.run_events(&idle).await?.is_empty(), "an idle run's history goes whole");
    // A run with a recent event keeps all of it, its old first event included.
    ensure!(cp.run_events(&busy).await?.len() == 2);
    Ok(())
}
