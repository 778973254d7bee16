//! `bridle guard scan|mask|eval|train`: reads inputs, calls the guard in `bridle-core`, prints.
//! `train` and `eval --split` read the corpus files ([`sources`]); training itself is
//! `bridle_core::guard::model::train`.
//!
//! `scan` and `mask` stream their input line by line in constant memory: a plain line is at most
//! the document channel's limit (1 MB), a `--jsonl` line at most [`JSONL_LINE_BYTES`] with a
//! `text` of at most 1 MB. A bad line (over-long `input_too_long`, not UTF-8 `invalid_utf8`, not a
//! JSON object with a string `text` `bad_request`) gets its own error line
//! `{"id", "line", "error": {"code", "message"}}` and the lines after it are still answered; the
//! exit code is then 2.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use bridle_core::Code;
use bridle_core::guard::Detector;
use bridle_core::guard::combine::{self, Thresholds};
use bridle_core::guard::eval::{self, Report, split};
use bridle_core::guard::mask::{Masker, load_gitleaks};
use bridle_core::guard::model::{self, train as model_train, train::Source};
use bridle_core::guard::sanitize::{Channel, Limits};
use bridle_runtime::guard::Guard;
use serde_json::Value;

use super::input::{Line, Lines};
use super::out;

/// `bridle guard …`.
#[derive(Debug, clap::Subcommand)]
pub enum GuardCommand {
    /// Scan texts (document channel): one JSON line per input, in order.
    Scan {
        /// Input is JSON lines with `id` and `text` (default: plain lines).
        #[arg(long)]
        jsonl: bool,
        /// Add `rules`: each rule that counts toward the score, with its family, weight (a quoted
        /// or reported match at its reduced share) and where it matched.
        #[arg(long)]
        explain: bool,
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
        #[arg(required_unless_present = "split")]
        files: Vec<PathBuf>,
        /// The rules alone (without the learned model).
        #[arg(long)]
        no_model: bool,
        /// Candidate weights to judge instead of the compiled-in ones (a file `bridle guard
        /// train --out` wrote; with `--threshold`, else the bundled document threshold).
        #[arg(long, conflicts_with = "no_model")]
        weights: Option<PathBuf>,
        /// The model's block threshold for `--weights`.
        #[arg(long, requires = "weights")]
        threshold: Option<f64>,
        /// Train in process and report on texts the training never saw: `random` (the fixed
        /// test split) or `loso` (leave one source out), from the training sources.
        #[arg(long, value_parser = ["random", "loso"])]
        split: Option<String>,
        /// Also write one JSON line per text to this file: its id, file, label, category,
        /// language, whether the rules block it and the model's adjusted score (for choosing a
        /// threshold). With `--split`, the scores are out of fold (`file` names the fold) and
        /// each line carries its fold's document threshold.
        #[arg(long, conflicts_with = "no_model")]
        scores: Option<PathBuf>,
        #[command(flatten)]
        data: TrainingData,
    },
    /// Train the learned detector and write its weights (deterministic: same data, same bytes).
    Train {
        #[command(flatten)]
        data: TrainingData,
        /// Where the weights go.
        #[arg(long, default_value = "crates/bridle-core/src/guard/model/weights.bin")]
        out: PathBuf,
    },
}

