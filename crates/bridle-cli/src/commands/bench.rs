//! `bridle bench runtime`: runs the runtime benchmark and prints its figures (one JSON line
//! with `--json`, else a table).

use std::process::ExitCode;

use anyhow::Context;
use bridle_runtime::bench::{self, Plan};

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
