//! `bridle models register|list|validate|promote`: the model registry on the store. A model is a
//! model file (an `[llm]` TOML file or a scripted model's script, as `bridle replay --model`
//! takes) recorded with its SHA-256; validation replays the tenant's held-out decisions on it;
//! promotion moves it one stage forward only when that validation passes, else says why and
//! exits 1 with the stage unchanged.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use bridle_core::models::{ModelEntry, Stage, Validation};
use bridle_runtime::feedback::hooks;
use bridle_runtime::models::{self, PromoteError, Promotion};
use bridle_runtime::store::Stores;

use super::feedback::Common;
use super::out;

/// `bridle models …`.
#[derive(Debug, clap::Subcommand)]
pub enum ModelsCommand {
    /// Register a model file as a candidate.
    Register {
        /// Model name (unique per tenant).
        name: String,
        /// The model file: a TOML file with an `[llm]` section, or a scripted model's script.
        #[arg(long)]
        model: PathBuf,
        /// Tenant whose decisions validate it.
        #[arg(long, default_value = "fab-1")]
        tenant: String,
        /// Who registers it.
        #[arg(long, default_value = "cli")]
        by: String,
    },
    /// The tenant's models with stage and hash.
    List {
        /// Tenant.
        #[arg(long, default_value = "fab-1")]
        tenant: String,
    },
    /// Replay held-out decisions on the model and judge the agreement (exit 1 when it fails).
    Validate {
        /// Model name.
        name: String,
        #[command(flatten)]
        validation: ValidationArgs,
    },
    /// Validate, then move the model one stage forward if it passed; otherwise say why and exit 1.
    Promote {
        /// Model name.
        name: String,
        /// The stage to move to (must be the next one; default: the next one).
        #[arg(long, value_parser = parse_stage)]
        to: Option<bridle_core::models::Stage>,
        /// Who promotes (the audit event's subject).
        #[arg(long, default_value = "cli")]
        by: String,
        #[command(flatten)]
        validation: ValidationArgs,
    },
}

/// How a validation is run.
#[derive(Debug, clap::Args)]
pub struct ValidationArgs {
    /// Tenant whose decisions validate the model.
    #[arg(long, default_value = "fab-1")]
    tenant: String,
    /// The most recent replayable decisions without feedback replayed.
    #[arg(long, default_value_t = bridle_core::models::DEFAULT_HOLDOUT)]
    holdout: u32,
    /// Agreement needed, 0–1.
    #[arg(long, default_value_t = bridle_core::models::DEFAULT_THRESHOLD)]
    threshold: f64,
    /// Only decisions of this agent.
    #[arg(long)]
    agent: Option<String>,
}

/// Runs `bridle models …`.
pub async fn run(g: &super::Global, command: &ModelsCommand) -> anyhow::Result<ExitCode> {
    match command {
        ModelsCommand::Register { name, model, tenant, by } => register(&Common::new(g, tenant), name, model, by).await,
        ModelsCommand::List { tenant } => list(&Common::new(g, tenant)).await,
        ModelsCommand::Validate { name, validation: v } => validate(&Common::new(g, &v.tenant), name, v).await,
        ModelsCommand::Promote { name, to, by, validation: v } => {
            promote(&Common::new(g, &v.tenant), name, v, *to, by).await
        }
    }
}

