//! `bridle guard scan|mask|eval`: reads inputs, calls the guard in `bridle-core`, prints.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use bridle_core::guard::Detector;
use bridle_core::guard::eval::{self, Report};
use bridle_core::guard::mask::{Masker, load_gitleaks};

use super::out;

fn read_input(file: Option<&Path>) -> anyhow::Result<String> {
    match file {
        None => read_stdin(),
        Some(p) if p.as_os_str() == "-" => read_stdin(),
        Some(p) => std::fs::read_to_string(p).with_context(|| format!("reading `{}`", p.display())),
    }
}

fn read_stdin() -> anyhow::Result<String> {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).context("reading stdin")?;
    Ok(s)
}

/// One input: `(id, text)`. With `--jsonl`, each line is an object with `id` and `text`;
/// otherwise each line is a text and its id is its 1-based line number.
fn inputs(text: &str, jsonl: bool) -> anyhow::Result<Vec<(serde_json::Value, String)>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if jsonl {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value =
                serde_json::from_str(line).with_context(|| format!("line {}: not a JSON object", n + 1))?;
            let t = v
                .get("text")
                .and_then(serde_json::Value::as_str)
                .with_context(|| format!("line {}: no `text`", n + 1))?;
            out.push((v.get("id").cloned().unwrap_or(serde_json::Value::Null), t.to_owned()));
        } else {
            out.push((serde_json::Value::from(n + 1), line.to_owned()));
        }
    }
    Ok(out)
}

fn detector() -> anyhow::Result<Detector> {
    Detector::new().map_err(|e| anyhow::anyhow!("{e}"))
}

/// `bridle guard scan`: one JSON line per input, in order.
pub fn scan(file: Option<&Path>, jsonl: bool) -> anyhow::Result<ExitCode> {
    let detector = detector()?;
    let limits = bridle_core::guard::sanitize::Limits::default();
    let text = read_input(file)?;
    for (id, t) in inputs(&text, jsonl)? {
        let d = match bridle_core::guard::scan_document(&detector, &limits, &t) {
            Ok(d) => d,
            Err(r) => {
                // Over the document limit: never scanned in part, so blocked whole.
                eprintln!("input {id}: {r}");
                let mut d = bridle_core::guard::Detection::clean();
                d.verdict = bridle_core::guard::GuardVerdict::Block;
                d.score = 1.0;
                d
            }
        };
        let line = serde_json::json!({
            "id": id,
            "verdict": d.verdict.as_str(),
            "score": d.score,
            "categories": d.categories.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
        });
        out::line(&line.to_string())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `bridle guard mask`: one JSON line per input, in order; `--rules` adds gitleaks-format rules and
/// the configuration's `[guard] sensitive_terms` are masked too.
pub fn mask(config: Option<&Path>, file: Option<&Path>, jsonl: bool, rules: Option<&Path>) -> anyhow::Result<ExitCode> {
    let terms = super::config(config)?.guard.sensitive_terms;
    let mut masker = Masker::new().and_then(|m| m.with_terms(&terms)).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(path) = rules {
        let text = bridle_runtime::bundled::read_text(path).map_err(|e| anyhow::anyhow!("{e}"))?;
        let extra = load_gitleaks(&text).map_err(|e| anyhow::anyhow!("{e}"))?;
        for (id, why) in &extra.skipped {
            eprintln!("{}: rule `{id}` skipped: {why}", path.display());
        }
        masker = masker.with_extra(extra);
    }
    let text = read_input(file)?;
    for (id, t) in inputs(&text, jsonl)? {
        let m = masker.mask(&t);
        let line = serde_json::json!({"id": id, "masked": m.masked, "findings": m.findings});
        out::line(&line.to_string())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `bridle guard eval FILE...`.
pub fn eval(files: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let detector = detector()?;
    let mut samples = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading `{}`", f.display()))?;
        let (mut s, skipped) = eval::parse_jsonl(&text);
        if skipped > 0 {
            eprintln!("{}: skipped {skipped} lines that are not samples", f.display());
        }
        samples.append(&mut s);
    }
    let masker = Masker::new().map_err(|e| anyhow::anyhow!("{e}"))?;
    let report = eval::evaluate(&detector, &masker, &samples);
    if json {
        out::line(&serde_json::to_string(&report)?)?;
    } else {
        print_report(&report)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(r: &Report) -> anyhow::Result<()> {
    out::line(&format!("{:<16} {:>7} {:>8} {:>8} {:>8}  met", "family", "texts", "flagged", "rate", "target"))?;
    for (name, t) in &r.families {
        let target = t.target.map_or_else(|| "-".to_owned(), |v| format!("{:.1}%", v * 100.0));
        let met = t.met.map_or("-", |m| if m { "yes" } else { "NO" });
        out::line(&format!("{name:<16} {:>7} {:>8} {:>7.1}% {target:>8}  {met}", t.total, t.flagged, t.rate * 100.0))?;
    }
    out::line("")?;
    out::line(&format!("{:<58} {:>7} {:>8} {:>8}", "label/category/lang", "texts", "flagged", "rate"))?;
    for (name, t) in &r.categories {
        out::line(&format!("{name:<58} {:>7} {:>8} {:>7.1}%", t.total, t.flagged, t.rate * 100.0))?;
    }
    out::line("")?;
    out::line(&format!(
        "texts={} bytes={} throughput={:.1} MB/s p50={:.1} µs p99={:.1} µs",
        r.texts, r.bytes, r.mb_per_s, r.p50_us, r.p99_us
    ))?;
    if !r.false_positive_ids.is_empty() {
        out::line(&format!("false positives: {}", r.false_positive_ids.join(", ")))?;
    }
    Ok(())
}
