//! `bridle bench runtime|decisions`: runs a benchmark and prints its figures (one JSON line
//! with `--json`, else a table).

use std::process::ExitCode;

use anyhow::Context;
use bridle_apps::bench::{self, Plan};

/// `bridle bench …`.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// The graph runtime on the LangGraph anchor's shapes (node-step, fan-out, loop,
    /// checkpointed steps, pause and resume) and the disk's raw commit cost.
    Runtime {
        /// Samples per figure (default 15).
        #[arg(long)]
        samples: Option<usize>,
    },
    /// Durable audited decisions/s through the whole gate on a store (each call waits for the
    /// commit of its audit event); the audit chain is verified afterwards.
    Decisions(DecisionsArgs),
}

// The arguments of `bridle bench decisions` (its help is the variant's doc above).
#[derive(Debug, clap::Args)]
pub struct DecisionsArgs {
    /// Store URL (`sqlite://PATH[?synchronous=full]`, `postgres://…[?options[synchronous_commit]=off]`);
    /// default: a fresh SQLite file in a temporary directory.
    #[arg(long)]
    pub store: Option<String>,
    /// Concurrent callers.
    #[arg(long, default_value_t = 128)]
    pub concurrency: usize,
    /// Measured seconds (after a warm-up of a fifth of it, at most 1 s).
    #[arg(long, default_value_t = 5.0)]
    pub seconds: f64,
    /// Group commit: most audit events per transaction; 0 turns group commit off.
    #[arg(long, default_value_t = 64)]
    pub batch: usize,
    /// Stores (pools, writers, gates) on the same URL, as separate `bridle serve` replicas.
    #[arg(long, default_value_t = 1)]
    pub replicas: usize,
    /// Tenants the callers act for (the bundled tenant-a and copies of it), each with its own
    /// audit chain.
    #[arg(long, default_value_t = 1)]
    pub tenants: usize,
    /// Tokio worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs `bridle bench …`.
pub fn run(g: &super::Global, command: &BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Runtime { samples } => runtime(g.json, *samples),
        BenchCommand::Decisions(args) => decisions(args, g.json),
    }
}

fn runtime(json: bool, samples: Option<usize>) -> anyhow::Result<ExitCode> {
    // SQLite files go where commits hit the disk: `$BRIDLE_BENCH_DIR`, else the system's
    // temporary directory (set the variable when that is a tmpfs, where a commit costs nothing).
    let dir = match std::env::var_os("BRIDLE_BENCH_DIR") {
        Some(base) => tempfile::tempdir_in(base),
        None => tempfile::tempdir(),
    }
    .context("creating a directory for the benchmark's SQLite files")?;
    let mut plan = Plan::default();
    if let Some(samples) = samples {
        plan.samples = samples.max(1);
    }
    // Like the anchor (one Python thread), the runs execute on one thread: a current-thread
    // runtime of their own, so wake-ups never cross worker threads.
    let path = dir.path().to_path_buf();
    let report = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        runtime.block_on(bench::runtime(plan, &path)).map_err(|e| anyhow::anyhow!("benchmark failed: {e}"))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the benchmark thread panicked"))??;
    if json {
        super::out::line(&serde_json::to_string(&report)?)?;
    } else {
        for (key, m) in &report.results {
            super::out::line(&format!("{key:<40} {:>12.3} {}", m.median, m.unit))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn decisions(args: &DecisionsArgs, json: bool) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.seconds > 0.0 && args.seconds <= 3600.0, "--seconds must be in (0, 3600]");
    // Without a store: a fresh SQLite file where commits hit the disk (see `runtime` above).
    let dir = match std::env::var_os("BRIDLE_BENCH_DIR") {
        Some(base) => tempfile::tempdir_in(base),
        None => tempfile::tempdir(),
    }
    .context("creating a directory for the benchmark's SQLite file")?;
    let store = args.store.clone().unwrap_or_else(|| format!("sqlite://{}", dir.path().join("decisions.db").display()));
    let plan = bench::decisions::DecisionsPlan {
        store,
        concurrency: args.concurrency.max(1),
        duration: std::time::Duration::from_secs_f64(args.seconds),
        batch: (args.batch > 0).then_some(args.batch),
        replicas: args.replicas.max(1),
        tenants: args.tenants.max(1),
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = args.threads {
        builder.worker_threads(n.max(1));
    }
    let report = std::thread::spawn(move || {
        let runtime = builder.enable_all().build()?;
        runtime.block_on(bench::decisions::decisions(plan)).map_err(|e| anyhow::anyhow!("benchmark failed: {e}"))
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the benchmark thread panicked"))??;
    if json {
        super::out::line(&serde_json::to_string(&report)?)?;
    } else {
        let batch = report.batch.map_or_else(|| "off".to_owned(), |n| format!("<= {n}"));
        super::out::line(&format!(
            "{} ({}, durability {}), group commit {batch}, {} replica(s), {} tenant(s), {} callers",
            report.store, report.backend, report.durability, report.replicas, report.tenants, report.concurrency
        ))?;
        super::out::line(&format!(
            "{:.0} decisions/s ({} in {:.2} s, {} denied); {:.1} us per decision",
            report.decisions_per_s, report.decisions, report.seconds, report.denied, report.us_per_decision
        ))?;
        let l = report.latency_us;
        super::out::line(&format!(
            "latency per call: p50 {:.0} us, p90 {:.0} us, p99 {:.0} us, max {:.0} us; audit verified ({} events in {} chain(s))",
            l.p50, l.p90, l.p99, l.max, report.audit_events_verified, report.audit_chains_verified
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
