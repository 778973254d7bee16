//! `bridle feedback add|list|analyze`: outcomes of decisions from a terminal (on the store, as
//! the API stores them), and the analysis — Spearman's rho behind the power gate, the CUSUM scan
//! of the ratings, and a recalibrated `[levels] low_confidence` printed as a config diff.

use std::path::Path;
use std::process::ExitCode;

use bridle_core::drift::Params;
use bridle_core::feedback::{FeedbackInput, Source, stats::Correlation};
use bridle_runtime::feedback::{AnalyzeOptions, CollectError, analyze, collect, hooks};

use super::out;

/// Store and output options shared by the subcommands (and `bridle models`).
pub struct Common<'a> {
    pub config: Option<&'a Path>,
    pub db: Option<&'a str>,
    pub json: bool,
    pub tenant: &'a str,
}

impl<'a> Common<'a> {
    /// The global options with the subcommand's tenant.
    pub fn new(g: &'a super::Global, tenant: &'a str) -> Self {
        Self { config: g.config(), db: g.db(), json: g.json, tenant }
    }
}

/// `bridle feedback …`.
#[derive(Debug, clap::Subcommand)]
pub enum FeedbackCommand {
    /// Rate one decision of the tenant (stored as the API stores it; `outcome_collected` fires).
    Add(AddArgs),
    /// The tenant's feedback, newest first; `--json` prints one JSON line each.
    List {
        /// Tenant.
        #[arg(long, default_value = "fab-1")]
        tenant: String,
        /// Only this decision's.
        #[arg(long)]
        decision: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Analyse the tenant's feedback against its decisions.
    Analyze {
        /// Tenant.
        #[arg(long, default_value = "fab-1")]
        tenant: String,
        /// Only decisions of this agent.
        #[arg(long)]
        agent: Option<String>,
        /// The most recent feedback records read.
        #[arg(long, default_value_t = 10_000)]
        limit: u32,
        /// Ratings that set the CUSUM baseline.
        #[arg(long, default_value_t = 30)]
        baseline: usize,
    },
}

// The arguments of `bridle feedback add` (its help is the variant's doc above).
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Decision id.
    pub decision: String,
    /// Tenant of the decision.
    #[arg(long, default_value = "fab-1")]
    pub tenant: String,
    /// Rating, 1 (bad) to 5 (good).
    #[arg(long)]
    pub rating: Option<u8>,
    /// Score, 0 (bad) to 1 (good).
    #[arg(long)]
    pub score: Option<f64>,
    /// Comment (secrets and personal data masked before it is stored).
    #[arg(long)]
    pub comment: Option<String>,
    /// The outcome was scored automatically, not by a person.
    #[arg(long)]
    pub automatic: bool,
    /// Who rates.
    #[arg(long, default_value = "cli")]
    pub rater: String,
}

/// Runs `bridle feedback …`.
pub async fn run(g: &super::Global, command: &FeedbackCommand) -> anyhow::Result<ExitCode> {
    match command {
        FeedbackCommand::Add(args) => add(&Common::new(g, &args.tenant), args).await,
        FeedbackCommand::List { tenant, decision, limit } => {
            list(&Common::new(g, tenant), decision.as_deref(), *limit).await
        }
        FeedbackCommand::Analyze { tenant, agent, limit, baseline } => {
            analyze_cmd(&Common::new(g, tenant), agent.as_deref(), *limit, *baseline).await
        }
    }
}

