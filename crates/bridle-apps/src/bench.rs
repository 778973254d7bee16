//! `bridle bench runtime`: the graph runtime measured on the shapes of the LangGraph anchor
//! (trivial nodes, a fresh thread per run, after a warm-up), plus the disk's own commit cost.
//!
//! Each sample is the mean over a batch of runs; the report gives every sample and the median.
//! Keys and units are fixed (they are compared with LangGraph's figures in BENCHMARKS.md).
//! `decisions.rs` is `bridle bench decisions`: durable audited decisions/s on a store.

pub mod decisions;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use bridle_core::Rejection;
use bridle_core::ports::{Checkpointer, StoreError};
use bridle_runtime::checkpoint::{MemoryCheckpointer, SqliteCheckpointer, Strictness};
use bridle_runtime::graph::{
    END, Graph, GraphBuilder, Kind, Node, Reducer, RunConfig, START, State, StateSchema, Target, Update, node_fn,
};
use serde::Serialize;
use serde_json::{Value, json};

/// Why a benchmark stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A benchmark graph is not well formed.
    #[error(transparent)]
    Graph(#[from] bridle_runtime::graph::GraphError),
    /// A run was refused or failed.
    #[error("{0}")]
    Run(Rejection),
    /// The paused shape did not pause.
    #[error("no interrupt")]
    NoInterrupt,
    /// The checkpointer could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The raw SQLite measure failed.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
}

impl From<Rejection> for BenchError {
    fn from(r: Rejection) -> Self {
        Self::Run(r)
    }
}

/// One measured quantity.
#[derive(Debug, Clone, Serialize)]
pub struct Measure {
    /// Median of the samples.
    pub median: f64,
    /// Every sample, in the key's unit.
    pub samples: Vec<f64>,
    /// `us` or `ms`.
    pub unit: &'static str,
}

/// The whole report: key → measure.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Results by key.
    pub results: BTreeMap<&'static str, Measure>,
}

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Samples per key.
    pub samples: usize,
    /// Runs per sample for in-memory shapes.
    pub batch: usize,
    /// Runs per sample for shapes that write to disk.
    pub disk_batch: usize,
}

impl Default for Plan {
    fn default() -> Self {
        Self { samples: 15, batch: 200, disk_batch: 10 }
    }
}

fn counter() -> StateSchema {
    StateSchema::new().field("count", Kind::Integer, Reducer::Replace).field("results", Kind::Array, Reducer::Append)
}

fn inc() -> Arc<dyn Node> {
    node_fn(|s: State, _| async move { Ok(Update::new().set("count", s.int("count") + 1)) })
}

fn chain(n: usize) -> Result<Graph, BenchError> {
    let mut b = GraphBuilder::new("bench-chain", counter()).edge(START, "n0");
    for i in 0..n {
        let next = if i + 1 == n { END.to_owned() } else { format!("n{}", i + 1) };
        b = b.node(&format!("n{i}"), inc()).edge(&format!("n{i}"), &next);
    }
    b.build().map_err(BenchError::from)
}

fn fanout() -> Result<Graph, BenchError> {
    GraphBuilder::new("bench-fanout", counter())
        .node("dispatch", node_fn(|_, _| async { Ok(Update::new()) }))
        .node("branch", node_fn(|s: State, _| async move { Ok(Update::new().set("results", vec![s.int("i")])) }))
        .node("join", node_fn(|_, _| async { Ok(Update::new()) }))
        .edge(START, "dispatch")
        .route("dispatch", &["branch"], |_| (0..8).map(|i| Target::send("branch", json!({ "i": i }))).collect())
        .edge("branch", "join")
        .edge("join", END)
        .build()
        .map_err(BenchError::from)
}

const LOOP_ITERATIONS: i64 = 50;

fn looping() -> Result<Graph, BenchError> {
    GraphBuilder::new("bench-loop", counter())
        .node_with("step", inc(), bridle_runtime::graph::NodeOptions::default().max_iterations(1000))
        .edge(START, "step")
        .route("step", &["step", END], |s| {
            vec![if s.int("count") < LOOP_ITERATIONS { Target::node("step") } else { Target::End }]
        })
        .recursion_limit(1000)
        .build()
        .map_err(BenchError::from)
}

fn pausing() -> Result<Graph, BenchError> {
    GraphBuilder::new("bench-pause", counter())
        .node("a", inc())
        .node("b", inc())
        .node("c", inc())
        .edge(START, "a")
        .edge("a", "b")
        .edge("b", "c")
        .edge("c", END)
        .interrupt_before("b")
        .build()
        .map_err(BenchError::from)
}