async fn register(c: &Common<'_>, name: &str, model: &Path, by: &str) -> anyhow::Result<ExitCode> {
    let config = super::config(c.config)?;
    let stores = super::stores(&config, c.db).await?;
    let bytes = std::fs::read(model).with_context(|| format!("reading `{}`", model.display()))?;
    // Refuse a file that is not a model now rather than at validation.
    super::replay::model_from(model)?;
    let path = std::fs::canonicalize(model).unwrap_or_else(|_| model.to_path_buf());
    let entry =
        models::candidate(c.tenant, name, &path.display().to_string(), &bytes, by, time::OffsetDateTime::now_utc());
    match stores.models.register_model(&entry).await {
        Ok(()) => {}
        Err(bridle_core::ports::StoreError::Duplicate(_)) => {
            eprintln!("refused: `{name}` is already registered in tenant `{}`", c.tenant);
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => return Err(e.into()),
    }
    if c.json {
        out::line(&serde_json::to_string(&entry)?)?;
    } else {
        out::line(&format!("registered {name} (candidate), sha256 {}", entry.config_hash))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn list(c: &Common<'_>) -> anyhow::Result<ExitCode> {
    let config = super::config(c.config)?;
    let stores = super::stores(&config, c.db).await?;
    for m in stores.models.models(c.tenant).await? {
        if c.json {
            out::line(&serde_json::to_string(&m)?)?;
            continue;
        }
        let last = m.validation.as_ref().map(|v| format!(", promoted on {}", v.reason)).unwrap_or_default();
        out::line(&format!(
            "{:<20} {:<9} sha256 {}… {}{last}",
            m.name,
            m.stage.as_str(),
            m.config_hash.get(..12).unwrap_or_default(),
            m.config_path
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn load(stores: &Stores, tenant: &str, name: &str) -> anyhow::Result<Option<ModelEntry>> {
    let entry = stores.models.model(tenant, name).await?;
    if entry.is_none() {
        eprintln!("refused: not_found: no model `{name}` in tenant `{tenant}`");
    }
    Ok(entry)
}

/// Replays the held-out decisions on the model's file as it is now.
async fn run_validation(
    config: &bridle_core::config::Config,
    stores: &Stores,
    tenant: &str,
    entry: &ModelEntry,
    v: &ValidationArgs,
) -> anyhow::Result<Validation> {
    let path = Path::new(&entry.config_path);
    let bytes = std::fs::read(path).with_context(|| format!("reading `{}`", path.display()))?;
    let hash = models::file_hash(&bytes);
    let (client, _) = super::replay::model_from(path)?;
    let records = models::held_out(stores, tenant, v.holdout, v.agent.as_deref()).await?;
    eprintln!("validating {} on {} held-out decisions", entry.name, records.len());
    let now = time::OffsetDateTime::now_utc();
    let (validation, _) =
        models::validate(client, config.registry.clone(), entry, &hash, &records, v.threshold, now).await;
    Ok(validation)
}

async fn validate(c: &Common<'_>, name: &str, v: &ValidationArgs) -> anyhow::Result<ExitCode> {
    let config = super::config(c.config)?;
    let stores = super::stores(&config, c.db).await?;
    let Some(entry) = load(&stores, c.tenant, name).await? else { return Ok(ExitCode::FAILURE) };
    let validation = run_validation(&config, &stores, c.tenant, &entry, v).await?;
    if c.json {
        out::line(&serde_json::to_string(&validation)?)?;
    } else {
        let verdict = if validation.passed { "passed" } else { "FAILED" };
        out::line(&format!("{} ({}): validation {verdict}: {}", entry.name, entry.stage.as_str(), validation.reason))?;
    }
    Ok(if validation.passed { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

async fn promote(
    c: &Common<'_>,
    name: &str,
    v: &ValidationArgs,
    to: Option<Stage>,
    by: &str,
) -> anyhow::Result<ExitCode> {
    let config = super::config(c.config)?;
    let stores = super::stores(&config, c.db).await?;
    let Some(entry) = load(&stores, c.tenant, name).await? else { return Ok(ExitCode::FAILURE) };
    let validation = run_validation(&config, &stores, c.tenant, &entry, v).await?;
    let secret = std::env::var(&config.webhooks.secret_env).ok();
    let hooks = hooks::from_settings(&config.webhooks, secret).map_err(anyhow::Error::msg)?;
    let now = time::OffsetDateTime::now_utc();
    let p = Promotion { tenant: c.tenant, name, to, validation: &validation, actor: by, now };
    match models::promote(&stores, &hooks, p).await {
        Ok((updated, _)) => {
            if c.json {
                out::line(&serde_json::to_string(&updated)?)?;
            } else {
                out::line(&format!(
                    "promoted {}: {} → {} ({})",
                    updated.name,
                    entry.stage.as_str(),
                    updated.stage.as_str(),
                    validation.reason
                ))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(PromoteError::Refused(r)) => {
            if c.json {
                out::line(
                    &serde_json::json!({"error": {"code": r.code().as_str(), "message": r.to_string()}}).to_string(),
                )?;
            } else {
                eprintln!("refused: {}: {r}", r.code().as_str());
            }
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

/// Parses a stage name for `--to`.
pub fn parse_stage(s: &str) -> Result<Stage, String> {
    Stage::parse(s).ok_or_else(|| format!("`{s}` is not a stage (candidate, canary, stable)"))
}
