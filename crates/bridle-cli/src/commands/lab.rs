//! `bridle lab loop|plan|judge|prompt`: seed 003's workbench labs. `loop` replays a transcript
//! (JSON) through the gate as the workbench principal; `plan` reads and checks a plan; `judge`
//! labels an answer to the prompt-injection lab; `prompt` prints a lab's prompt. Exit 0 whenever
//! a report is printed (pass or fail), 2 when the input is refused by a lab limit (its code is
//! printed).

use std::io::Read;
use std::path::Path;
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

/// Options of `bridle lab loop`.
pub struct LoopArgs<'a> {
    pub config: Option<&'a Path>,
    pub db: Option<&'a str>,
    pub json: bool,
    pub max_rounds: Option<usize>,
    pub stop_after_failures: Option<usize>,
    pub file: Option<&'a Path>,
}

/// `bridle lab loop`: the transcript file is `{goal, value?, answers: [..], max_rounds?,
/// stop_after_failures?, tolerance?}`.
pub async fn run_loop(args: &LoopArgs<'_>) -> anyhow::Result<ExitCode> {
    let text = read_input(args.file)?;
    let mut input: LoopInput = serde_json::from_str(&text)
        .context("the transcript must be JSON: {\"goal\": \"guardrail|scaffold|force\", \"answers\": [\"…\"], …}")?;
    input.max_rounds = args.max_rounds.or(input.max_rounds);
    input.stop_after_failures = args.stop_after_failures.or(input.stop_after_failures);
    let config = Arc::new(super::config(args.config)?);
    let principal = workbench_principal(&config)
        .with_context(|| format!("the configuration has no `{WORKBENCH_PRINCIPAL}` principal"))?;
    let limits = config.intake;
    let stores = match args.db {
        Some(_) => super::stores(&config, args.db).await?,
        None => Stores::memory(),
    };
    let gate = gate(config, stores).context("building the guard")?;
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let run = RunContext::new(&format!("lab-{}-{}", started.as_millis(), std::process::id()), WORKBENCH_PRINCIPAL);
    match replay_loop(&gate, &principal, &run, input, &limits).await {
        Ok(report) => print(args.json, &report, print_loop),
        Err(LabError::Invalid(r)) => refused(args.json, &r),
        Err(LabError::Gate(e)) => Err(e.into()),
    }
}

/// `bridle lab plan`.
pub fn run_plan(json: bool, steps: usize, file: Option<&Path>) -> anyhow::Result<ExitCode> {
    let text = read_input(file)?;
    match check_plan(&text, steps) {
        Ok(report) => print(json, &report, print_plan),
        Err(r) => refused(json, &r),
    }
}

/// `bridle lab judge`.
pub fn run_judge(json: bool, marker: Option<&str>, file: Option<&Path>) -> anyhow::Result<ExitCode> {
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

/// Options of `bridle lab prompt`.
pub struct PromptArgs<'a> {
    pub json: bool,
    pub lab: PromptLab,
    pub lang: Lang,
    pub goal: Goal,
    pub max_rounds: usize,
    pub steps: usize,
    pub seed: u64,
    pub undefended: bool,
    pub file: Option<&'a Path>,
}

/// `bridle lab prompt`.
pub fn run_prompt(args: &PromptArgs<'_>) -> anyhow::Result<ExitCode> {
    let document = match (args.lab, args.file) {
        (PromptLab::Injection | PromptLab::Plan, Some(_)) => Some(read_input(args.file)?),
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
        Ok(value) if args.json => {
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
        Err(r) => refused(args.json, &r),
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
