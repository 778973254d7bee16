//! `bridle replay`: recorded decisions asked again of the current (or a given) model, with
//! agreement per agent, a JSON + HTML report, `--ab` for two models side by side, and `--run`
//! to find where one run first diverges.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use bridle_apps::replay_html as html;
use bridle_core::decision::DecisionRecord;
use bridle_core::replay::Tolerance;
use bridle_runtime::llm::{LlmClient, ScriptedModel};
use bridle_runtime::replay::{AbReport, ReplayReport, Replayer};
use bridle_runtime::runtime::{Env, model_client};

// What `bridle replay` was asked (its help is the variant's doc in main.rs).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tenant whose decision log is replayed.
    #[arg(long)]
    pub tenant: String,
    /// Model to replay on: a TOML file with an `[llm]` section, or a scripted model's script
    /// (default: the configuration's `[llm]`).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Two model files, replayed side by side on the same decisions.
    #[arg(long, num_args = 2, value_names = ["CONFIG_A", "CONFIG_B"], conflicts_with_all = ["model", "run"])]
    pub ab: Option<Vec<PathBuf>>,
    /// Replay one pipeline run in order and stop at the first decision that disagrees.
    #[arg(long)]
    pub run: Option<String>,
    /// Keep only matching records: `agent=A`, `verdict=V`, `run=R` (repeatable).
    #[arg(long = "filter", value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
    /// The most recent decisions replayed.
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
    /// Relative tolerance for numeric parameters.
    #[arg(long, default_value_t = 0.01)]
    pub tolerance: f64,
    /// Write FILE.json and FILE.html.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Release gate: exit 1 when agreement on the recorded set is below THRESHOLD (0–1,
    /// e.g. 0.95), naming which of model, prompt, tool schema and policy changed since the
    /// records were made.
    #[arg(long, value_name = "THRESHOLD", conflicts_with_all = ["ab", "run"])]
    pub gate: Option<f64>,
}

