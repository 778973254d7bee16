//! One module per command; shared helpers for config and store selection.

pub mod approvals;
pub mod audit;
pub mod bench;
pub mod check;
pub mod demo;
pub mod drift;
pub mod feedback;
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

use std::path::Path;

use anyhow::Context;
use bridle_core::config::Config;
use bridle_runtime::store::Stores;

/// The configuration at `path`, or the bundled default.
pub fn config(path: Option<&Path>) -> anyhow::Result<Config> {
    bridle_runtime::bundled::load_or_default(path).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The store named by `--db`, else by the config, else the default SQLite file.
pub async fn stores(config: &Config, db: Option<&str>) -> anyhow::Result<Stores> {
    let url = db.or(config.store_url.as_deref()).unwrap_or("sqlite://bridle-data/bridle.db");
    let stores = Stores::open(url).await.with_context(|| format!("opening store `{url}`"))?;
    Ok(stores.with_audit_settings(&config.audit))
}
