//! `bridle lab loop|plan|judge|prompt`: seed 003's workbench labs. `loop` replays a transcript
//! (JSON) through the gate as the workbench principal; `plan` reads and checks a plan; `judge`
//! labels an answer to the prompt-injection lab; `prompt` prints a lab's prompt. Exit 0 whenever
//! a report is printed (pass or fail), 2 when the input is refused by a lab limit (its code is
//! printed).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use bridle_apps::lab::judge::{JudgeReport, judge};
use bridle_apps::lab::loop_lab::{Goal, LoopInput, LoopReport, Stop, stop_name};
use bridle_apps::lab::plan::{PlanReport, check_plan, element_name};
use bridle_apps::lab::{LabError, replay_loop};
use bridle_apps::lab::{Lang, prompt};
use bridle_core::verdict::clip;
use bridle_core::{Rejection, RunContext};
use bridle_runtime::check::{WORKBENCH_PRINCIPAL, gate, workbench_principal};
use bridle_runtime::store::Stores;

/// Exit code of an input refused by a lab limit.
const REFUSED: u8 = 2;

/// `bridle lab …`.
#[derive(Debug, clap::Subcommand)]
pub enum LabCommand {
    /// Replay a transcript (JSON: `goal`, `answers`, optional `value`, `max_rounds`,
    /// `stop_after_failures`, `tolerance`) through the gate as the workbench principal.
    Loop(LoopArgs),
    /// Read a plan into steps and check count, numbering, duplicate titles and the five elements.
    Plan {
        /// Steps requested: 5, 6 or 8.
        #[arg(long, default_value_t = 5)]
        steps: usize,
        /// The plan file, or `-` for stdin.
        file: Option<PathBuf>,
    },
    /// Judge an answer to the prompt-injection lab: followed, reported or no mention.
    Judge {
        /// The marker string (default: the sample letter's).
        #[arg(long)]
        marker: Option<String>,
        /// The answer file, or `-` for stdin.
        file: Option<PathBuf>,
    },
    /// Print a lab's prompt.
    Prompt(PromptArgs),
}

// The arguments of `bridle lab loop` (its help is the variant's doc above).
#[derive(Debug, clap::Args)]
pub struct LoopArgs {
    /// Round limit, 1–10 (overrides the file's).
    #[arg(long)]
    pub max_rounds: Option<usize>,
    /// Failed rounds in a row that stop the loop, 2 or 3 (overrides the file's).
    #[arg(long)]
    pub stop_after_failures: Option<usize>,
    /// The transcript file, or `-` for stdin.
    pub file: Option<PathBuf>,
}

// The arguments of `bridle lab prompt` (its help is the variant's doc above).
#[derive(Debug, clap::Args)]
pub struct PromptArgs {
    /// Which lab.
    #[arg(value_enum)]
    pub lab: PromptLab,
    /// Language: ko or en.
    #[arg(long, default_value = "ko", value_parser = parse_lang)]
    pub lang: bridle_apps::lab::Lang,
    /// Loop goal: guardrail, scaffold or force.
    #[arg(long, default_value = "guardrail", value_parser = parse_goal)]
    pub goal: bridle_apps::lab::loop_lab::Goal,
    /// Loop round limit, 1–10.
    #[arg(long, default_value_t = 6)]
    pub max_rounds: usize,
    /// Plan steps: 5, 6 or 8.
    #[arg(long, default_value_t = 5)]
    pub steps: usize,
    /// Delimiter seed, 1–999999.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Leave out the rule that the delimited text is data.
    #[arg(long)]
    pub undefended: bool,
    /// The plan's task or the injection document (default: the built-in one), or `-`.
    pub file: Option<PathBuf>,
}

/// Runs `bridle lab …`.
pub async fn run(g: &super::Global, command: &LabCommand) -> anyhow::Result<ExitCode> {
    match command {
        LabCommand::Loop(args) => run_loop(g, args).await,
        LabCommand::Plan { steps, file } => run_plan(g.json, *steps, file.as_deref()),
        LabCommand::Judge { marker, file } => run_judge(g.json, marker.as_deref(), file.as_deref()),
        LabCommand::Prompt(args) => run_prompt(g.json, args),
    }
}

