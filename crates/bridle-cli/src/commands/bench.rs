//! `bridle bench runtime|decisions`: runs a benchmark and prints its figures (one JSON line
//! with `--json`, else a table).

use std::process::ExitCode;

use anyhow::Context;
use bridle_apps::bench::{self, Plan};

pub fn runtime(json: bool, samples: Option<usize>) -> anyhow::Result<ExitCode> {
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

/// The arguments of `bridle bench decisions`.
pub struct DecisionsArgs {
    pub store: Option<String>,
    pub concurrency: usize,
    pub seconds: f64,
    pub batch: usize,
    pub replicas: usize,
    pub threads: Option<usize>,
}

pub fn decisions(args: DecisionsArgs, json: bool) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.seconds > 0.0 && args.seconds <= 3600.0, "--seconds must be in (0, 3600]");
    // Without a store: a fresh SQLite file where commits hit the disk (see `runtime` above).
    let dir = match std::env::var_os("BRIDLE_BENCH_DIR") {
        Some(base) => tempfile::tempdir_in(base),
        None => tempfile::tempdir(),
    }
    .context("creating a directory for the benchmark's SQLite file")?;
    let store = args.store.unwrap_or_else(|| format!("sqlite://{}", dir.path().join("decisions.db").display()));
    let plan = bench::decisions::DecisionsPlan {
        store,
        concurrency: args.concurrency.max(1),
        duration: std::time::Duration::from_secs_f64(args.seconds),
        batch: (args.batch > 0).then_some(args.batch),
        replicas: args.replicas.max(1),
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
            "{} ({}, durability {}), group commit {batch}, {} replica(s), {} callers",
            report.store, report.backend, report.durability, report.replicas, report.concurrency
        ))?;
        super::out::line(&format!(
            "{:.0} decisions/s ({} in {:.2} s, {} denied); {:.1} us per decision",
            report.decisions_per_s, report.decisions, report.seconds, report.denied, report.us_per_decision
        ))?;
        let l = report.latency_us;
        super::out::line(&format!(
            "latency per call: p50 {:.0} us, p90 {:.0} us, p99 {:.0} us, max {:.0} us; audit chain verified ({} events)",
            l.p50, l.p90, l.p99, l.max, report.audit_events_verified
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
