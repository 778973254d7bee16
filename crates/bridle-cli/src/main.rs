//! The `bridle` command: argument handling and printing only; the work is in the library crates.

mod commands;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Bridle: a model only proposes a tool call; Bridle decides, in code, whether it may run.
#[derive(Debug, Parser)]
#[command(name = "bridle", version, about)]
struct Cli {
    /// Configuration file (default: the bundled checkout example).
    #[arg(long, global = true, env = "BRIDLE_CONFIG")]
    config: Option<PathBuf>,
    /// Store URL: `sqlite://PATH`, `sqlite::memory:` or `memory` (overrides the config's store).
    #[arg(long = "db", global = true, env = "BRIDLE_STORE_URL")]
    db: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run seed 004's twelve cases on the bundled checkout example and assert each; `demo fab`
    /// runs seed 000's failure scenarios on the bundled fab example.
    Demo {
        /// `fab` for seed 000's scenarios (default: seed 004's checkout cases).
        #[arg(value_parser = ["fab"])]
        which: Option<String>,
    },
    /// Check a configuration, its schemas and policies; list every error at once.
    Validate,
    /// Run a workflow file (TOML: tool, ai_analysis, condition, loop, parallel and approval
    /// nodes) on the configured store and model, with a progress line per node on stderr; or
    /// resume a paused run. Exit 0 done or paused, 1 failed, 2 the file was refused.
    Run {
        /// The workflow file.
        file: PathBuf,
        /// The run's input: a JSON object of state keys.
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
        /// Model: a TOML file with an `[llm]` section, or a scripted model's script (default: the
        /// configuration's `[llm]`).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Resume this paused run (with `--interrupt` and `--value`).
        #[arg(long, value_name = "RUN_ID", requires_all = ["interrupt", "value"], conflicts_with = "input")]
        resume: Option<String>,
        /// The interrupt answered (printed when the run paused).
        #[arg(long, value_name = "ID", requires = "resume")]
        interrupt: Option<String>,
        /// The answer, as JSON (an approval node stores it in its output).
        #[arg(long, value_name = "JSON", requires = "resume")]
        value: Option<String>,
    },
    /// Read a model's answer (a file, or stdin for `-` or none) and run each call through the
    /// gate as the workbench principal; exit 0 whenever a verdict is produced.
    Check {
        /// Most calls read from the answer (default: the config's `[intake] max_calls`).
        #[arg(long)]
        max_calls: Option<usize>,
        /// The answer file, or `-` for stdin.
        file: Option<PathBuf>,
    },
    /// Seed 003's workbench labs: replay an agent loop through the gate, check a plan, judge an
    /// answer to the prompt-injection lab, or print a lab's prompt. Exit 0 with a report (pass
    /// or fail), 2 when the input is refused by a lab limit.
    Lab {
        #[command(subcommand)]
        command: LabCommand,
    },
    /// Read and verify the audit log (against its signed heads), export, prune; make a key for
    /// signing heads.
    Audit {
        #[command(subcommand)]
        command: commands::audit::AuditCommand,
    },
    /// The guard: scan for injection, mask outputs, evaluate on corpora.
    Guard {
        #[command(subcommand)]
        command: GuardCommand,
    },
    /// Ask recorded decisions again of the current (or a given) model and compare: agreement
    /// per agent, a JSON + HTML report; `--ab` for two models, `--run` for one run's divergence.
    Replay {
        /// Tenant whose decision log is replayed.
        #[arg(long)]
        tenant: String,
        /// Model to replay on: a TOML file with an `[llm]` section, or a scripted model's script
        /// (default: the configuration's `[llm]`).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Two model files, replayed side by side on the same decisions.
        #[arg(long, num_args = 2, value_names = ["CONFIG_A", "CONFIG_B"], conflicts_with_all = ["model", "run"])]
        ab: Option<Vec<PathBuf>>,
        /// Replay one pipeline run in order and stop at the first decision that disagrees.
        #[arg(long)]
        run: Option<String>,
        /// Keep only matching records: `agent=A`, `verdict=V`, `run=R` (repeatable).
        #[arg(long = "filter", value_name = "KEY=VALUE")]
        filters: Vec<String>,
        /// The most recent decisions replayed.
        #[arg(long, default_value_t = 100)]
        limit: u32,
        /// Relative tolerance for numeric parameters.
        #[arg(long, default_value_t = 0.01)]
        tolerance: f64,
        /// Write FILE.json and FILE.html.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Release gate: exit 1 when agreement on the recorded set is below THRESHOLD (0–1,
        /// e.g. 0.95), naming which of model, prompt, tool schema and policy changed since the
        /// records were made.
        #[arg(long, value_name = "THRESHOLD", conflicts_with_all = ["ab", "run"])]
        gate: Option<f64>,
    },
    /// Watch the decision log for drift: a two-sided CUSUM per metric and key; prints each
    /// series' baseline, sums, status and alarms. Critical alarms fire the given hooks.
    Drift {
        /// Tenant whose decision log is scanned (default: `bridle demo fab`'s tenant).
        #[arg(long, default_value = "fab-1")]
        tenant: String,
        /// Only this metric.
        #[arg(long, value_parser = bridle_core::drift::METRICS)]
        metric: Option<String>,
        /// The most recent decisions scanned (oldest first).
        #[arg(long, default_value_t = 10_000)]
        limit: u32,
        /// Values per series that set its baseline (mean and deviation).
        #[arg(long, default_value_t = 30)]
        baseline: usize,
        /// Allowance k, in standard deviations.
        #[arg(long, default_value_t = 0.5)]
        k: f64,
        /// Warning threshold, in standard deviations.
        #[arg(long, default_value_t = 2.5)]
        warning: f64,
        /// Critical threshold, in standard deviations.
        #[arg(long, default_value_t = 4.0)]
        critical: f64,
        /// Write an SVG of the sums with the warning and critical lines.
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// On `drift_detected`, write a JSON snapshot of the alert into DIR.
        #[arg(long, value_name = "DIR")]
        snapshot_dir: Option<PathBuf>,
        /// On `drift_detected`, POST the signed alert to URL (secret in BRIDLE_DRIFT_WEBHOOK_SECRET).
        #[arg(long, value_name = "URL")]
        webhook: Option<String>,
    },
    /// Outcomes of decisions (operator ratings 1–5, scores 0–1) and their analysis: Spearman's
    /// rho of confidence against rating behind the power gate, a CUSUM scan of the ratings, and a
    /// recalibrated `[levels] low_confidence` printed as a config diff.
    Feedback {
        #[command(subcommand)]
        command: FeedbackCommand,
    },
    /// The model registry: models (name → model file and its SHA-256) move candidate → canary →
    /// stable, one stage at a time, only when replay on held-out decisions agrees enough.
    Models {
        #[command(subcommand)]
        command: ModelsCommand,
    },
    /// Measure Bridle's own speed.
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Serve the HTTP API (needs BRIDLE_JWT_SECRET, or BRIDLE_JWT_PUBLIC_KEY / BRIDLE_JWT_JWKS).
    Serve {
        /// Address to listen on (default 127.0.0.1:8080).
        #[arg(long, env = "BRIDLE_LISTEN")]
        listen: Option<String>,
        /// Logs as JSON lines on stderr (also `BRIDLE_LOG=json`); the level comes from RUST_LOG.
        #[arg(long)]
        log_json: bool,
    },
    /// Serve MCP to one agent on stdin/stdout (stdout carries protocol only; logs go to stderr).
    Mcp {
        /// Speak MCP over stdin/stdout (the only transport of this command; `bridle serve` has `/mcp`).
        #[arg(long, required = true)]
        stdio: bool,
        /// The caller's token (default: BRIDLE_TOKEN), verified like `bridle serve` verifies tokens.
        #[arg(long)]
        token: Option<String>,
    },
    /// The approvals desk on the store, as the operator of `--token` / BRIDLE_TOKEN (verified like
    /// `bridle serve` verifies tokens), or `--as P` on a sqlite:// or memory store; through the
    /// same desk as the API, so approver ≠ requester, the approval scopes, the plan's service and
    /// the expiry are checked the same way, and every act is audited with how the operator
    /// authenticated.
    Approvals {
        #[command(subcommand)]
        command: commands::approvals::ApprovalsCommand,
    },
    /// Jobs (changes run through the gate): list the unsettled ones, reconcile those whose
    /// outcome is unknown by asking their adapter; nothing is ever executed again.
    Jobs {
        #[command(subcommand)]
        command: JobsCommand,
    },
    /// The kill switch: from now on every gate call in the scope (`--all`, `--tenant T`,
    /// `--agent A`, or a tenant and an agent) is rejected with `killed`, on every replica sharing
    /// the store; runs in scope are asked to stop. Prints the unfinished work (pending
    /// approvals, jobs not final, paused runs). `--lift` turns the switch of exactly that scope
    /// off. Both are audited.
    Kill {
        /// Every tenant and agent.
        #[arg(long, conflicts_with_all = ["tenant", "agent"])]
        all: bool,
        /// One tenant.
        #[arg(long)]
        tenant: Option<String>,
        /// One registered agent (in every tenant, or in `--tenant`).
        #[arg(long)]
        agent: Option<String>,
        /// Why (recorded with the switch and in the audit log): at most 2,000 characters, no
        /// NUL or other control character. Optional: an emergency stop needs no reason.
        #[arg(long, default_value = "")]
        reason: String,
        /// Who sets it (recorded; default: `cli`).
        #[arg(long, default_value = "cli")]
        by: String,
        /// Lift the switch of exactly this scope instead.
        #[arg(long)]
        lift: bool,
    },
    /// Rate an executed action (by job id) a success or a failure: the action history the gate
    /// weighs the same action for the same diagnosis on the same equipment class against.
    Outcome {
        /// Tenant of the job.
        #[arg(long)]
        tenant: String,
        /// The job that executed the action.
        job: String,
        /// It failed (default: it succeeded).
        #[arg(long)]
        failure: bool,
        /// What was observed.
        #[arg(long)]
        note: Option<String>,
        /// Who rates it (recorded; default: `cli`).
        #[arg(long, default_value = "cli")]
        by: String,
    },
    /// Development tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Debug, Subcommand)]
enum FeedbackCommand {
    /// Rate one decision of the tenant (stored as the API stores it; `outcome_collected` fires).
    Add {
        /// Decision id.
        decision: String,
        /// Tenant of the decision.
        #[arg(long, default_value = "fab-1")]
        tenant: String,
        /// Rating, 1 (bad) to 5 (good).
        #[arg(long)]
        rating: Option<u8>,
        /// Score, 0 (bad) to 1 (good).
        #[arg(long)]
        score: Option<f64>,
        /// Comment (secrets and personal data masked before it is stored).
        #[arg(long)]
        comment: Option<String>,
        /// The outcome was scored automatically, not by a person.
        #[arg(long)]
        automatic: bool,
        /// Who rates.
        #[arg(long, default_value = "cli")]
        rater: String,
    },
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

#[derive(Debug, Subcommand)]
enum ModelsCommand {
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
        #[arg(long, value_parser = commands::models::parse_stage)]
        to: Option<bridle_core::models::Stage>,
        /// Who promotes (the audit event's subject).
        #[arg(long, default_value = "cli")]
        by: String,
        #[command(flatten)]
        validation: ValidationArgs,
    },
}

#[derive(Debug, clap::Args)]
struct ValidationArgs {
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

#[derive(Debug, Subcommand)]
enum JobsCommand {
    /// Jobs not yet settled (reserved, dispatched, unknown), oldest first; `--json` prints one
    /// JSON line each.
    List {
        /// Only jobs in this state.
        #[arg(long, value_parser = ["reserved", "dispatched", "unknown"])]
        state: Option<String>,
    },
    /// Ask the adapters what became of every `unknown` job and settle it (succeeded / failed /
    /// still unknown), audited; `dispatched` or `reserved` jobs older than their tool's timeout
    /// plus `--grace` were abandoned by a stopped process and are taken up too.
    Reconcile {
        /// Time past a tool's timeout before a dispatched or reserved job counts as abandoned;
        /// `0s` takes them all at once (only when no server runs on the store).
        #[arg(long, default_value = "60s")]
        grace: String,
    },
}

#[derive(Debug, Subcommand)]
enum LabCommand {
    /// Replay a transcript (JSON: `goal`, `answers`, optional `value`, `max_rounds`,
    /// `stop_after_failures`, `tolerance`) through the gate as the workbench principal.
    Loop {
        /// Round limit, 1–10 (overrides the file's).
        #[arg(long)]
        max_rounds: Option<usize>,
        /// Failed rounds in a row that stop the loop, 2 or 3 (overrides the file's).
        #[arg(long)]
        stop_after_failures: Option<usize>,
        /// The transcript file, or `-` for stdin.
        file: Option<PathBuf>,
    },
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
    Prompt {
        /// Which lab.
        #[arg(value_enum)]
        lab: commands::lab::PromptLab,
        /// Language: ko or en.
        #[arg(long, default_value = "ko", value_parser = commands::lab::parse_lang)]
        lang: bridle_apps::lab::Lang,
        /// Loop goal: guardrail, scaffold or force.
        #[arg(long, default_value = "guardrail", value_parser = commands::lab::parse_goal)]
        goal: bridle_apps::lab::loop_lab::Goal,
        /// Loop round limit, 1–10.
        #[arg(long, default_value_t = 6)]
        max_rounds: usize,
        /// Plan steps: 5, 6 or 8.
        #[arg(long, default_value_t = 5)]
        steps: usize,
        /// Delimiter seed, 1–999999.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Leave out the rule that the delimited text is data.
        #[arg(long)]
        undefended: bool,
        /// The plan's task or the injection document (default: the built-in one), or `-`.
        file: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Print an HS256 token signed with BRIDLE_JWT_SECRET.
    Issue {
        /// Subject (`sub`).
        #[arg(long)]
        subject: String,
        /// Tenant.
        #[arg(long)]
        tenant: String,
        /// Services, comma-separated.
        #[arg(long, value_delimiter = ',')]
        services: Vec<String>,
        /// Scopes, comma-separated.
        #[arg(long, value_delimiter = ',')]
        scopes: Vec<String>,
        /// Lifetime: `90s`, `15m`, `1h`, `7d`.
        #[arg(long, default_value = "1h")]
        ttl: String,
        /// The `[[agents]]` id this token belongs to (`agent` claim): every call made with it is
        /// that agent's, and a request naming another agent is refused.
        #[arg(long)]
        agent: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// The graph runtime on the LangGraph anchor's shapes (node-step, fan-out, loop,
    /// checkpointed steps, pause and resume) and the disk's raw commit cost.
    Runtime {
        /// Samples per figure (default 15).
        #[arg(long)]
        samples: Option<usize>,
    },
    /// Durable audited decisions/s through the whole gate on a store (each call waits for the
    /// commit of its audit event); the audit chain is verified afterwards.
    Decisions {
        /// Store URL (`sqlite://PATH[?synchronous=full]`, `postgres://…[?options[synchronous_commit]=off]`);
        /// default: a fresh SQLite file in a temporary directory.
        #[arg(long)]
        store: Option<String>,
        /// Concurrent callers.
        #[arg(long, default_value_t = 128)]
        concurrency: usize,
        /// Measured seconds (after a warm-up of a fifth of it, at most 1 s).
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        /// Group commit: most audit events per transaction; 0 turns group commit off.
        #[arg(long, default_value_t = 64)]
        batch: usize,
        /// Stores (pools, writers, gates) on the same URL, as separate `bridle serve` replicas.
        #[arg(long, default_value_t = 1)]
        replicas: usize,
        /// Tokio worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
    },
}

#[derive(Debug, Subcommand)]
enum GuardCommand {
    /// Scan texts (document channel): one JSON line per input, in order.
    Scan {
        /// Input is JSON lines with `id` and `text` (default: plain lines).
        #[arg(long)]
        jsonl: bool,
        /// Input file, or `-` / nothing for stdin.
        file: Option<PathBuf>,
    },
    /// Mask secrets, PII and sensitive text: one JSON line per input, in order.
    Mask {
        /// Input is JSON lines with `id` and `text` (default: plain lines).
        #[arg(long)]
        jsonl: bool,
        /// Extra secret rules in gitleaks TOML format.
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Input file, or `-` / nothing for stdin.
        file: Option<PathBuf>,
    },
    /// Detection per family, category and language, false positives and throughput.
    Eval {
        /// Labelled JSONL files (`id, text, label, category, lang`).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// Store and output options of `feedback` and `models`.
fn common<'a>(cli: &'a Cli, tenant: &'a str) -> commands::feedback::Common<'a> {
    commands::feedback::Common { config: cli.config.as_deref(), db: cli.db.as_deref(), json: cli.json, tenant }
}

fn validate_args<'a>(name: &'a str, v: &'a ValidationArgs) -> commands::models::ValidateArgs<'a> {
    commands::models::ValidateArgs { name, holdout: v.holdout, threshold: v.threshold, agent: v.agent.as_deref() }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let result = match &cli.command {
            Command::Demo { which: None } => commands::demo::run(&cli.config, cli.db.as_deref(), cli.json).await,
            Command::Demo { which: Some(_) } => commands::demo::fab(&cli.config, cli.db.as_deref(), cli.json).await,
            Command::Validate => commands::validate::run(cli.config.as_deref(), cli.json),
            Command::Run { file, input, model, resume, interrupt, value } => {
                let resume = match (resume, interrupt, value) {
                    (Some(r), Some(i), Some(v)) => Some((r.as_str(), i.as_str(), v.as_str())),
                    _ => None,
                };
                commands::run::run(commands::run::Args {
                    config: cli.config.as_deref(),
                    db: cli.db.as_deref(),
                    json: cli.json,
                    file,
                    input: input.as_deref(),
                    model: model.as_deref(),
                    resume,
                })
                .await
            }
            Command::Check { max_calls, file } => {
                commands::check::run(cli.config.as_deref(), cli.db.as_deref(), cli.json, *max_calls, file.as_deref())
                    .await
            }
            Command::Lab { command: LabCommand::Loop { max_rounds, stop_after_failures, file } } => {
                let args = commands::lab::LoopArgs {
                    config: cli.config.as_deref(),
                    db: cli.db.as_deref(),
                    json: cli.json,
                    max_rounds: *max_rounds,
                    stop_after_failures: *stop_after_failures,
                    file: file.as_deref(),
                };
                commands::lab::run_loop(&args).await
            }
            Command::Lab { command: LabCommand::Plan { steps, file } } => {
                commands::lab::run_plan(cli.json, *steps, file.as_deref())
            }
            Command::Lab { command: LabCommand::Judge { marker, file } } => {
                commands::lab::run_judge(cli.json, marker.as_deref(), file.as_deref())
            }
            Command::Lab {
                command: LabCommand::Prompt { lab, lang, goal, max_rounds, steps, seed, undefended, file },
            } => commands::lab::run_prompt(&commands::lab::PromptArgs {
                json: cli.json,
                lab: *lab,
                lang: *lang,
                goal: *goal,
                max_rounds: *max_rounds,
                steps: *steps,
                seed: *seed,
                undefended: *undefended,
                file: file.as_deref(),
            }),
            Command::Audit { command } => {
                commands::audit::run(command, cli.config.as_deref(), cli.db.as_deref(), cli.json).await
            }
            Command::Guard { command: GuardCommand::Scan { jsonl, file } } => {
                commands::guard::scan(file.as_deref(), *jsonl)
            }
            Command::Guard { command: GuardCommand::Mask { jsonl, rules, file } } => {
                commands::guard::mask(cli.config.as_deref(), file.as_deref(), *jsonl, rules.as_deref())
            }
            Command::Guard { command: GuardCommand::Eval { files } } => commands::guard::eval(files, cli.json),
            Command::Replay { tenant, model, ab, run, filters, limit, tolerance, report, gate } => {
                let ab = ab.as_deref().and_then(|v| match v {
                    [a, b] => Some((a.as_path(), b.as_path())),
                    _ => None,
                });
                commands::replay::run(commands::replay::Args {
                    config: &cli.config,
                    db: cli.db.as_deref(),
                    json: cli.json,
                    tenant,
                    model: model.as_deref(),
                    ab,
                    run: run.as_deref(),
                    filters,
                    limit: *limit,
                    tolerance: *tolerance,
                    report: report.as_deref(),
                    gate: *gate,
                })
                .await
            }
            Command::Drift { tenant, metric, limit, baseline, k, warning, critical, plot, snapshot_dir, webhook } => {
                commands::drift::run(commands::drift::Args {
                    config: cli.config.as_deref(),
                    db: cli.db.as_deref(),
                    json: cli.json,
                    tenant,
                    metric: metric.as_deref(),
                    limit: *limit,
                    params: bridle_core::drift::Params {
                        k: *k,
                        warning: *warning,
                        critical: *critical,
                        baseline_len: *baseline,
                        ..bridle_core::drift::Params::default()
                    },
                    plot: plot.as_deref(),
                    snapshot_dir: snapshot_dir.clone(),
                    webhook: webhook.clone(),
                })
                .await
            }
            Command::Feedback {
                command: FeedbackCommand::Add { decision, tenant, rating, score, comment, automatic, rater },
            } => {
                let args = commands::feedback::AddArgs {
                    decision,
                    rating: *rating,
                    score: *score,
                    comment: comment.as_deref(),
                    automatic: *automatic,
                    rater,
                };
                commands::feedback::add(&common(&cli, tenant), &args).await
            }
            Command::Feedback { command: FeedbackCommand::List { tenant, decision, limit } } => {
                commands::feedback::list(&common(&cli, tenant), decision.as_deref(), *limit).await
            }
            Command::Feedback { command: FeedbackCommand::Analyze { tenant, agent, limit, baseline } } => {
                commands::feedback::analyze_cmd(&common(&cli, tenant), agent.as_deref(), *limit, *baseline).await
            }
            Command::Models { command: ModelsCommand::Register { name, model, tenant, by } } => {
                commands::models::register(&common(&cli, tenant), name, model, by).await
            }
            Command::Models { command: ModelsCommand::List { tenant } } => {
                commands::models::list(&common(&cli, tenant)).await
            }
            Command::Models { command: ModelsCommand::Validate { name, validation: v } } => {
                commands::models::validate(&common(&cli, &v.tenant), &validate_args(name, v)).await
            }
            Command::Models { command: ModelsCommand::Promote { name, to, by, validation: v } } => {
                commands::models::promote(&common(&cli, &v.tenant), &validate_args(name, v), *to, by).await
            }
            Command::Bench { command: BenchCommand::Runtime { samples } } => {
                commands::bench::runtime(cli.json, *samples)
            }
            Command::Bench {
                command: BenchCommand::Decisions { store, concurrency, seconds, batch, replicas, threads },
            } => commands::bench::decisions(
                commands::bench::DecisionsArgs {
                    store: store.clone(),
                    concurrency: *concurrency,
                    seconds: *seconds,
                    batch: *batch,
                    replicas: *replicas,
                    threads: *threads,
                },
                cli.json,
            ),
            Command::Serve { listen, log_json } => {
                commands::serve::run(cli.config.as_deref(), cli.db.as_deref(), listen.as_deref(), *log_json).await
            }
            Command::Approvals { command } => {
                commands::approvals::run(command, cli.config.as_deref(), cli.db.as_deref(), cli.json).await
            }
            Command::Mcp { stdio: _, token } => {
                commands::mcp::stdio(cli.config.as_deref(), cli.db.as_deref(), token.as_deref()).await
            }
            Command::Jobs { command: JobsCommand::List { state } } => {
                commands::jobs::list(cli.config.as_deref(), cli.db.as_deref(), state.as_deref(), cli.json).await
            }
            Command::Jobs { command: JobsCommand::Reconcile { grace } } => {
                commands::jobs::reconcile(cli.config.as_deref(), cli.db.as_deref(), grace, cli.json).await
            }
            Command::Outcome { tenant, job, failure, note, by } => {
                commands::outcome::run(&commands::outcome::Args {
                    config: cli.config.as_deref(),
                    db: cli.db.as_deref(),
                    json: cli.json,
                    tenant,
                    job,
                    failure: *failure,
                    note: note.as_deref(),
                    by,
                })
                .await
            }
            Command::Kill { all, tenant, agent, reason, by, lift } => {
                commands::kill::run(&commands::kill::Args {
                    config: cli.config.as_deref(),
                    db: cli.db.as_deref(),
                    json: cli.json,
                    all: *all,
                    tenant: tenant.as_deref(),
                    agent: agent.as_deref(),
                    reason,
                    by,
                    lift: *lift,
                })
                .await
            }
            Command::Token { command: TokenCommand::Issue { subject, tenant, services, scopes, ttl, agent } } => {
                let args =
                    commands::token::IssueArgs { subject, tenant, services, scopes, ttl, agent: agent.as_deref() };
                commands::token::issue(&args, cli.json)
            }
        };
        // Before exiting, every store this command wrote to gets its chains' heads signed.
        commands::seal().await;
        result
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
