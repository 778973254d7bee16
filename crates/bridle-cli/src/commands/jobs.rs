//! `bridle jobs list|reconcile`: the jobs not yet settled, and reconciliation of those whose
//! outcome is unknown through the configuration's adapters (asking each adapter, never running
//! anything again). Argument handling and printing only: the work is `Gate::reconcile_with` in
//! `bridle_runtime::jobs`, which also audits every job it moves.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use bridle_core::job::{Job, JobStatus};
use bridle_runtime::Engine;
use bridle_runtime::jobs::Settled;
use serde_json::{Value, json};
use time::format_description::well_known::Rfc3339;

use super::out;

/// `bridle jobs …`.
#[derive(Debug, clap::Subcommand)]
pub enum JobsCommand {
    /// Jobs not yet settled (reserved, dispatched, unknown), oldest first; `--json` prints one
    /// JSON line each.
    List {
        /// Only jobs in this state.
        #[arg(long, value_parser = ["reserved", "dispatched", "unknown"])]
        state: Option<String>,
    },
    /// Ask the adapters what became of every `unknown` job and settle it (succeeded / failed /
    /// still unknown), audited; `dispatched` or `reserved` jobs older than their tool's timeout
    /// plus `--grace` were abandoned by a stopped process and are taken up too.
    Reconcile {
        /// Time past a tool's timeout before a dispatched or reserved job counts as abandoned;
        /// `0s` takes them all at once (only when no server runs on the store).
        #[arg(long, default_value = "60s")]
        grace: String,
    },
}

/// Runs `bridle jobs …`.
pub async fn run(g: &super::Global, command: &JobsCommand) -> anyhow::Result<ExitCode> {
    match command {
        JobsCommand::List { state } => list(g.config(), g.db(), state.as_deref(), g.json).await,
        JobsCommand::Reconcile { grace } => reconcile(g.config(), g.db(), grace, g.json).await,
    }
}

/// Lists jobs that are not settled (`reserved`, `dispatched`, `unknown`), oldest first.
pub async fn list(
    config: Option<&Path>,
    db: Option<&str>,
    state: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let state = state.map(|s| JobStatus::parse(s).with_context(|| format!("unknown job state `{s}`"))).transpose()?;
    let config = super::config(config)?;
    let stores = super::stores(&config, db).await?;
    let jobs: Vec<Job> =
        stores.jobs.unsettled().await?.into_iter().filter(|j| state.is_none_or(|s| j.status == s)).collect();
    if json {
        for j in &jobs {
            out::line(&view(j).to_string())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if jobs.is_empty() {
        out::line("no unsettled jobs")?;
        return Ok(ExitCode::SUCCESS);
    }
    out::line("ID\tTENANT\tTOOL\tSTATE\tAPPROVAL\tUPDATED")?;
    for j in &jobs {
        out::line(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}",
            j.id,
            j.tenant,
            j.plan.tool,
            j.status.as_str(),
            j.approval_id.as_deref().unwrap_or("-"),
            rfc3339(j.updated_at)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Asks the adapters about every `unknown` job (and those abandoned past `grace`) and settles
/// what they can tell; prints each job and a summary.
pub async fn reconcile(config: Option<&Path>, db: Option<&str>, grace: &str, json: bool) -> anyhow::Result<ExitCode> {
    let grace = parse_grace(grace)?;
    let config = Arc::new(super::config(config)?);
    let stores = super::stores(&config, db).await?;
    let adapter = bridle_runtime::adapter::from_config(&config, super::tools()).map_err(|e| anyhow::anyhow!("{e}"))?;
    let reconciler = Engine::builder(config, stores, adapter).build()?.reconciler;
    let settled = reconciler.reconcile_with(grace).await.context("reconciling jobs")?;
    let count = |s: JobStatus| settled.iter().filter(|x| x.to == s).count();
    let summary = json!({
        "examined": settled.len(),
        "succeeded": count(JobStatus::Succeeded),
        "failed": count(JobStatus::Failed),
        "unknown": count(JobStatus::Unknown),
    });
    if json {
        out::line(&json!({"jobs": settled, "summary": summary}).to_string())?;
        return Ok(ExitCode::SUCCESS);
    }
    for s in &settled {
        out::line(&format!("{}\t{}\t{}", s.job_id, s.tool, movement(s)))?;
    }
    out::line(&format!(
        "{} job(s) examined: {} succeeded, {} failed, {} still unknown",
        settled.len(),
        count(JobStatus::Succeeded),
        count(JobStatus::Failed),
        count(JobStatus::Unknown)
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// `unknown → succeeded`, or `still unknown`.
fn movement(s: &Settled) -> String {
    if s.from == s.to {
        format!("still {}", s.to.as_str())
    } else {
        format!("{} → {}", s.from.as_str(), s.to.as_str())
    }
}

/// One job as a JSON line.
fn view(j: &Job) -> Value {
    json!({
        "job_id": j.id,
        "tenant": j.tenant,
        "subject": j.subject,
        "tool": j.plan.tool,
        "state": j.status.as_str(),
        "approval_id": j.approval_id,
        "plan_hash": j.plan_hash.0,
        "idempotency_key": j.idempotency_key,
        "created_at": rfc3339(j.created_at),
        "updated_at": rfc3339(j.updated_at),
    })
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap_or_default()
}

/// `0`, `0s`, `90s`, `15m`, `1h` → a duration of at most a day.
fn parse_grace(text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let n: u64 = number.parse().with_context(|| format!("`--grace {text}`: expected a number with s, m or h"))?;
    let factor = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => bail!("`--grace {text}`: the unit must be s, m or h"),
    };
    let seconds = n.saturating_mul(factor);
    if seconds > 86_400 {
        bail!("`--grace {text}`: at most one day");
    }
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graces_read_with_units() {
        assert_eq!(parse_grace("0").ok(), Some(Duration::ZERO));
        assert_eq!(parse_grace("90s").ok(), Some(Duration::from_secs(90)));
        assert_eq!(parse_grace("2m").ok(), Some(Duration::from_secs(120)));
        assert!(parse_grace("2d").is_err() && parse_grace("25h").is_err() && parse_grace("x").is_err());
    }
}
