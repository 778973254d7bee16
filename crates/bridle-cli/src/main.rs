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
    /// Read the audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
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
            Command::Audit { command: AuditCommand::Verify } => {
                commands::audit::verify(cli.config.as_deref(), cli.db.as_deref(), cli.json).await
            }
            Command::Audit { command: AuditCommand::Export { tenant } } => {
                commands::audit::export(cli.config.as_deref(), cli.db.as_deref(), tenant.as_deref()).await
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
