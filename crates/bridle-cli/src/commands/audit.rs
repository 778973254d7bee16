//! `bridle audit verify|export|prune`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Events read per page while exporting.
const PAGE: u32 = 1000;

pub async fn verify(config: Option<&Path>, db: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let config = super::config(config)?;
    let stores = super::stores(&config, db).await?;
    let report = bridle_runtime::audit::verify(stores.audit.as_ref()).await?;
    if json {
        super::out::line(&serde_json::to_string(&report)?)?;
    } else {
        for (tenant, n) in &report.tenants {
            super::out::line(&format!("{tenant}: ok ({n} events)"))?;
        }
        for b in &report.broken {
            super::out::line(&format!("{}: broken at seq {}: {}", b.tenant, b.seq, b.problem))?;
        }
    }
    Ok(if report.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
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
    let stores = super::stores(&config, db).await?;
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
    let stores = super::stores(&config, db).await?;
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