/// A model from a file: an `[llm]` section like `bridle.toml`'s, or a scripted model's script.
pub fn model_from(path: &Path) -> anyhow::Result<(Arc<dyn LlmClient>, String)> {
    let text = bridle_runtime::bundled::read_text(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let label = path.display().to_string();
    if text.lines().any(|l| l.trim() == "[llm]") {
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let files = move |rel: &str| bridle_runtime::bundled::read_text(&dir.join(rel));
        let settings = bridle_core::config::llm_from_toml(&text, &files).map_err(|e| anyhow::anyhow!("{e}"))?;
        return Ok((model_client(&settings, &Env::default())?, label));
    }
    Ok((Arc::new(ScriptedModel::from_toml_str(&text).map_err(|e| anyhow::anyhow!("`{label}`: {e}"))?), label))
}

/// Keeps the records every `key=value` filter admits (`agent`, `verdict`, `run`).
fn filtered(mut records: Vec<DecisionRecord>, filters: &[String]) -> anyhow::Result<Vec<DecisionRecord>> {
    for f in filters {
        let Some((key, value)) = f.split_once('=') else { bail!("filter `{f}` is not KEY=VALUE") };
        match key {
            "agent" => records.retain(|r| r.agent == value),
            "verdict" => records.retain(|r| r.final_verdict == value),
            "run" => records.retain(|r| r.pipeline_run_id == value),
            other => bail!("unknown filter `{other}` (agent, verdict, run)"),
        }
    }
    Ok(records)
}

fn progress(done: usize, total: usize) {
    if done == total || done.is_multiple_of(10) {
        eprintln!("replayed {done}/{total}");
    }
}

fn print_report(r: &ReplayReport) -> anyhow::Result<()> {
    super::out::line(&format!("model {}: {}/{} agree ({:.1}%)", r.model, r.agree, r.total, r.rate() * 100.0))?;
    for a in &r.agents {
        super::out::line(&format!(
            "  {}: {}/{} agree ({:.1}%), same action {}, same parameters {}, same verdict {}, errors {}",
            a.agent,
            a.agree,
            a.total,
            a.rate() * 100.0,
            a.action,
            a.parameters,
            a.verdict,
            a.errors
        ))?;
    }
    for item in r.disagreements() {
        let why = match (&item.error, &item.comparison) {
            (Some(e), _) => e.clone(),
            (None, Some(c)) => c.differences.join("; "),
            (None, None) => String::new(),
        };
        super::out::line(&format!("  differs {} ({}): {why}", item.decision_id, item.agent))?;
    }
    Ok(())
}

/// Writes `STEM.json` and `STEM.html` beside each other.
fn write_report(path: &Path, json: &serde_json::Value, page: &str) -> anyhow::Result<()> {
    let (json_path, html_path) = (path.with_extension("json"), path.with_extension("html"));
    std::fs::write(&json_path, serde_json::to_vec_pretty(json)?).with_context(|| format!("{}", json_path.display()))?;
    std::fs::write(&html_path, page).with_context(|| format!("{}", html_path.display()))?;
    eprintln!("report: {} and {}", json_path.display(), html_path.display());
    Ok(())
}

pub async fn run(g: &super::Global, args: &Args) -> anyhow::Result<ExitCode> {
    let config = super::config(g.config())?;
    let stores = super::stores(&config, g.db()).await?;
    let tolerance = Tolerance { relative: args.tolerance, ..Tolerance::default() };
    let registry = config.registry.clone();
    let replayer = |client: Arc<dyn LlmClient>| Replayer::new(client, registry.clone(), tolerance);
    let current = || -> anyhow::Result<(Arc<dyn LlmClient>, String)> {
        match args.model.as_deref() {
            Some(path) => model_from(path),
            None => Ok((model_client(&config.llm, &Env::from_process())?, "configured model".to_owned())),
        }
    };

    if let Some(run_id) = args.run.as_deref() {
        // Every record of the run, however old: a run is small.
        let records = stores.decisions.recent(&args.tenant, u32::MAX).await?;
        let (client, _) = current()?;
        let divergence = replayer(client).replay_run(run_id, &records).await;
        if divergence.recorded == 0 {
            bail!("no decision records of run `{run_id}` in tenant `{}`", args.tenant);
        }
        if g.json {
            super::out::line(&serde_json::to_string(&divergence)?)?;
        } else {
            match &divergence.first {
                None => super::out::line(&format!("run {run_id}: all {} decisions agree", divergence.recorded))?,
                Some(item) => super::out::line(&format!(
                    "run {run_id}: diverges at decision {} of {}, agent {} ({}): {}",
                    divergence.replayed,
                    divergence.recorded,
                    item.agent,
                    item.decision_id,
                    item.error
                        .clone()
                        .or_else(|| item.comparison.as_ref().map(|c| c.differences.join("; ")))
                        .unwrap_or_default()
                ))?,
            }
        }
        return Ok(ExitCode::SUCCESS);
    }

    // Without filters the newest `limit` records are all that is needed; filters look at all.
    let fetch = if args.filters.is_empty() { args.limit } else { u32::MAX };
    let mut records = filtered(stores.decisions.recent(&args.tenant, fetch).await?, &args.filters)?;
    // The last `limit` decisions, replayed oldest first.
    records.truncate(usize::try_from(args.limit).unwrap_or(usize::MAX));
    records.reverse();

    let ab = args.ab.as_deref().and_then(|v| match v {
        [a, b] => Some((a.as_path(), b.as_path())),
        _ => None,
    });
    if let Some((a, b)) = ab {
        let (ca, la) = model_from(a)?;
        let (cb, lb) = model_from(b)?;
        let ra = replayer(ca).replay_all(&la, &records, progress).await;
        let rb = replayer(cb).replay_all(&lb, &records, progress).await;
        let ab = AbReport::new(ra, rb, &tolerance);
        if g.json {
            super::out::line(&serde_json::to_string(&ab)?)?;
        } else {
            print_report(&ab.a)?;
            print_report(&ab.b)?;
            super::out::line(&format!("A and B agree with each other on {}/{}", ab.a_b_agree, ab.a.total))?;
        }
        if let Some(path) = args.report.as_deref() {
            write_report(path, &serde_json::to_value(&ab)?, &html::ab_page(&ab))?;
        }
        return Ok(ExitCode::SUCCESS);
    }

    if let Some(t) = args.gate
        && !(0.0..=1.0).contains(&t)
    {
        bail!("--gate takes an agreement between 0 and 1 (0.95 for 95%), not {t}");
    }
    let (client, label) = current()?;
    let report = replayer(client).replay_all(&label, &records, progress).await;
    let verdict = args.gate.map(|threshold| {
        let replay_model = args.model.as_ref().map(|_| label.as_str());
        bridle_runtime::replay::gate::judge(&report, &records, &config, replay_model, threshold)
    });
    if g.json {
        match &verdict {
            Some(v) => super::out::line(&serde_json::json!({"report": report, "gate": v}).to_string())?,
            None => super::out::line(&serde_json::to_string(&report)?)?,
        }
    } else {
        print_report(&report)?;
    }
    if let Some(path) = args.report.as_deref() {
        write_report(path, &serde_json::to_value(&report)?, &html::report_page(&report))?;
    }
    let Some(verdict) = verdict else { return Ok(ExitCode::SUCCESS) };
    if !g.json {
        for c in &verdict.changes {
            let agent = c.agent.as_deref().map(|a| format!(" of `{a}`")).unwrap_or_default();
            super::out::line(&format!(
                "  {}{agent} changed: recorded {} → now {}",
                c.what,
                c.recorded.join(", "),
                c.current
            ))?;
        }
    }
    let summary = if verdict.total == 0 {
        "release gate FAILED: no recorded decisions to replay".to_owned()
    } else {
        verdict.summary()
    };
    if verdict.passed {
        if !g.json {
            super::out::line(&summary)?;
        }
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("{summary}");
        Ok(ExitCode::from(1))
    }
}
