//! `bridle demo` and `bridle demo fab`: print one line per case; exit non-zero naming the first
//! case that diverged.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use bridle_apps::demo::DemoReport;
use bridle_runtime::store::Stores;

pub async fn run(config: &Option<PathBuf>, db: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let config = Arc::new(super::config(config.as_deref())?);
    // A fresh in-memory store unless one is named, so the demo always starts from seed 004's state.
    let stores = match db {
        Some(_) => super::stores(&config, db).await?,
        None => Stores::memory(),
    };
    let report = bridle_apps::demo::run(config, stores).await?;
    print(&report, "seed 004", json)
}

/// Seed 000's scenarios on the bundled fab example (or `--config`), in memory unless `--db`
/// names a store, where the audit events and decision records stay for inspection.
pub async fn fab(config: &Option<PathBuf>, db: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let config = Arc::new(match config {
        Some(path) => super::config(Some(path))?,
        None => bridle_runtime::bundled::fab().map_err(|e| anyhow::anyhow!("{e}"))?,
    });
    let stores = match db {
        Some(_) => super::stores(&config, db).await?,
        None => Stores::memory(),
    };
    let report = bridle_apps::demo_fab::run(config, stores).await?;
    print(&report, "seed 000", json)
}

fn print(report: &DemoReport, seed: &str, json: bool) -> anyhow::Result<ExitCode> {
    if json {
        super::out::line(&serde_json::json!({"lines": report.lines, "diverged": report.diverged}).to_string())?;
    } else {
        for line in &report.lines {
            super::out::line(line)?;
        }
    }
    Ok(match &report.diverged {
        None => ExitCode::SUCCESS,
        Some(case) => {
            eprintln!("error: demo diverged from {seed} at {case}");
            ExitCode::FAILURE
        }
    })
}
