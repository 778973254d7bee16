//! The `bridle` command: argument handling and printing only; the work is in the library crates.

mod commands;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use commands::Global;

/// Bridle: a model only proposes a tool call; Bridle decides, in code, whether it may run.
#[derive(Debug, Parser)]
#[command(name = "bridle", version, about)]
struct Cli {
    #[command(flatten)]
    global: Global,
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
    Run(commands::run::Args),
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
        command: commands::lab::LabCommand,
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
        command: commands::guard::GuardCommand,
    },
    /// Ask recorded decisions again of the current (or a given) model and compare: agreement
    /// per agent, a JSON + HTML report; `--ab` for two models, `--run` for one run's divergence.
    Replay(commands::replay::Args),
    /// Watch the decision log for drift: a two-sided CUSUM per metric and key; prints each
    /// series' baseline, sums, status and alarms. Critical alarms fire the given hooks.
    Drift(commands::drift::Args),
    /// Outcomes of decisions (operator ratings 1–5, scores 0–1) and their analysis: Spearman's
    /// rho of confidence against rating behind the power gate, a CUSUM scan of the ratings, and a
    /// recalibrated `[levels] low_confidence` printed as a config diff.
    Feedback {
        #[command(subcommand)]
        command: commands::feedback::FeedbackCommand,
    },
    /// The model registry: models (name → model file and its SHA-256) move candidate → canary →
    /// stable, one stage at a time, only when replay on held-out decisions agrees enough.
    Models {
        #[command(subcommand)]
        command: commands::models::ModelsCommand,
    },
    /// Measure Bridle's own speed.
    Bench {
        #[command(subcommand)]
        command: commands::bench::BenchCommand,
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
    /// The operator chat (seed 000's) on the store and the configured model, as the operator of
    /// `--token` / BRIDLE_TOKEN or `--as P` (sqlite:// or memory only), who needs `chat:use`:
    /// `--message M` for one turn, else a message per line from stdin (`/new`, `/quit`). The
    /// guard, the gate and the limits are those of `POST /v1/chat`.
    Chat(commands::chat::Args),
    /// Jobs (changes run through the gate): list the unsettled ones, reconcile those whose
    /// outcome is unknown by asking their adapter; nothing is ever executed again.
    Jobs {
        #[command(subcommand)]
        command: commands::jobs::JobsCommand,
    },
    /// The kill switch: from now on every gate call in the scope (`--all`, `--tenant T`,
    /// `--agent A`, or a tenant and an agent) is rejected with `killed`, on every replica sharing
    /// the store; runs in scope are asked to stop. Prints the unfinished work (pending
    /// approvals, jobs not final, paused runs). `--lift` turns the switch of exactly that scope
    /// off. Both are audited.
    Kill(commands::kill::Args),
    /// Rate an executed action (by job id) a success or a failure: the action history the gate
    /// weighs the same action for the same diagnosis on the same equipment class against.
    Outcome(commands::outcome::Args),
    /// The MCP gateway's upstreams: `import` prints contract stanzas for an upstream's tools,
    /// `pin` records their current definitions as reviewed (`upstream_pin`), audited.
    Gateway {
        #[command(subcommand)]
        command: commands::gateway::GatewayCommand,
    },
    /// Development tokens.
    Token {
        #[command(subcommand)]
        command: commands::token::TokenCommand,
    },
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
        let g = &cli.global;
        let (config, db, json) = (g.config(), g.db(), g.json);
        let result = match &cli.command {
            Command::Demo { which: None } => commands::demo::run(&g.config, db, json).await,
            Command::Demo { which: Some(_) } => commands::demo::fab(&g.config, db, json).await,
            Command::Validate => commands::validate::run(config, json),
            Command::Run(args) => commands::run::run(g, args).await,
            Command::Check { max_calls, file } => {
                commands::check::run(config, db, json, *max_calls, file.as_deref()).await
            }
            Command::Lab { command } => commands::lab::run(g, command).await,
            Command::Audit { command } => commands::audit::run(command, config, db, json).await,
            Command::Guard { command } => commands::guard::run(g, command),
            Command::Replay(args) => commands::replay::run(g, args).await,
            Command::Drift(args) => commands::drift::run(g, args).await,
            Command::Feedback { command } => commands::feedback::run(g, command).await,
            Command::Models { command } => commands::models::run(g, command).await,
            Command::Bench { command } => commands::bench::run(g, command),
            Command::Serve { listen, log_json } => commands::serve::run(config, db, listen.as_deref(), *log_json).await,
            Command::Approvals { command } => commands::approvals::run(command, config, db, json).await,
            Command::Chat(args) => commands::chat::run(args, config, db, json).await,
            Command::Mcp { stdio: _, token } => commands::mcp::stdio(config, db, token.as_deref()).await,
            Command::Jobs { command } => commands::jobs::run(g, command).await,
            Command::Outcome(args) => commands::outcome::run(g, args).await,
            Command::Kill(args) => commands::kill::run(g, args).await,
            Command::Gateway { command } => commands::gateway::run(g, command).await,
            Command::Token { command } => commands::token::run(g, command),
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
