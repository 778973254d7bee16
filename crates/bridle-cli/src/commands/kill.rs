//! `bridle kill`: set or lift a kill switch on the store, and print the work it leaves
//! unfinished. An operator tool (like `bridle approvals`): whoever can open the store can use
//! it; over the API the same needs the `kill:set` / `kill:lift` scopes. The work is
//! `bridle_runtime::kill`, which also audits every switch.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use bridle_core::kill::KillScope;
use bridle_runtime::Engine;
use bridle_runtime::kill::KillReport;
use serde_json::json;

use super::out;

// What `bridle kill` was asked (its help is the variant's doc in main.rs).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Every tenant and agent.
    #[arg(long, conflicts_with_all = ["tenant", "agent"])]
    pub all: bool,
    /// One tenant.
    #[arg(long)]
    pub tenant: Option<String>,
    /// One registered agent (in every tenant, or in `--tenant`).
    #[arg(long)]
    pub agent: Option<String>,
    /// Why (recorded with the switch and in the audit log): at most 2,000 characters, no
    /// NUL or other control character. Optional: an emergency stop needs no reason.
    #[arg(long, default_value = "")]
    pub reason: String,
    /// Who sets it (recorded; default: `cli`).
    #[arg(long, default_value = "cli")]
    pub by: String,
    /// Lift the switch of exactly this scope instead.
    #[arg(long)]
    pub lift: bool,
}

/// Sets (or with `--lift` lifts) the switch of the scope given.
pub async fn run(g: &super::Global, args: &Args) -> anyhow::Result<ExitCode> {
    let scope = match (args.all, args.tenant.as_deref(), args.agent.as_deref()) {
        (true, None, None) => KillScope::all(),
        (false, None, None) => bail!("name a scope: --all, --tenant T, --agent A (or --tenant T --agent A)"),
        (true, _, _) => bail!("--all covers everything: give it alone"),
        (false, tenant, agent) => KillScope { tenant: tenant.map(str::to_owned), agent: agent.map(str::to_owned) },
    };
    check_bounds(args, &scope)?;
    let config = Arc::new(super::config(g.config())?);
    let url = g.db().or(config.store_url.as_deref()).unwrap_or("sqlite://bridle-data/bridle.db").to_owned();
    let stores = super::stores(&config, Some(&url)).await?;
    let checkpoints = config.runtime.checkpoints_url.clone().unwrap_or_else(|| url.clone());
    let checkpointer = bridle_runtime::checkpoint::open_checkpointer(&checkpoints, config.runtime.strictness)
        .await
        .with_context(|| format!("opening checkpoints `{checkpoints}`"))?;
    let adapter = Arc::new(bridle_runtime::adapter::MemoryAdapter::from_config(&config));
    let kills = Engine::builder(config, stores, adapter).build()?.kills;
    let report = if args.lift {
        kills.lift(&args.by, scope, &args.reason).await.context("lifting the kill switch")?
    } else {
        kills.set(Some(&checkpointer), None, &args.by, scope, &args.reason).await.context("setting the kill switch")?
    };
    print(&report, args.lift, g.json)?;
    Ok(ExitCode::SUCCESS)
}

/// The bounds of `bridle_core::bounds` before the store is opened: a reason that breaks them is
/// refused (the switch is unchanged); none at all is fine (`no reason given`).
fn check_bounds(args: &Args, scope: &KillScope) -> anyhow::Result<()> {
    use bridle_core::bounds;
    let flag = |e: bounds::BoundError| anyhow::anyhow!("--{}: {e}", e.field());
    bounds::check_reason("reason", &args.reason).map_err(flag)?;
    bounds::check_text("by", &args.by, bounds::SUBJECT_MAX).map_err(flag)?;
    bounds::require("by", &args.by).map_err(flag)?;
    if let Some(tenant) = &scope.tenant {
        bounds::check_id("tenant", tenant).map_err(flag)?;
    }
    if let Some(agent) = &scope.agent {
        bounds::check_agent("agent", agent).map_err(flag)?;
    }
    Ok(())
}

fn print(report: &KillReport, lift: bool, as_json: bool) -> anyhow::Result<()> {
    if as_json {
        let action = if lift { "lifted" } else { "set" };
        return out::line(&json!({"action": action, "report": report}).to_string());
    }
    let scope = report.switch.scope.describe();
    match (lift, report.changed) {
        (false, true) => out::line(&format!("kill switch set for {scope}: {}", report.switch.reason))?,
        (false, false) => out::line(&format!("kill switch for {scope} was already on; reason updated"))?,
        (true, true) => out::line(&format!("kill switch for {scope} lifted"))?,
        (true, false) => out::line(&format!("no kill switch was on for exactly {scope}"))?,
    }
    if lift {
        return Ok(());
    }
    let u = &report.unfinished;
    out::line(&format!("pending approvals: {}", u.pending_approvals.len()))?;
    for a in &u.pending_approvals {
        out::line(&format!(
            "  {}\t{}\t{}\t{}\trequested by {}",
            a.id,
            a.tenant,
            a.plan.tool,
            a.level.as_str(),
            a.requester
        ))?;
    }
    out::line(&format!("jobs not final: {}", u.jobs.len()))?;
    for j in &u.jobs {
        out::line(&format!("  {}\t{}\t{}\t{}", j.id, j.tenant, j.plan.tool, j.status.as_str()))?;
    }
    out::line(&format!("paused or interrupted runs: {}", u.paused_runs.len()))?;
    for r in &u.paused_runs {
        out::line(&format!("  {}\t{}\t{}\tstep {}", r.thread_id, r.graph, r.status.as_str(), r.step))?;
    }
    Ok(())
}
