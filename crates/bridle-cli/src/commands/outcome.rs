//! `bridle outcome`: an operator rates an executed action (by its job id) a success or a
//! failure, for the action history the gate weighs future proposals against. The work is
//! `bridle_runtime::history::rate`, which audits it.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::bail;
use bridle_core::history::{Outcome, OutcomeSource, Rating};
use bridle_runtime::Engine;
use serde_json::json;

use super::out;

// What `bridle outcome` was asked (its help is the variant's doc in main.rs).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tenant of the job.
    #[arg(long)]
    pub tenant: String,
    /// The job that executed the action.
    pub job: String,
    /// It failed (default: it succeeded).
    #[arg(long)]
    pub failure: bool,
    /// What was observed.
    #[arg(long)]
    pub note: Option<String>,
    /// Who rates it (recorded; default: `cli`).
    #[arg(long, default_value = "cli")]
    pub by: String,
}

pub async fn run(g: &super::Global, args: &Args) -> anyhow::Result<ExitCode> {
    use bridle_core::bounds;
    let flag = |e: bounds::BoundError| anyhow::anyhow!("--{}: {e}", e.field());
    bounds::check_id("tenant", &args.tenant).map_err(flag)?;
    bounds::check_id("job", &args.job).map_err(flag)?;
    bounds::check_text("by", &args.by, bounds::SUBJECT_MAX).map_err(flag)?;
    if let Some(note) = args.note.as_deref() {
        bounds::check_reason("note", note).map_err(flag)?;
    }
    let config = Arc::new(super::config(g.config())?);
    let stores = super::stores(&config, g.db()).await?;
    let adapter = Arc::new(bridle_runtime::adapter::MemoryAdapter::from_config(&config));
    let gate = Engine::builder(config, stores, adapter).gate()?;
    let rating = Rating {
        outcome: if args.failure { Outcome::Failure } else { Outcome::Success },
        source: OutcomeSource::Operator,
        rated_by: args.by.clone(),
        note: args.note.clone(),
        rated_at: time::OffsetDateTime::now_utc(),
    };
    let Some(action) = bridle_runtime::history::rate(&gate, &args.tenant, &args.job, &rating).await? else {
        bail!("no executed action with job `{}` in tenant `{}`", args.job, args.tenant);
    };
    if g.json {
        out::line(&json!({"action": action}).to_string())?;
    } else {
        out::line(&format!(
            "job {}: {} `{}` for `{}` on {} rated {}",
            action.job_id,
            action.tool,
            action.equipment,
            action.diagnosis,
            action.equipment_class,
            rating.outcome.as_str()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}
