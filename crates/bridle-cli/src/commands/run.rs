//! `bridle run`: runs a workflow file on the configured runtime (its store, checkpoints and
//! hooks) with a progress line per node on stderr, or resumes a paused run.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use bridle_core::checkpoint::ThreadStatus;
use bridle_runtime::graph::{Event, RunOutcome};
use bridle_runtime::runs::Runs;
use bridle_runtime::runtime::RuntimeBuilder;
use bridle_runtime::workflow::load;
use serde_json::{Value, json};

use super::out::line;

// The arguments of `bridle run` (its help is the variant's doc in main.rs).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The workflow file.
    pub file: PathBuf,
    /// The run's input: a JSON object of state keys.
    #[arg(long, value_name = "JSON")]
    pub input: Option<String>,
    /// Model: a TOML file with an `[llm]` section, or a scripted model's script (default: the
    /// configuration's `[llm]`).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Resume this paused run (with `--interrupt` and `--value`).
    #[arg(long, value_name = "RUN_ID", requires_all = ["interrupt", "value"], conflicts_with = "input")]
    pub resume: Option<String>,
    /// The interrupt answered (printed when the run paused).
    #[arg(long, value_name = "ID", requires = "resume")]
    pub interrupt: Option<String>,
    /// The answer, as JSON (an approval node stores it in its output).
    #[arg(long, value_name = "JSON", requires = "resume")]
    pub value: Option<String>,
}

fn parse_json(what: &str, text: &str) -> anyhow::Result<Value> {
    serde_json::from_str(text).with_context(|| format!("{what} is not JSON"))
}

/// One progress line per node and pause, on stderr (stdout keeps the result).
fn progress(event: &Event, started: Instant) {
    let at = format!("{:>7.2}s", started.elapsed().as_secs_f64());
    let text = match event {
        Event::NodeEnter { step, node, .. } => format!("{at}  step {step:>3}  ▶ {node}"),
        Event::NodeExit { node, duration_us, .. } => {
            format!(
                "{at}            ✓ {node} ({:.1} ms)",
                f64::from(u32::try_from(*duration_us).unwrap_or(u32::MAX)) / 1000.0
            )
        }
        Event::NodeError { node, error, retrying, .. } => {
            format!(
                "{at}            ✗ {node}: {} {}{}",
                error.code,
                error.message,
                if *retrying { " (retrying)" } else { "" }
            )
        }
        Event::Custom { name, payload, .. } if name == "tool_call_decided" => format!(
            "{at}              {} → {}",
            payload.get("tool").and_then(Value::as_str).unwrap_or("?"),
            payload.get("code").and_then(Value::as_str).unwrap_or("executed")
        ),
        Event::Custom { name, payload, .. } if name == "loop_iteration" => format!(
            "{at}              loop {} iteration {}/{}",
            payload.get("node").and_then(Value::as_str).unwrap_or("?"),
            payload.get("iteration").unwrap_or(&Value::Null),
            payload.get("max").unwrap_or(&Value::Null)
        ),
        Event::Interrupted { interrupts } => format!("{at}  paused: {} waiting", interrupts.len()),
        _ => return,
    };
    eprintln!("{text}");
}

/// The state without the engine's bookkeeping keys (`_route`, `_loops`, `_visits`).
fn visible(state: &Value) -> Value {
    match state {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(k, _)| !k.starts_with('_')).map(|(k, v)| (k.clone(), v.clone())).collect())
        }
        other => other.clone(),
    }
}