/// Runs every shape and returns the report. `dir` holds the SQLite files (deleted after).
pub async fn runtime(plan: Plan, dir: &std::path::Path) -> Result<Report, BenchError> {
    let mut results = BTreeMap::new();
    let mut thread = 0u64;
    let mut next_thread = move || {
        thread += 1;
        format!("bench-{thread}")
    };
    let chain10 = chain(10)?;
    let single = chain(1)?;
    let fan = fanout()?;
    let lp = looping()?;
    let pause = pausing()?;

    let per_run = sample(plan.samples, plan.batch, || {
        let id = next_thread();
        let g = chain10.clone();
        async move { g.invoke(RunConfig::new(&id), Value::Null).await.map(drop).map_err(BenchError::from) }
    })
    .await?;
    results.insert("linear_invoke_us_per_run", us(&per_run, 1.0));
    results.insert("linear_invoke_us_per_step", us(&per_run, 10.0));
    let s = sample(plan.samples, plan.batch, || {
        let id = next_thread();
        let g = single.clone();
        async move { g.invoke(RunConfig::new(&id), Value::Null).await.map(drop).map_err(BenchError::from) }
    })
    .await?;
    results.insert("single_node_invoke_us_per_run", us(&s, 1.0));
    let s = sample(plan.samples, plan.batch, || {
        let id = next_thread();
        let g = fan.clone();
        async move { g.invoke(RunConfig::new(&id), Value::Null).await.map(drop).map_err(BenchError::from) }
    })
    .await?;
    results.insert("fanout_send_us_per_run", us(&s, 1.0));
    #[allow(clippy::cast_precision_loss)]
    let iterations = LOOP_ITERATIONS as f64;
    let s = sample(plan.samples, plan.batch / 10 + 1, || {
        let id = next_thread();
        let g = lp.clone();
        async move { g.invoke(RunConfig::new(&id), Value::Null).await.map(drop).map_err(BenchError::from) }
    })
    .await?;
    results.insert("loop_us_per_iteration", us(&s, iterations));

    let memory: Arc<dyn Checkpointer> = Arc::new(MemoryCheckpointer::new());
    let s = sample(plan.samples, plan.batch, || {
        let config = RunConfig::new(&next_thread()).checkpointer(memory.clone());
        let g = chain10.clone();
        async move { g.invoke(config, Value::Null).await.map(drop).map_err(BenchError::from) }
    })
    .await?;
    results.insert("linear_memory_saver_us_per_step", us(&s, 10.0));

    for (strictness, step_key, pause_key) in [
        (Strictness::Normal, "linear_sqlite_syncnormal_us_per_step", "interrupt_static_sqlite_syncnormal_ms"),
        (Strictness::Strict, "linear_sqlite_strict_us_per_step", "interrupt_static_sqlite_strict_ms"),
    ] {
        let file = dir.join(format!("bench-{strictness:?}.db"));
        let url = format!("sqlite://{}", file.display());
        let saver: Arc<dyn Checkpointer> = Arc::new(SqliteCheckpointer::open(&url, strictness).await?);
        let s = sample(plan.samples, plan.disk_batch, || {
            let config = RunConfig::new(&next_thread()).checkpointer(saver.clone());
            let g = chain10.clone();
            async move { g.invoke(config, Value::Null).await.map(drop).map_err(BenchError::from) }
        })
        .await?;
        results.insert(step_key, us(&s, 10.0));
        let s = sample(plan.samples, plan.disk_batch, || {
            let id = next_thread();
            let config = RunConfig::new(&id).checkpointer(saver.clone());
            let g = pause.clone();
            async move {
                let paused = g.invoke(config.clone(), Value::Null).await.map_err(BenchError::from)?;
                let interrupt = paused.interrupts.first().map(|i| i.id.clone()).ok_or(BenchError::NoInterrupt)?;
                g.resume_invoke(config, &interrupt, Value::Null).await.map(drop).map_err(BenchError::from)
            }
        })
        .await?;
        results.insert(pause_key, ms(&s));
        drop(saver);
        remove_db(&file);
    }
    for (sync, key) in [("FULL", "sqlite_raw_commit_full_us"), ("NORMAL", "sqlite_raw_commit_normal_us")] {
        let file = dir.join(format!("raw-{key}.db"));
        results.insert(key, us(&raw_commits(&file, sync, plan).map_err(BenchError::from)?, 1.0));
        remove_db(&file);
    }
    Ok(Report { results })
}

/// `samples` means over `batch` runs each, after one warm-up batch; seconds per run.
async fn sample<F, Fut>(samples: usize, batch: usize, mut run: F) -> Result<Vec<f64>, BenchError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), BenchError>>,
{
    let batch = batch.max(1);
    for _ in 0..batch {
        run().await?;
    }
    let mut out = Vec::with_capacity(samples);
    for _ in 0..samples.max(1) {
        let started = Instant::now();
        for _ in 0..batch {
            run().await?;
        }
        #[allow(clippy::cast_precision_loss)]
        out.push(started.elapsed().as_secs_f64() / batch as f64);
    }
    Ok(out)
}

/// One small insert per autocommit transaction, in this thread (as the anchor's sqlite3 does).
fn raw_commits(file: &std::path::Path, synchronous: &str, plan: Plan) -> Result<Vec<f64>, rusqlite::Error> {
    let conn = rusqlite::Connection::open(file)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", synchronous)?;
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)", [])?;
    let batch = plan.disk_batch * 5;
    let mut out = Vec::new();
    for round in 0..=plan.samples {
        let started = Instant::now();
        for _ in 0..batch {
            conn.prepare_cached("INSERT INTO t (body) VALUES ('{\"count\":1}')")?.execute([])?;
        }
        #[allow(clippy::cast_precision_loss)]
        let per = started.elapsed().as_secs_f64() / batch as f64;
        if round > 0 {
            out.push(per);
        }
    }
    Ok(out)
}

fn us(seconds: &[f64], per: f64) -> Measure {
    measure(seconds.iter().map(|s| s * 1e6 / per).collect(), "us")
}

fn ms(seconds: &[f64]) -> Measure {
    measure(seconds.iter().map(|s| s * 1e3).collect(), "ms")
}

fn measure(samples: Vec<f64>, unit: &'static str) -> Measure {
    let mut sorted = samples.clone();
    sorted.sort_by(f64::total_cmp);
    let median = match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted.get(n / 2).copied().unwrap_or(0.0),
        n => (sorted.get(n / 2 - 1).copied().unwrap_or(0.0) + sorted.get(n / 2).copied().unwrap_or(0.0)) / 2.0,
    };
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    Measure { median: round(median), samples: samples.into_iter().map(round).collect(), unit }
}

fn remove_db(file: &std::path::Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = file.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}
