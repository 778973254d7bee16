//! `bridle audit verify|export|prune|keygen`.

mod otlp;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use bridle_core::audit::AuditEvent;
use bridle_core::audit::siem::{self, Format, Window};
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
    /// Print events, one per line: JSON lines as stored (verifiable offline with `verify
    /// --file`), ArcSight CEF or RFC 5424 syslog; each keeps its seq, hash and prev_hash. With
    /// `--syslog-tcp HOST:PORT` the lines go to a collector (RFC 6587 octet counting) instead;
    /// with `--format otlp` the events go to an OTLP/HTTP collector as log records.
    Export {
        /// `jsonl` (default), `cef`, `syslog`, or `otlp` (log records posted to `/v1/logs` of
        /// `--otlp-endpoint`, `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT`).
        #[arg(long, default_value = "jsonl")]
        format: String,
        /// Base URL of an OTLP/HTTP collector for `--format otlp` (`/v1/logs` is appended).
        #[arg(long)]
        otlp_endpoint: Option<String>,
        /// Same as `--format jsonl` (kept for scripts).
        #[arg(long, conflicts_with = "format")]
        jsonl: bool,
        /// Only this tenant.
        #[arg(long)]
        tenant: Option<String>,
        /// Events at or after this time (RFC 3339 or YYYY-MM-DD, UTC midnight).
        #[arg(long)]
        since: Option<String>,
        /// Events before this time (RFC 3339 or YYYY-MM-DD).
        #[arg(long)]
        until: Option<String>,
        /// Keep going: poll for new events every second until interrupted.
        #[arg(long)]
        follow: bool,
        /// Send each line to this syslog collector over TCP (HOST:PORT) instead of stdout.
        #[arg(long)]
        syslog_tcp: Option<String>,
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
        AuditCommand::Export { format, otlp_endpoint, jsonl: _, tenant, since, until, follow, syslog_tcp } => {
            let format = if format == "otlp" {
                let url = otlp::logs_url(otlp_endpoint.as_deref(), |k| std::env::var(k).ok()).context(
                    "--format otlp needs a collector: --otlp-endpoint URL, OTEL_EXPORTER_OTLP_LOGS_ENDPOINT or \
                     OTEL_EXPORTER_OTLP_ENDPOINT",
                )?;
                Output::Otlp(url)
            } else {
                Output::Lines(
                    Format::parse(format)
                        .with_context(|| format!("--format `{format}`: use jsonl, cef, syslog or otlp"))?,
                )
            };
            if syslog_tcp.is_some() && matches!(format, Output::Otlp(_)) {
                anyhow::bail!("--syslog-tcp sends syslog lines; --format otlp sends to an OTLP collector: choose one");
            }
            let time = |flag: &str, t: &Option<String>| -> anyhow::Result<Option<OffsetDateTime>> {
                t.as_deref()
                    .map(|t| {
                        Window::parse_time(t).with_context(|| format!("--{flag} `{t}`: use RFC 3339 or YYYY-MM-DD"))
                    })
                    .transpose()
            };
            let window = Window { since: time("since", since)?, until: time("until", until)? };
            let options = ExportOptions {
                tenant: tenant.as_deref(),
                format,
                window,
                follow: *follow,
                syslog_tcp: syslog_tcp.as_deref(),
            };
            export(config, db, &options).await
        }
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
pub async fn export(config: Option<&Path>, db: Option<&str>, o: &ExportOptions<'_>) -> anyhow::Result<ExitCode> {
    let config = super::config(config)?;
    let stores = super::plain_stores(&config, &super::store_url(&config, db)).await?;
    let hostname = std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()).unwrap_or_else(|| "bridle".to_owned());
    let mut sink = match (&o.format, o.syslog_tcp) {
        (Output::Otlp(url), _) => Sink::Otlp(otlp::Exporter::new(url.clone())?),
        (Output::Lines(format), Some(addr)) => Sink::Tcp(
            tokio::net::TcpStream::connect(addr)
                .await
                .with_context(|| format!("connecting to the collector {addr}"))?,
            *format,
        ),
        (Output::Lines(format), None) => Sink::Stdout(*format),
    };
    // Where each tenant's export stands: the last seq written.
    let mut after: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();
    loop {
        let tenants = match o.tenant {
            Some(t) => vec![t.to_owned()],
            None => stores.audit.tenants().await?,
        };
        for t in tenants {
            let from = after.entry(t.clone()).or_insert(0);
            loop {
                let page = stores.audit.events(&t, *from, PAGE).await?;
                let Some(last) = page.last() else { break };
                *from = last.seq;
                let events: Vec<&AuditEvent> = page.iter().filter(|e| o.window.holds(e)).collect();
                sink.send(&events, &hostname).await?;
            }
        }
        // Past `--until` nothing new can qualify: following would wait forever.
        let ended = o.window.until.is_some_and(|u| OffsetDateTime::now_utc() >= u);
        if !o.follow || ended {
            return Ok(ExitCode::SUCCESS);
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
}

/// What an export writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// Lines in this format (stdout or a syslog collector).
    Lines(Format),
    /// OTLP log records posted to this URL.
    Otlp(String),
}

/// What `bridle audit export` was asked.
#[derive(Debug, Clone)]
pub struct ExportOptions<'a> {
    /// Only this tenant.
    pub tenant: Option<&'a str>,
    /// What to write.
    pub format: Output,
    /// The time window.
    pub window: Window,
    /// Poll for new events until interrupted.
    pub follow: bool,
    /// A syslog collector (HOST:PORT) to send to instead of stdout.
    pub syslog_tcp: Option<&'a str>,
}

/// Where exported events go.
enum Sink {
    /// Lines in this format on stdout.
    Stdout(Format),
    /// Lines to a collector: RFC 6587 octet counting (`LEN SP MSG`), so a line may hold anything.
    Tcp(tokio::net::TcpStream, Format),
    /// An OTLP/HTTP collector, one request per page.
    Otlp(otlp::Exporter),
}

impl Sink {
    /// Sends one page's `events`.
    async fn send(&mut self, events: &[&AuditEvent], hostname: &str) -> anyhow::Result<()> {
        match self {
            Sink::Otlp(exporter) => exporter.send(events).await,
            Sink::Stdout(format) => events.iter().try_for_each(|e| super::out::line(&siem::line(e, *format, hostname))),
            Sink::Tcp(stream, format) => {
                use tokio::io::AsyncWriteExt;
                for e in events {
                    let line = siem::line(e, *format, hostname);
                    let frame = format!("{} {line}", line.len());
                    stream.write_all(frame.as_bytes()).await.context("sending to the collector")?;
                }
                Ok(())
            }
        }
    }
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
    Window::parse_time(text).with_context(|| format!("`{text}` is not a date (use YYYY-MM-DD or RFC 3339)"))
}