fn report(outcome: &RunOutcome, file: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let code = if outcome.error.is_some() { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    if json {
        let body = json!({
            "run_id": outcome.thread_id,
            "status": outcome.status.as_str(),
            "steps": outcome.steps,
            "state": visible(&outcome.state),
            "interrupts": outcome.interrupts,
            "error": outcome.error,
        });
        line(&body.to_string())?;
        return Ok(code);
    }
    line(&format!("run {}: {} after {} steps", outcome.thread_id, outcome.status.as_str(), outcome.steps))?;
    if let Some(e) = &outcome.error {
        line(&format!("error {}: {}", e.code, e.message))?;
    }
    if outcome.status == ThreadStatus::Interrupted {
        for i in &outcome.interrupts {
            line(&format!("waiting: {} at node `{}`", i.id, i.node))?;
            line(&format!("  {}", i.payload))?;
            if let Some(approval) = i.payload.get("approval_id").and_then(Value::as_str) {
                line(&format!("  approve with: bridle approvals approve {approval} --token OPERATOR_TOKEN"))?;
            }
            line(&format!(
                "  resume with:  bridle run {} --resume {} --interrupt {} --value '{{\"approved\": true}}'",
                file.display(),
                outcome.thread_id,
                i.id
            ))?;
        }
    } else {
        line(&serde_json::to_string_pretty(&visible(&outcome.state))?)?;
    }
    Ok(code)
}

/// Runs (or resumes) the workflow and prints how it ended; exit 1 when it failed, 2 when the
/// file is refused.
pub async fn run(g: &super::Global, args: &Args) -> anyhow::Result<ExitCode> {
    let config = Arc::new(super::config(g.config())?);
    let workflow = match load(&args.file, &config) {
        Ok(w) => w,
        Err(rejection) => {
            if g.json {
                line(&json!({"error": rejection}).to_string())?;
            } else {
                eprintln!("refused {}: {}", rejection.code, args.file.display());
                let problems = rejection.detail.get("problems").and_then(Value::as_array).cloned().unwrap_or_default();
                for p in &problems {
                    eprintln!(
                        "  - {}: {}",
                        p.get("at").and_then(Value::as_str).unwrap_or("?"),
                        p.get("message").and_then(Value::as_str).unwrap_or("?")
                    );
                }
                if problems.is_empty() {
                    eprintln!("  {}", rejection.message);
                }
            }
            return Ok(ExitCode::from(2));
        }
    };
    let mut builder = RuntimeBuilder::new(config.clone()).tools(super::tools());
    if let Some(db) = g.db() {
        builder = builder.store_url(db);
    }
    if let Some(model) = &args.model {
        builder = builder.llm(super::replay::model_from(model)?.0);
    }
    let runtime = Arc::new(builder.build().await.context("building the runtime")?);
    // Its chains' heads are signed once more before the process exits, even if the runtime is
    // still shared then.
    super::track(&runtime.stores);
    // The run goes through the server's run manager: the same run ids, tracking and kill
    // switches as a run started over `/v1/runs`.
    let runs = Runs::new(runtime.clone(), bridle_apps::pipelines::registry());
    let started = Instant::now();
    let mut events = match (&args.resume, &args.interrupt, &args.value) {
        (Some(run_id), Some(interrupt), Some(value)) => {
            let value = parse_json("--value", value)?;
            eprintln!("resuming {run_id} at {interrupt}");
            runs.resume_file(workflow, run_id, interrupt, value)?
        }
        _ => {
            let input = match args.input.as_deref() {
                Some(text) => parse_json("--input", text)?,
                None => json!({}),
            };
            let (name, nodes) = (workflow.name.clone(), workflow.node_count());
            let run = runs.start_file(workflow, input)?;
            eprintln!("run {}: workflow `{name}` ({nodes} nodes, deadline {} s)", run.thread, run.allowance.as_secs());
            run.events
        }
    };
    let mut outcome = None;
    while let Some(event) = events.recv().await {
        if !g.json {
            progress(&event, started);
        }
        if let Event::Finished { outcome: o } = event {
            outcome = Some(o);
            break;
        }
    }
    let outcome = outcome.context("the run ended without an outcome")?;
    let code = report(&outcome, &args.file, g.json)?;
    drop(runs);
    runtime.drain().await;
    if let Ok(runtime) = Arc::try_unwrap(runtime) {
        runtime.shutdown().await;
    }
    Ok(code)
}
