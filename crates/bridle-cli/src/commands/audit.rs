//! `bridle audit verify|export|prune|keygen`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use bridle_runtime::audit::AnchoredReport;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Events read per page while exporting.
const PAGE: u32 = 1000;

/// `bridle audit …`.
#[derive(Debug, clap::Subcommand)]
pub enum AuditCommand {
    /// Verify every tenant's hash chain and name the first broken link, and check each chain
    /// against the signed heads of the head log (a deleted tail is named); or verify an exported
    /// JSONL file offline (`--file`, `-` for stdin), naming the line.
    Verify {
        /// An export of `bridle audit export` to verify without any store.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Print events as JSON lines (one event per line; verifiable offline with `verify --file`).
    Export {
        /// JSON lines (the only format, accepted for explicitness).
        #[arg(long)]
        jsonl: bool,
        /// Only this tenant.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Drop the evidence (free-text reasons) of events older than a cut-off; metadata and the
    /// hash chains stay and still verify.
    Prune {
        /// Cut-off: RFC 3339 or YYYY-MM-DD (UTC midnight). Default: now minus the config's
        /// `[audit] retention_days`.
        #[arg(long)]
        before: Option<String>,
    },
    /// Print a new Ed25519 key for signing audit heads, as one line of text (stdout), and its
    /// public half (stderr). Keep it outside the database: BRIDLE_AUDIT_SIGNING_KEY holds the
    /// line itself, or BRIDLE_AUDIT_SIGNING_KEY_FILE / `[audit] signing_key_file` a file with it.
    Keygen,
}

/// Runs one subcommand.
pub async fn run(
    command: &AuditCommand,
    config: Option<&Path>,
    db: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match command {
        AuditCommand::Verify { file: Some(file) } => verify_file(file, json),
        AuditCommand::Verify { file: None } => verify(config, db, json).await,
        AuditCommand::Prune { before } => prune(config, db, before.as_deref(), json).await,
        AuditCommand::Export { jsonl: _, tenant } => export(config, db, tenant.as_deref()).await,
        AuditCommand::Keygen => keygen(json),
    }
}

/// `bridle audit keygen`: the private key on stdout (one line), the public key on stderr.
pub fn keygen(json: bool) -> anyhow::Result<ExitCode> {
    let key = bridle_runtime::audit::heads::generate_key()?;
    let public = key.public().to_hex();
    if json {
        super::out::line(&serde_json::json!({"private_key": key.to_text(), "public_key": public}).to_string())?;
    } else {
        super::out::line(&key.to_text())?;
        eprintln!("public key: {public}");
        eprintln!("keep the line above outside the database: export BRIDLE_AUDIT_SIGNING_KEY=… (or put it in a file");
        eprintln!("named by BRIDLE_AUDIT_SIGNING_KEY_FILE or [audit] signing_key_file, readable by Bridle only)");
    }
    Ok(ExitCode::SUCCESS)
}

/// `bridle audit verify`: every chain link by link, then against the signed heads.
pub async fn verify(config: Option<&Path>, db: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let config = super::config(config)?;
    let url = super::store_url(&config, db);
    let plan = super::head_plan(&config, &url)?;
    let stores = super::plain_stores(&config, &url).await?;
    let source = plan.source();
    let report = bridle_runtime::audit::verify_anchored(stores.audit.as_ref(), source.as_ref().map_err(|w| *w))
        .await
        .context("the audit log could not be verified")?;
    if json {
        super::out::line(&serde_json::to_string(&report)?)?;
    } else {
        print_report(&report)?;
    }
    Ok(if report.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

fn print_report(report: &AnchoredReport) -> anyhow::Result<()> {
    let tail_of = |tenant: &str| report.tails.iter().find(|t| t.tenant == tenant);
    for (tenant, n) in &report.chains.tenants {
        let tail = tail_of(tenant).map(|t| format!("; {}", t.describe())).unwrap_or_default();
        super::out::line(&format!("{tenant}: ok ({n} events){tail}"))?;
    }
    for b in &report.chains.broken {
        let tail = tail_of(&b.tenant).map(|t| format!("; {}", t.describe())).unwrap_or_default();
        super::out::line(&format!("{}: broken at seq {}: {}{tail}", b.tenant, b.seq, b.problem))?;
    }
    // Tenants the heads know and the store no longer holds at all.
    for t in &report.tails {
        let listed = report.chains.tenants.iter().any(|(n, _)| *n == t.tenant)
            || report.chains.broken.iter().any(|b| b.tenant == t.tenant);
        if !listed {
            super::out::line(&format!("{}: no events stored; {}", t.tenant, t.describe()))?;
        }
    }
    let h = &report.heads;
    match &h.note {
        Some(note) => super::out::line(&format!("heads: {note}"))?,
        None => super::out::line(&format!(
            "heads: {} signed head(s) checked in `{}`",
            h.trusted,
            h.file.as_deref().unwrap_or_default()
        ))?,
    }
    for p in &h.problems {
        super::out::line(&format!("heads: line {}: not trusted: {}", p.line, p.problem))?;
    }
    if let Some(line) = h.incomplete_last_line {
        super::out::line(&format!("heads: line {line}: incomplete (a write cut short), ignored"))?;
    }
    Ok(())
}

/// `bridle audit verify --file FILE`: an export checked offline, no store opened.
pub fn verify_file(file: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let report = if file == Path::new("-") {
        bridle_runtime::audit::verify_jsonl(std::io::stdin().lock())
    } else {
        let f = std::fs::File::open(file).with_context(|| format!("opening `{}`", file.display()))?;
        bridle_runtime::audit::verify_jsonl(std::io::BufReader::new(f))
    }
    .with_context(|| format!("reading `{}`", file.display()))?;
    if json {
        super::out::line(&serde_json::to_string(&report)?)?;
    } else {
        for c in &report.tenants {
            let pruned = if c.evidence_pruned > 0 {
                format!(", {} with evidence pruned", c.evidence_pruned)
            } else {
                String::new()
            };
            super::out::line(&format!("{}: ok ({} events{pruned}), head {}", c.tenant, c.events, c.head))?;
        }
        for b in &report.broken {
            let at = match (&b.tenant, b.seq) {
                (Some(t), Some(seq)) => format!("{t}: broken at seq {seq}"),
                _ => "unreadable".to_owned(),
            };
            super::out::line(&format!("line {}: {at}: {}", b.line, b.problem))?;
        }
    }
    Ok(if report.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Streams events page by page, so an export never holds the whole log in memory.
pub async fn export(config: Option<&Path>, db: Option<&str>, tenant: Option<&str>) -> anyhow::Result<ExitCode> {
    let config = super::config(config)?;
    let stores = super::plain_stores(&config, &super::store_url(&config, db)).await?;
    let tenants = match tenant {
        Some(t) => vec![t.to_owned()],
        None => stores.audit.tenants().await?,
    };
    for t in tenants {
        let mut after = 0;
        loop {
            let page = stores.audit.events(&t, after, PAGE).await?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            for event in &page {
                super::out::line(&serde_json::to_string(event)?)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `bridle audit prune [--before DATE]`.
pub async fn prune(
    config: Option<&Path>,
    db: Option<&str>,
    before: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let config = super::config(config)?;
    let cutoff = match (before, config.audit.retention) {
        (Some(text), _) => parse_cutoff(text)?,
        (None, Some(retention)) => OffsetDateTime::now_utc() - retention,
        (None, None) => anyhow::bail!("no cut-off: pass `--before DATE` or set `[audit] retention_days`"),
    };
    // Pruning drops evidence only: no chain changes, so there is no head to sign.
    let stores = super::plain_stores(&config, &super::store_url(&config, db)).await?;
    let pruned = stores.audit.prune_evidence(cutoff).await?;
    let cutoff = cutoff.format(&Rfc3339)?;
    if json {
        super::out::line(&serde_json::json!({"before": cutoff, "pruned": pruned}).to_string())?;
    } else {
        super::out::line(&format!(
            "dropped the evidence of {pruned} event(s) before {cutoff}; the chains still verify"
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// RFC 3339, or a bare `YYYY-MM-DD` meaning UTC midnight.
fn parse_cutoff(text: &str) -> anyhow::Result<OffsetDateTime> {
    if let Ok(t) = OffsetDateTime::parse(text, &Rfc3339) {
        return Ok(t);
    }
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let date = time::Date::parse(text, &format)
        .with_context(|| format!("`{text}` is not a date (use YYYY-MM-DD or RFC 3339)"))?;
    Ok(date.midnight().assume_utc())
}