/// The training sources: every `*.jsonl` of the shared corpus and the project's own files.
#[derive(Debug, clap::Args)]
pub struct TrainingData {
    /// The shared corpus directory.
    #[arg(long, default_value = "../shared/data/guard-corpus")]
    corpus: PathBuf,
    /// The project's own labelled files (never a `heldout*` file); a directory stands for its
    /// `*.jsonl` files, each a source of its own.
    #[arg(long = "data", default_values = [
        "crates/bridle-core/tests/data/guard/dev.jsonl",
        "crates/bridle-core/tests/data/guard/train.jsonl",
        "crates/bridle-core/tests/data/guard/train2.jsonl",
        "crates/bridle-core/tests/data/guard/train3.jsonl",
        "crates/bridle-core/tests/data/guard/train4",
        "crates/bridle-core/tests/data/guard/train5",
        "crates/bridle-core/tests/data/guard/train6",
        "crates/bridle-core/tests/data/guard/train7",
        "crates/bridle-core/tests/data/guard/tune8",
        "crates/bridle-core/tests/data/guard/train9",
        "crates/bridle-core/tests/data/guard/train10",
        "crates/bridle-core/tests/data/guard/train11",
        "crates/bridle-core/tests/data/guard/train12",
        "crates/bridle-core/tests/data/guard/background.jsonl",
        "crates/bridle-core/tests/data/hard_negatives.jsonl",
    ])]
    own: Vec<PathBuf>,
}

/// Runs `bridle guard …`.
pub fn run(g: &super::Global, command: &GuardCommand) -> anyhow::Result<ExitCode> {
    match command {
        GuardCommand::Scan { jsonl, explain, file } => scan(file.as_deref(), *jsonl, *explain),
        GuardCommand::Mask { jsonl, rules, file } => mask(g.config(), file.as_deref(), *jsonl, rules.as_deref()),
        GuardCommand::Eval { files, no_model, weights, threshold, split, scores, data } => match split.as_deref() {
            Some(kind) => eval_split(kind, data, g.json, scores.as_deref()),
            None => {
                let with = match weights {
                    Some(path) => With::Candidate(candidate(path, *threshold)?),
                    None if *no_model => With::Rules,
                    None => With::Bundled,
                };
                eval(files, &with, g.json, scores.as_deref())
            }
        },
        GuardCommand::Train { data, out } => train(data, out, g.json),
    }
}

/// Longest JSON line of `--jsonl` input (bytes): room for a document-sized `text` with escapes.
pub const JSONL_LINE_BYTES: usize = 8 * 1024 * 1024;

/// One input line: a text to work on, or why the line was refused.
enum Item {
    Text { id: Value, text: String },
    Refused { id: Value, code: Code, message: String },
}

/// Reads `file` (or stdin) line by line in constant memory and hands each input to `each`, in
/// order. Plain lines are texts (id: the line number), at most the document limit long; with
/// `jsonl`, each non-blank line is an object with `text` (at most the document limit) and an
/// optional `id`. A bad line becomes [`Item::Refused`] and the rest go on. Returns whether any
/// line was refused.
fn each_input(
    file: Option<&Path>,
    jsonl: bool,
    limits: &Limits,
    mut each: impl FnMut(u64, Item) -> anyhow::Result<()>,
) -> anyhow::Result<bool> {
    let mut lines = Lines::open(file)?;
    let cap = if jsonl { JSONL_LINE_BYTES } else { limits.document_bytes };
    let mut refused = false;
    while let Some((n, line)) = lines.next_line(cap).context("reading the input")? {
        let item = match line {
            Line::TooLong(bytes) => {
                let message = format!("line {n} has {bytes} bytes; at most {cap} are read");
                Item::Refused { id: plain_id(n, jsonl), code: Code::InputTooLong, message }
            }
            Line::NotUtf8(at) => {
                let message = format!("line {n} is not UTF-8 (invalid byte at offset {at})");
                Item::Refused { id: plain_id(n, jsonl), code: Code::InvalidUtf8, message }
            }
            Line::Text(text) if !jsonl => Item::Text { id: Value::from(n), text: text.to_owned() },
            Line::Text(text) if text.trim().is_empty() => continue,
            Line::Text(text) => json_item(n, text, limits),
        };
        refused |= matches!(item, Item::Refused { .. });
        each(n, item)?;
    }
    Ok(refused)
}

/// The id of a line that could not be read: its number for plain lines, none for JSON lines.
fn plain_id(n: u64, jsonl: bool) -> Value {
    if jsonl { Value::Null } else { Value::from(n) }
}

