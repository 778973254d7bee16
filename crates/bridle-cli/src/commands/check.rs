//! `bridle check [--json] [--max-calls N] [FILE|-]`: reads a model's answer and runs each call
//! through the gate as the workbench principal. Exit 0 whenever a verdict was produced.
//!
//! The answer is read up to 4 × `max_chars` + 4 bytes and no further (a character is at most 4
//! bytes in UTF-8): an input that reaches that bound has more than `max_chars` characters and gets
//! the usual `answer_too_long` verdict without the rest ever being read.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use bridle_core::RunContext;
use bridle_runtime::check::{
    CheckReport, Status, WORKBENCH_PRINCIPAL, check, gate, too_long_report, workbench_principal,
};
use bridle_runtime::store::Stores;

use super::input::{Whole, read_whole};

pub async fn run(
    config: Option<&Path>,
    db: Option<&str>,
    json: bool,
    max_calls: Option<usize>,
    input: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let config = Arc::new(super::config(config)?);
    let principal = workbench_principal(&config)
        .with_context(|| format!("the configuration has no `{WORKBENCH_PRINCIPAL}` principal"))?;
    let mut limits = config.intake;
    if let Some(n) = max_calls {
        anyhow::ensure!(n >= 1, "--max-calls must be at least 1");
        limits.max_calls = n;
    }
    // A fresh in-memory store unless one is named.
    let stores = match db {
        Some(_) => super::stores(&config, db).await?,
        None => Stores::memory(),
    };
    let gate = gate(config, stores, super::tools()).context("building the guard")?;
    let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let run = RunContext::new(&format!("check-{}-{}", started.as_millis(), std::process::id()), WORKBENCH_PRINCIPAL);
    let report = match read_answer(input, limits.max_chars)? {
        Answer::Whole(answer) => check(&gate, &principal, &run, &answer, &limits).await?,
        Answer::TooLong { bytes_read } => too_long_report(&limits, bytes_read),
    };
    if json {
        super::out::line(&serde_json::to_string(&report)?)?;
    } else {
        print_text(&report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The answer, or how far reading went before it was known to be too long.
enum Answer {
    Whole(String),
    TooLong { bytes_read: usize },
}

/// The answer from a file, or from stdin for `-` or no file, read up to 4 × `max_chars` + 4
/// bytes. Bytes that are not UTF-8 are an error, also in a prefix cut short.
fn read_answer(input: Option<&Path>, max_chars: usize) -> anyhow::Result<Answer> {
    // INVARIANT: at most this many bytes of the answer are ever read.
    let cap = max_chars.saturating_mul(4).saturating_add(4);
    let not_utf8 = |at: usize| anyhow::anyhow!("the answer is not UTF-8 (invalid byte at offset {at})");
    match read_whole(input, cap)? {
        Whole::Complete(bytes) => {
            String::from_utf8(bytes).map(Answer::Whole).map_err(|e| not_utf8(e.utf8_error().valid_up_to()))
        }
        Whole::Capped(bytes) => match std::str::from_utf8(&bytes) {
            // A prefix may end inside a character (`error_len` is `None`): still UTF-8.
            Err(e) if e.error_len().is_some() => Err(not_utf8(e.valid_up_to())),
            _ => Ok(Answer::TooLong { bytes_read: bytes.len() }),
        },
    }
}

fn print_text(report: &CheckReport) -> anyhow::Result<()> {
    let p = &report.parse;
    match (p.status, p.code) {
        (Status::Rejected, Some(code)) => {
            super::out::line(&format!("parse: rejected {code}: {}", p.message.as_deref().unwrap_or_default()))?;
        }
        _ => {
            let format = p.format.map_or("-", |f| f.as_str());
            super::out::line(&format!("parse: ok format={format} calls={}", report.calls.len()))?;
        }
    }
    for (i, c) in report.calls.iter().enumerate() {
        let from = match (c.format, c.span) {
            (Some(f), Some(s)) => format!(" [{} bytes {}..{}]", f.as_str(), s.start, s.end),
            _ => String::new(),
        };
        let head = format!("call {}: {} {}{from}", i + 1, c.tool, c.arguments);
        let verdict = match (&c.result, c.code) {
            (Some(result), _) => format!("ok {result}"),
            (None, Some(code)) => format!("rejected {code}: {}", c.message.as_deref().unwrap_or_default()),
            (None, None) => "ok".to_owned(),
        };
        super::out::line(&format!("{head}\n  -> {verdict}"))?;
    }
    Ok(())
}
