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
    /// Run seed 004's twelve cases on the bundled checkout example and assert each.
    Demo,
    /// Check a configuration, its schemas and policies; list every error at once.
    Validate,
    /// Read a model's answer (a file, or stdin for `-` or none) and run each call through the
    /// gate as the workbench principal; exit 0 whenever a verdict is produced.
    Check {
        /// Most calls read from the answer (default: the config's `[intake] max_calls`).
        #[arg(long)]
        max_calls: Option<usize>,
        /// The answer file, or `-` for stdin.
        file: Option<PathBuf>,
    },
    /// Read the audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The guard: scan for injection, mask outputs, evaluate on corpora.
    Guard {
        #[command(subcommand)]
        command: GuardCommand,
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
    /// The approvals desk on the store, for operators on the server's machine: acts as a
    /// principal named in the configuration (`--as operator-2`) through the same desk as the
    /// API, so approver ≠ requester, the approval scopes, the plan's service and the expiry are
    /// checked the same way, and every act is audited.
    Approvals {
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
    /// Development tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Debug, Subcommand)]
enum ApprovalsCommand {
    /// Pending requests of the principal's tenant (id, tool, arguments, plan hash prefix,
    /// requester, level, expiry); `--json` prints one JSON line each.
    List {
        /// Principal of the configuration to act as.
        #[arg(long = "as", value_name = "PRINCIPAL")]
        acting_as: String,
    },
    /// Add the principal's grant to a pending request.
    Approve {
        /// Principal of the configuration to act as.
        #[arg(long = "as", value_name = "PRINCIPAL")]
        acting_as: String,
        /// Approval id.
        id: String,
    },
    /// Reject a pending request.
    Reject {
        /// Principal of the configuration to act as.
        #[arg(long = "as", value_name = "PRINCIPAL")]
        acting_as: String,
        /// Approval id.
        id: String,
        /// Why (recorded with the rejection and in the audit log).
        #[arg(long)]
        reason: String,
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

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Verify every tenant's hash chain and name the first broken link.
    Verify,
    /// Print events as JSON lines.
    Export {
        /// Only this tenant.
        #[arg(long)]
        tenant: Option<String>,
    },
}

/// The approvals desk's shared arguments.
fn desk<'a>(cli: &'a Cli, acting_as: &'a str) -> commands::approvals::Desk<'a> {
    commands::approvals::Desk { config: cli.config.as_deref(), db: cli.db.as_deref(), acting_as, json: cli.json }
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
        match &cli.command {
            Command::Demo => commands::demo::run(&cli.config, cli.db.as_deref(), cli.json).await,
            Command::Validate => commands::validate::run(cli.config.as_deref(), cli.json),
            Command::Check { max_calls, file } => {
                commands::check::run(cli.config.as_deref(), cli.db.as_deref(), cli.json, *max_calls, file.as_deref())
                    .await
            }
            Command::Audit { command: AuditCommand::Verify } => {
                commands::audit::verify(cli.config.as_deref(), cli.db.as_deref(), cli.json).await
            }
            Command::Audit { command: AuditCommand::Export { tenant } } => {
                commands::audit::export(cli.config.as_deref(), cli.db.as_deref(), tenant.as_deref()).await
            }
            Command::Guard { command: GuardCommand::Scan { jsonl, file } } => {
                commands::guard::scan(file.as_deref(), *jsonl)
            }
            Command::Guard { command: GuardCommand::Mask { jsonl, rules, file } } => {
                commands::guard::mask(cli.config.as_deref(), file.as_deref(), *jsonl, rules.as_deref())
            }
            Command::Guard { command: GuardCommand::Eval { files } } => commands::guard::eval(files, cli.json),
            Command::Bench { command: BenchCommand::Runtime { samples } } => {
                commands::bench::runtime(cli.json, *samples)
            }
            Command::Serve { listen, log_json } => {
                commands::serve::run(cli.config.as_deref(), cli.db.as_deref(), listen.as_deref(), *log_json).await
            }
            Command::Approvals { command: ApprovalsCommand::List { acting_as } } => {
                commands::approvals::list(&desk(&cli, acting_as)).await
            }
            Command::Approvals { command: ApprovalsCommand::Approve { acting_as, id } } => {
                commands::approvals::approve(&desk(&cli, acting_as), id).await
            }
            Command::Approvals { command: ApprovalsCommand::Reject { acting_as, id, reason } } => {
                commands::approvals::reject(&desk(&cli, acting_as), id, reason).await
            }
            Command::Mcp { stdio: _, token } => {
                commands::mcp::stdio(cli.config.as_deref(), cli.db.as_deref(), token.as_deref()).await
            }
            Command::Token { command: TokenCommand::Issue { subject, tenant, services, scopes, ttl } } => {
                let args = commands::token::IssueArgs { subject, tenant, services, scopes, ttl };
                commands::token::issue(&args, cli.json)
            }
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