fn json_item(n: u64, line: &str, limits: &Limits) -> Item {
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            let message = format!("line {n} is not JSON: {e}");
            return Item::Refused { id: Value::Null, code: Code::BadRequest, message };
        }
    };
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    let Some(text) = value.get("text").and_then(Value::as_str) else {
        let message = format!("line {n} is not an object with a string `text`");
        return Item::Refused { id, code: Code::BadRequest, message };
    };
    match limits.check(Channel::Document, text) {
        Ok(()) => Item::Text { id, text: text.to_owned() },
        Err(r) => Item::Refused { id, code: r.code, message: format!("line {n}: {}", r.message) },
    }
}

/// The output line of a refused input.
fn refused_line(n: u64, id: &Value, code: Code, message: &str) -> serde_json::Map<String, Value> {
    let mut line = serde_json::Map::new();
    line.insert("id".to_owned(), id.clone());
    line.insert("line".to_owned(), Value::from(n));
    line.insert("error".to_owned(), serde_json::json!({"code": code.as_str(), "message": message}));
    line
}

/// Exit 0 when every line was answered, 2 when any was refused (its error line says why).
fn exit(command: &str, refused: bool) -> ExitCode {
    if refused {
        eprintln!("bridle guard {command}: some input lines were refused (see their `error` lines)");
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// The process's one compiled detector (the guard facade's).
fn detector() -> anyhow::Result<&'static Detector> {
    bridle_runtime::guard::detector().map_err(|e| anyhow::anyhow!("{e}"))
}

/// `bridle guard scan`: one JSON line per input, in order, with the verdict, the families found
/// and where (byte offsets into the input, each with its family: what an operator or a rule's
/// author reads to see why); with `explain`, the rules behind them. A refused line is blocked whole
/// (`"verdict": "block"` beside its `error`): never scanned in part.
pub fn scan(file: Option<&Path>, jsonl: bool, explain: bool) -> anyhow::Result<ExitCode> {
    let limits = Limits::default();
    let guard = Guard::with_limits(limits).map_err(|e| anyhow::anyhow!("{e}"))?;
    let rules = if explain { Some(detector()?) } else { None };
    let refused = each_input(file, jsonl, &limits, |n, item| {
        let line = match item {
            Item::Text { id, text } => match guard.detection(Channel::Document, &text) {
                Ok(d) => {
                    let mut line = serde_json::json!({
                        "id": id,
                        "verdict": d.verdict.as_str(),
                        "score": d.score,
                        "categories": d.categories.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
                        "spans": d.spans.iter().map(|s| serde_json::json!({
                            "start": s.start, "end": s.end, "category": s.category.as_str(),
                        })).collect::<Vec<_>>(),
                    });
                    if let (Some(detector), Some(obj)) = (rules, line.as_object_mut()) {
                        obj.insert("rules".to_owned(), serde_json::to_value(detector.explain(&text))?);
                    }
                    line
                }
                Err(r) => blocked(refused_line(n, &id, r.code, &r.message)),
            },
            Item::Refused { id, code, message } => blocked(refused_line(n, &id, code, &message)),
        };
        out::line(&line.to_string())
    })?;
    Ok(exit("scan", refused))
}

fn blocked(mut line: serde_json::Map<String, Value>) -> Value {
    line.insert("verdict".to_owned(), Value::from(bridle_core::guard::GuardVerdict::Block.as_str()));
    Value::Object(line)
}

/// `bridle guard mask`: one JSON line per input, in order; `--rules` adds gitleaks-format rules and
/// the configuration's `[guard] sensitive_terms` are masked too. A refused line prints no text.
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
    let refused = each_input(file, jsonl, &Limits::default(), |n, item| {
        let line = match item {
            Item::Text { id, text } => {
                let m = masker.mask(&text);
                serde_json::json!({"id": id, "masked": m.masked, "findings": m.findings})
            }
            Item::Refused { id, code, message } => Value::Object(refused_line(n, &id, code, &message)),
        };
        out::line(&line.to_string())
    })?;
    Ok(exit("mask", refused))
}