/// `bridle lab loop`: the transcript file is `{goal, value?, answers: [..], max_rounds?,
/// stop_after_failures?, tolerance?}`.
async fn run_loop(g: &super::Global, args: &LoopArgs) -> anyhow::Result<ExitCode> {
    let text = read_input(args.file.as_deref())?;
    let mut input: LoopInput = serde_json::from_str(&text)
        .context("the transcript must be JSON: {\"goal\": \"guardrail|scaffold|force\", \"answers\": [\"…\"], …}")?;
    input.max_rounds = args.max_rounds.or(input.max_rounds);
    input.stop_after_failures = args.stop_after_failures.or(input.stop_after_failures);
    let config = Arc::new(super::config(g.config())?);
    let principal = workbench_principal(&config)
        .with_context(|| format!("the configuration has no `{WORKBENCH_PRINCIPAL}` principal"))?;
    let limits = config.intake;
    let stores = match g.db() {
        Some(_) => super::stores(&config, g.db()).await?,
        None => Stores::memory(),
    };
    let gate = gate(config, stores, super::tools()).context("building the guard")?;
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let run = RunContext::new(&format!("lab-{}-{}", started.as_millis(), std::process::id()), WORKBENCH_PRINCIPAL);
    match replay_loop(&gate, &principal, &run, input, &limits).await {
        Ok(report) => print(g.json, &report, print_loop),
        Err(LabError::Invalid(r)) => refused(g.json, &r),
        Err(LabError::Gate(e)) => Err(e.into()),
    }
}

/// `bridle lab plan`.
fn run_plan(json: bool, steps: usize, file: Option<&Path>) -> anyhow::Result<ExitCode> {
    let text = read_input(file)?;
    match check_plan(&text, steps) {
        Ok(report) => print(json, &report, print_plan),
        Err(r) => refused(json, &r),
    }
}

/// `bridle lab judge`.
fn run_judge(json: bool, marker: Option<&str>, file: Option<&Path>) -> anyhow::Result<ExitCode> {
    let text = read_input(file)?;
    match judge(&text, marker) {
        Ok(report) => print(json, &report, |r| print_judge(r, &text)),
        Err(r) => refused(json, &r),
    }
}

/// Which lab's prompt `bridle lab prompt` prints.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PromptLab {
    /// The agent-loop prompt for `--goal`.
    Loop,
    /// The planning prompt for `--steps`.
    Plan,
    /// The prompt-injection prompt: the sample letter (or FILE) in delimiters of `--seed`.
    Injection,
}

