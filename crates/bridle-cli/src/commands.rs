//! One module per command; shared helpers for config and store selection.

pub mod approvals;
pub mod audit;
pub mod bench;
pub mod chat;
pub mod check;
pub mod demo;
pub mod drift;
pub mod feedback;
pub mod gateway;
pub mod guard;
pub mod input;
pub mod jobs;
pub mod kill;
pub mod lab;
pub mod mcp;
pub mod models;
pub mod observability;
pub mod out;
pub mod outcome;
pub mod replay;
pub mod run;
pub mod serve;
pub mod token;
pub mod validate;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use anyhow::Context;
use bridle_core::config::Config;
use bridle_runtime::audit::{HeadEnv, HeadPlan, Unanchored};
use bridle_runtime::store::{Anchoring, Stores};

/// The options every command takes, before or after its name (`--config`, `--db`, `--json`).
#[derive(Debug, clap::Args)]
pub struct Global {
    /// Configuration file (default: the bundled checkout example).
    #[arg(long, global = true, env = "BRIDLE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Store URL: `sqlite://PATH`, `sqlite::memory:`, `memory` or `postgres://…` (overrides the config's store).
    #[arg(long = "db", global = true, env = "BRIDLE_STORE_URL")]
    pub db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

impl Global {
    /// `--config`.
    pub fn config(&self) -> Option<&Path> {
        self.config.as_deref()
    }

    /// `--db`.
    pub fn db(&self) -> Option<&str> {
        self.db.as_deref()
    }
}

/// The configuration at `path`, or the bundled default.
pub fn config(path: Option<&Path>) -> anyhow::Result<Config> {
    bridle_runtime::bundled::load_or_default(path).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The in-process tools every command's engine runs: the workbench's (`bridle-tools`).
pub fn tools() -> std::sync::Arc<dyn bridle_core::ports::InProcessTools> {
    std::sync::Arc::new(bridle_tools::Workbench)
}

/// The console's public base URL, where approval links (webhooks, MCP `approval_url`) point:
/// `BRIDLE_CONSOLE_URL`, else `[webhooks] console_url`, else the server itself (`http://{local}`);
/// a request's card is at `{base}/approvals/{id}`.
pub fn console_url(config: &Config, local: &str) -> String {
    std::env::var("BRIDLE_CONSOLE_URL")
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| config.webhooks.console_url.clone())
        .map_or_else(|| format!("http://{local}"), |u| u.trim_end_matches('/').to_owned())
}

/// The store URL `--db` names, else the config's, else the default SQLite file.
pub fn store_url(config: &Config, db: Option<&str>) -> String {
    db.or(config.store_url.as_deref()).unwrap_or(bridle_runtime::runtime::DEFAULT_STORE_URL).to_owned()
}

/// The signed-heads settings for a store (`[audit]`, `BRIDLE_AUDIT_*`).
pub fn head_plan(config: &Config, url: &str) -> anyhow::Result<HeadPlan> {
    Ok(HeadPlan::resolve(&config.audit, url, &HeadEnv::from_process())?)
}

/// The store named by `--db`, else by the config, else the default SQLite file, with `[audit]`
/// applied and, when a signing key is set, a head keeper that signs the chains' heads while the
/// command runs and once more before it exits ([`seal`]).
pub async fn stores(config: &Config, db: Option<&str>) -> anyhow::Result<Stores> {
    let url = store_url(config, db);
    let plan = head_plan(config, &url)?;
    let stores = plain_stores(config, &url).await?;
    let stores = stores.with_heads(&plan).await.context("reading the audit chains' heads")?;
    if plan.has_key()
        && let Anchoring::Unanchored(why @ Unanchored::NoHeadLog) = &stores.anchoring
    {
        eprintln!("warning: {}", why.explain());
    }
    track(&stores);
    Ok(stores)
}

/// The store with `[audit]` applied and no head keeper: for commands that only read the log.
pub async fn plain_stores(config: &Config, url: &str) -> anyhow::Result<Stores> {
    let stores = Stores::open(url).await.with_context(|| format!("opening store `{url}`"))?;
    Ok(stores.with_audit_settings(&config.audit))
}

/// Head keepers of this process, closed by [`seal`] before it exits.
static KEEPERS: Mutex<Vec<Anchoring>> = Mutex::new(Vec::new());

/// Remembers `stores`' head keeper (if any) so that [`seal`] writes its last heads.
pub fn track(stores: &Stores) {
    if matches!(stores.anchoring, Anchoring::Kept(_)) {
        KEEPERS.lock().unwrap_or_else(PoisonError::into_inner).push(stores.anchoring.clone());
    }
}

/// Writes the last signed heads of every store this command opened (its exit: a one-shot
/// command's end, `bridle serve`'s shutdown). A failure is a warning: the command's own outcome
/// stands.
pub async fn seal() {
    let keepers = std::mem::take(&mut *KEEPERS.lock().unwrap_or_else(PoisonError::into_inner));
    for anchoring in keepers {
        if let Err(e) = anchoring.close().await {
            eprintln!("warning: audit heads not written: {e}");
        }
    }
}