/// `bridle guard eval FILE...`: the pooled report, then (with more than one file) the rates per
/// family and language of each file apart (`dev` beside `heldout` and `heldout2`).
/// With `scores`, also writes each text's line there (`--scores`), from the same parsed files.
pub fn eval(files: &[PathBuf], with: &With, json: bool, scores: Option<&Path>) -> anyhow::Result<ExitCode> {
    let detector = detector()?;
    let guard = Guard::with_limits(Limits::default()).map_err(|e| anyhow::anyhow!("{e}"))?;
    // As `bridle guard scan` decides: the document channel, bundled thresholds.
    let decide = |text: &str| match with {
        With::Bundled => guard.document(text).blocked(),
        With::Rules => detector.detect(text).blocked(),
        With::Candidate((m, t)) => combine::decide(detector, m, *t, text).blocked(),
    };
    let mut samples = Vec::new();
    let mut splits = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading `{}`", f.display()))?;
        let (s, skipped) = eval::parse_jsonl(&text);
        if skipped > 0 {
            eprintln!("{}: skipped {skipped} lines that are not samples", f.display());
        }
        let name = f.file_stem().map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into_owned());
        samples.extend(s.iter().cloned());
        splits.push((name, s));
    }
    if let Some(path) = scores {
        write_scores(detector, &splits, with, path)?;
    }
    let masker = Masker::new().map_err(|e| anyhow::anyhow!("{e}"))?;
    let report = eval::evaluate(&decide, &masker, &samples);
    let by_split = if files.len() > 1 { eval::by_split(&decide, &splits) } else { Default::default() };
    if json {
        let mut value = serde_json::to_value(&report)?;
        if let Some(obj) = value.as_object_mut()
            && !by_split.is_empty()
        {
            obj.insert("splits".to_owned(), serde_json::to_value(&by_split)?);
        }
        out::line(&value.to_string())?;
    } else {
        print_report(&report)?;
        print_splits(&splits, &by_split)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `bridle guard eval --scores FILE`: the rules' verdict and the model's adjusted score of every
/// text, one JSON line each.
fn write_scores(
    detector: &Detector,
    splits: &[(String, Vec<eval::Sample>)],
    with: &With,
    path: &Path,
) -> anyhow::Result<()> {
    let bundled;
    let model = match with {
        With::Candidate((m, _)) => m,
        _ => {
            bundled = model::Model::bundled().map_err(|e| anyhow::anyhow!("{e}"))?;
            bundled
        }
    };
    let mut out = String::new();
    for (name, samples) in splits {
        for s in samples {
            let (rules, p) = combine::both(detector, model, &s.text);
            let scored = split::Scored {
                id: s.id.clone(),
                label: s.label.clone(),
                category: s.category.clone(),
                lang: s.lang.clone(),
                bytes: s.text.len(),
                rules: rules.blocked(),
                model: p,
            };
            out.push_str(&score_line(name, &scored).to_string());
            out.push('\n');
        }
    }
    std::fs::write(path, out).with_context(|| format!("writing `{}`", path.display()))
}

/// One `--scores` line: a text's id, file (or fold), label, category, language, bytes, the rules'
/// verdict and the model's adjusted score.
fn score_line(file: &str, s: &split::Scored) -> Value {
    serde_json::json!({
        "id": s.id, "file": file, "label": s.label, "category": s.category, "lang": s.lang,
        "bytes": s.bytes, "rules": s.rules, "model": s.model,
    })
}

/// `bridle guard eval --split … --scores FILE`: each fold's texts scored by the model trained
/// without them, one JSON line each (the lines of `--scores` and the fold's document threshold).
fn write_fold_scores(folds: &[split::Fold], path: &Path) -> anyhow::Result<()> {
    let mut out = String::new();
    for fold in folds {
        for s in &fold.scored {
            let mut line = score_line(&fold.name, s);
            if let Some(obj) = line.as_object_mut() {
                obj.insert("threshold".to_owned(), Value::from(fold.thresholds.document));
            }
            out.push_str(&line.to_string());
            out.push('\n');
        }
    }
    std::fs::write(path, out).with_context(|| format!("writing `{}`", path.display()))
}

/// What `bridle guard eval` decides with besides the rules.
pub enum With {
    /// The compiled-in model at the bundled document threshold (as `bridle guard scan`).
    Bundled,
    /// The rules alone.
    Rules,
    /// Candidate weights and their threshold.
    Candidate((model::Model, f64)),
}

/// Reads candidate weights (their own checksum: they are judged, not shipped) and the threshold.
fn candidate(path: &Path, threshold: Option<f64>) -> anyhow::Result<(model::Model, f64)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading `{}`", path.display()))?;
    let m = model::Model::parse(&bytes).map_err(|e| anyhow::anyhow!("`{}`: {e}", path.display()))?;
    let t = threshold.unwrap_or(Thresholds::BUNDLED.document);
    anyhow::ensure!(combine::valid_threshold(t), "--threshold must be above 0 and below 1, not {t}");
    Ok((m, t))
}