async fn add(c: &Common<'_>, a: &AddArgs) -> anyhow::Result<ExitCode> {
    let config = super::config(c.config)?;
    let stores = super::stores(&config, c.db).await?;
    let secret = std::env::var(&config.webhooks.secret_env).ok();
    let hooks = hooks::from_settings(&config.webhooks, secret).map_err(anyhow::Error::msg)?;
    let input = FeedbackInput {
        rating: a.rating,
        score: a.score,
        comment: a.comment.clone(),
        source: if a.automatic { Source::Automatic } else { Source::Operator },
    };
    let now = time::OffsetDateTime::now_utc();
    match collect(&stores, &hooks, c.tenant, &a.decision, &a.rater, input, now).await {
        Ok((feedback, results)) => {
            if c.json {
                out::line(&serde_json::to_string(&feedback)?)?;
            } else {
                out::line(&format!("stored {} on decision {}", feedback.feedback_id, feedback.decision_id))?;
            }
            for r in results.iter().filter(|r| r.error.is_some()) {
                eprintln!("hook {} failed: {}", r.hook, r.error.as_deref().unwrap_or_default());
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(CollectError::Store(e)) => Err(e.into()),
        Err(e @ CollectError::Invalid(_)) => {
            eprintln!("refused: bad_request: {e}");
            Ok(ExitCode::FAILURE)
        }
        Err(e @ CollectError::UnknownDecision(_)) => {
            eprintln!("refused: not_found: {e} in tenant `{}`", c.tenant);
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn list(c: &Common<'_>, decision: Option<&str>, limit: u32) -> anyhow::Result<ExitCode> {
    let config = super::config(c.config)?;
    let stores = super::stores(&config, c.db).await?;
    for f in stores.feedback.feedback(c.tenant, decision, limit).await? {
        if c.json {
            out::line(&serde_json::to_string(&f)?)?;
            continue;
        }
        let rating = f.rating.map(|r| format!("rating {r}")).unwrap_or_default();
        let score = f.score.map(|s| format!("score {s}")).unwrap_or_default();
        out::line(&format!(
            "{} {} {} {rating} {score} by {} ({}){}",
            f.created_at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
            f.decision_id,
            f.feedback_id,
            f.rater,
            f.source.as_str(),
            f.comment.map(|c| format!(": {c}")).unwrap_or_default()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn correlation_line(c: &Correlation) -> String {
    match (c.rho, c.ci95) {
        (Some(rho), Some((lo, hi))) => format!(
            "{}: rho {rho:.3} (95 % {lo:.2}…{hi:.2}), n = {}, {}{}",
            c.of,
            c.n,
            c.power.as_str(),
            c.warning.as_ref().map(|w| format!(" — {w}")).unwrap_or_default()
        ),
        _ => format!("{}: {} — {}", c.of, c.power.as_str(), c.warning.clone().unwrap_or_default()),
    }
}

async fn analyze_cmd(c: &Common<'_>, agent: Option<&str>, limit: u32, baseline: usize) -> anyhow::Result<ExitCode> {
    let config = super::config(c.config)?;
    let stores = super::stores(&config, c.db).await?;
    let options = AnalyzeOptions {
        limit,
        agent: agent.map(str::to_owned),
        drift: Params { baseline_len: baseline, ..Params::default() },
    };
    let low = config.levels.low_confidence;
    let (analysis, _) = analyze(stores.feedback.as_ref(), stores.decisions.as_ref(), c.tenant, low, &options).await?;
    if c.json {
        out::line(&serde_json::to_string(&analysis)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    out::line(&format!("tenant {}: {} rated decisions", c.tenant, analysis.decisions))?;
    out::line(&correlation_line(&analysis.confidence_rating))?;
    out::line(&correlation_line(&analysis.score_rating))?;
    let d = &analysis.rating_drift;
    let baseline = match d.baseline {
        Some((m, s)) => format!("μ {m:.2} σ {s:.2}"),
        None => format!("learning ({} of {})", d.n, options.drift.baseline_len),
    };
    out::line(&format!(
        "ratings CUSUM: {} ({baseline}), {} critical, {} warnings over {} ratings",
        d.status.as_str(),
        d.critical,
        d.warnings,
        d.n
    ))?;
    match &analysis.proposal {
        None => out::line(
            "low_confidence: no proposal (insufficient_data: fewer than 10 rated decisions with a confidence)",
        )?,
        Some(p) if p.diff().is_empty() => out::line(&format!("low_confidence = {} stays: {}", p.current, p.reason))?,
        Some(p) => {
            out::line(&format!("proposal: {}", p.reason))?;
            for line in p.diff().lines() {
                out::line(line)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
