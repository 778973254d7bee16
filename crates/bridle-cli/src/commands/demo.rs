//! `bridle demo`: prints one line per case; exits non-zero naming the case that diverged.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use bridle_runtime::store::Stores;

pub async fn run(config: &Option<PathBuf>, db: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let config = Arc::new(super::config(config.as_deref())?);
    // A fresh in-memory store unless one is named, so the demo always starts from seed 004's state.
    let stores = match db {
        Some(_) => super::stores(&config, db).await?,
        None => Stores::memory(),
    };
    let report = bridle_runtime::demo::run(config, stores).await?;
    if json {
        super::out::line(&serde_json::json!({"lines": report.lines, "diverged": report.diverged}).to_string())?;
    } else {
        for line in &report.lines {
            super::out::line(line)?;
        }
    }
    Ok(match report.diverged {
        None => ExitCode::SUCCESS,
        Some(case) => {
            eprintln!("error: demo diverged from seed 004 at {case}");
            ExitCode::FAILURE
        }
    })
}