/// `bridle lab prompt`.
fn run_prompt(json: bool, args: &PromptArgs) -> anyhow::Result<ExitCode> {
    let document = match (args.lab, args.file.as_deref()) {
        (PromptLab::Injection | PromptLab::Plan, file @ Some(_)) => Some(read_input(file)?),
        _ => None,
    };
    let built = match args.lab {
        PromptLab::Loop => prompt::loop_prompt(args.goal, None, args.max_rounds, args.lang)
            .map(|text| serde_json::json!({"prompt": text})),
        PromptLab::Plan => prompt::plan_prompt(document.as_deref().map(str::trim), args.steps, args.lang)
            .map(|text| serde_json::json!({"prompt": text})),
        PromptLab::Injection => prompt::injection_prompt(document.as_deref(), args.seed, !args.undefended, args.lang)
            .map(|p| {
                serde_json::json!({
                    "prompt": p.text,
                    "delimiter": p.delimiter,
                    "closing_delimiter_in_document": p.closing_delimiter_in_document,
                })
            }),
    };
    match built {
        Ok(value) if json => {
            super::out::line(&serde_json::to_string(&value)?)?;
            Ok(ExitCode::SUCCESS)
        }
        Ok(value) => {
            if value["closing_delimiter_in_document"].as_bool() == Some(true) {
                eprintln!("warning: the document contains the closing delimiter (an attempt to break out)");
            }
            super::out::line(value["prompt"].as_str().unwrap_or_default())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(r) => refused(json, &r),
    }
}

fn print<T: serde::Serialize>(
    json: bool,
    report: &T,
    text: impl FnOnce(&T) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    if json {
        super::out::line(&serde_json::to_string(report)?)?;
    } else {
        text(report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints a refusal (`{"error": {"code", "message"}}` with `--json`) and returns exit code 2.
fn refused(json: bool, r: &Rejection) -> anyhow::Result<ExitCode> {
    if json {
        let body = serde_json::json!({"error": {"code": r.code, "message": r.message}});
        super::out::line(&body.to_string())?;
    } else {
        super::out::line(&format!("rejected {}: {}", r.code, r.message))?;
    }
    Ok(ExitCode::from(REFUSED))
}

fn outcome(pass: bool) -> &'static str {
    if pass { "pass" } else { "fail" }
}

fn print_loop(r: &LoopReport) -> anyhow::Result<()> {
    let verdict = outcome(r.reasons.is_empty());
    super::out::line(&format!(
        "loop: {verdict} goal={} value={} rounds={} tool_calls={} failed_calls={} stop={} unused_answers={}",
        serde_json::to_value(r.goal)?.as_str().unwrap_or_default(),
        r.value,
        r.rounds,
        r.tool_calls,
        r.failed_calls,
        stop_name(r.stop),
        r.unused_answers
    ))?;
    for round in &r.round_log {
        if let Some(code) = round.intake_code {
            super::out::line(&format!("round {}: refused at intake {code}", round.round))?;
        } else if round.calls.is_empty() {
            let what = match r.stop {
                Stop::FinalAnswer => "the final answer",
                _ => "a repeated call, not executed",
            };
            super::out::line(&format!("round {}: {what}", round.round))?;
        }
        for c in &round.calls {
            let verdict = match (&c.result, c.code) {
                (Some(result), _) => format!("ok {result}"),
                (None, Some(code)) => format!("rejected {code}"),
                (None, None) => "ok".to_owned(),
            };
            super::out::line(&format!("round {}: {} {} -> {verdict}", round.round, c.tool, c.arguments))?;
        }
    }
    for c in &r.references {
        let found = c.found.map_or_else(|| "not found".to_owned(), |v| format!("found {v}"));
        super::out::line(&format!(
            "reference {} = {}: {} ({found})",
            c.reference.name,
            c.reference.value,
            outcome(c.ok)
        ))?;
    }
    r.reasons.iter().try_for_each(|reason| super::out::line(&format!("reason: {reason}")))
}

fn print_plan(r: &PlanReport) -> anyhow::Result<()> {
    let verdict = outcome(r.reasons.is_empty());
    let format = serde_json::to_value(r.format)?;
    let format = format.as_str().unwrap_or_default();
    super::out::line(&format!("plan: {verdict} format={format} steps={}/{}", r.step_count, r.requested_steps))?;
    for s in &r.steps {
        let missing: Vec<&str> = s.missing.iter().map(|e| element_name(*e)).collect();
        let note =
            if missing.is_empty() { "all five elements".to_owned() } else { format!("missing {}", missing.join(", ")) };
        super::out::line(&format!("step {}: {} ({note})", s.number, clip(&s.title, 80)))?;
    }
    r.reasons.iter().try_for_each(|reason| super::out::line(&format!("reason: {reason}")))
}

fn print_judge(r: &JudgeReport, answer: &str) -> anyhow::Result<()> {
    super::out::line(&format!("judge: {} ({} sentences)", r.verdict.as_str(), r.sentences))?;
    for s in &r.evidence {
        let text = answer.get(s.span.start..s.span.end).unwrap_or_default();
        super::out::line(&format!(
            "  {} by {} [bytes {}..{}]: {}",
            s.judgement.as_str(),
            s.rule.as_str(),
            s.span.start,
            s.span.end,
            clip(text, 120)
        ))?;
    }
    Ok(())
}

/// The input from a file, or from stdin for `-` or none.
fn read_input(input: Option<&Path>) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    match input {
        Some(path) if path != Path::new("-") => {
            bytes = std::fs::read(path).with_context(|| format!("cannot read `{}`", path.display()))?;
        }
        _ => {
            std::io::stdin().lock().read_to_end(&mut bytes).context("cannot read the input from stdin")?;
        }
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!("the input is not UTF-8 (invalid byte at offset {})", e.utf8_error().valid_up_to())
    })
}

/// Parses `--goal`: `guardrail`, `scaffold` or `force`.
pub fn parse_goal(s: &str) -> Result<Goal, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| format!("`{s}` is not a goal (guardrail, scaffold, force)"))
}

/// Parses `--lang`: `ko` or `en`.
pub fn parse_lang(s: &str) -> Result<Lang, String> {
    serde_json::from_value(serde_json::Value::String(s.to_owned()))
        .map_err(|_| format!("`{s}` is not a language (ko, en)"))
}