/// Rows `family/lang`, one column per file: `flagged/total rate`.
fn print_splits(
    splits: &[(String, Vec<eval::Sample>)],
    by_split: &std::collections::BTreeMap<String, eval::SplitRates>,
) -> anyhow::Result<()> {
    if by_split.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = splits.iter().map(|(n, _)| n.as_str()).collect();
    let mut keys: Vec<&String> = by_split.values().flat_map(|r| r.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    out::line("")?;
    let mut header = format!("{:<34}", "by file: family/lang");
    for n in &names {
        header.push_str(&format!(" {n:>18}"));
    }
    out::line(&header)?;
    for key in keys {
        let mut row = format!("{key:<34}");
        for n in &names {
            let cell = by_split
                .get(*n)
                .and_then(|r| r.get(key))
                .map_or_else(|| "-".to_owned(), |t| format!("{}/{} {:.0}%", t.flagged, t.total, t.rate * 100.0));
            row.push_str(&format!(" {cell:>18}"));
        }
        out::line(&row)?;
    }
    Ok(())
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

/// Reads the training sources: the corpus's `*.jsonl` files in name order, then the project's
/// own files. A `heldout*` file is refused: held-out data is never trained or tuned on.
pub fn sources(data: &TrainingData) -> anyhow::Result<Vec<Source>> {
    let mut paths: Vec<(String, PathBuf)> = jsonl_in(&data.corpus, "")?;
    for path in &data.own {
        if path.is_dir() {
            // A directory of writers' files: each file is its own source, named
            // `<directory>-<file>`, so leaving one source out leaves one writer out.
            paths.extend(jsonl_in(path, &format!("{}-", stem(path)))?);
        } else {
            paths.push((stem(path), path.clone()));
        }
    }
    let mut out = Vec::new();
    for (name, path) in paths {
        if name.starts_with("heldout") {
            anyhow::bail!("`{}` is held-out data: it is never trained or tuned on", path.display());
        }
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading `{}`", path.display()))?;
        let (samples, _) = eval::parse_jsonl(&text);
        if samples.iter().any(|s| s.label == "attack" || s.label == "benign") {
            out.push(Source { name, samples });
        }
    }
    Ok(out)
}

/// A path's file stem (its whole text when it has none).
fn stem(path: &Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The `*.jsonl` files of `dir` in name order, each named `prefix` + its stem.
fn jsonl_in(dir: &Path, prefix: &str) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the directory `{}`", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    Ok(paths.into_iter().map(|p| (format!("{prefix}{}", stem(&p)), p)).collect())
}

/// `bridle guard train`: trains on every source, chooses thresholds by cross-validation, writes
/// the weights and prints their SHA-256, the thresholds and the time taken.
pub fn train(data: &TrainingData, out_path: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let detector = detector()?;
    let sources = sources(data)?;
    let started = std::time::Instant::now();
    let trained = model_train::fit_sources(detector, &sources, &model_train::PARAMS);
    let secs = started.elapsed().as_secs_f64();
    let bytes = trained.model.to_bytes();
    std::fs::write(out_path, &bytes).with_context(|| format!("writing `{}`", out_path.display()))?;
    let sha = model::sha256_hex(&bytes);
    let t = &trained.thresholds;
    if json {
        let v = serde_json::json!({
            "out": out_path.display().to_string(), "bytes": bytes.len(), "sha256": sha, "seconds": secs,
            "thresholds": t, "stats": trained.stats,
            "sources": sources.iter().map(|s| &s.name).collect::<Vec<_>>(),
        });
        out::line(&v.to_string())?;
    } else {
        out::line(&format!("sources: {}", sources.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")))?;
        out::line(&format!("trained in {secs:.1} s: {:?}", trained.stats))?;
        out::line(&format!("thresholds: chat {} workflow {} document {}", t.chat, t.workflow, t.document))?;
        out::line(&format!("wrote {} ({} bytes), sha256 {sha}", out_path.display(), bytes.len()))?;
    }
    if sha != model::WEIGHTS_SHA256 || *t != Thresholds::BUNDLED {
        eprintln!(
            "these differ from the compiled-in model: set WEIGHTS_SHA256 in bridle-core/src/guard/model.rs \
             and Thresholds::BUNDLED in guard/combine.rs (and the example configs), then rebuild"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `bridle guard eval --split random|loso`: trains in process per fold and prints, per family
/// and language, the texts blocked by the rules, the model alone and the two combined.
pub fn eval_split(kind: &str, data: &TrainingData, json: bool, scores: Option<&Path>) -> anyhow::Result<ExitCode> {
    let detector = detector()?;
    let sources = sources(data)?;
    let started = std::time::Instant::now();
    let folds = if kind == "loso" {
        split::leave_one_source_out(detector, &sources, &model_train::PARAMS)
    } else {
        vec![split::random(detector, &sources, &model_train::PARAMS)]
    };
    let secs = started.elapsed().as_secs_f64();
    if let Some(path) = scores {
        write_fold_scores(&folds, path)?;
    }
    if json {
        out::line(&serde_json::json!({"split": kind, "seconds": secs, "folds": folds}).to_string())?;
        return Ok(ExitCode::SUCCESS);
    }
    for fold in &folds {
        let t = &fold.thresholds;
        out::line(&format!(
            "fold `{}` (thresholds chat {} document {}; trained on {} attacks, {} benign)",
            fold.name, t.chat, t.document, fold.stats.attacks, fold.stats.benign
        ))?;
        out::line(&format!("{:<36} {:>6} {:>14} {:>14} {:>14}", "family/lang", "texts", "rules", "model", "combined"))?;
        for (key, r) in &fold.rows {
            let cell = |n: usize| {
                #[allow(clippy::cast_precision_loss)]
                let rate = if r.total == 0 { 0.0 } else { n as f64 * 100.0 / r.total as f64 };
                format!("{n} {rate:.1}%")
            };
            out::line(&format!(
                "{key:<36} {:>6} {:>14} {:>14} {:>14}",
                r.total,
                cell(r.rules),
                cell(r.model),
                cell(r.combined)
            ))?;
        }
        if !fold.false_positives.is_empty() {
            let ids: Vec<String> = fold
                .false_positives
                .iter()
                .map(|(id, m)| format!("{id}{}", if *m { " (model)" } else { "" }))
                .collect();
            out::line(&format!("false positives: {}", ids.join(", ")))?;
        }
        out::line("")?;
    }
    out::line(&format!("{} fold(s) in {secs:.1} s", folds.len()))?;
    Ok(ExitCode::SUCCESS)
}
