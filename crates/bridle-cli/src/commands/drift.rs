//! `bridle drift`: the CUSUM scan of a tenant's decision log, printed, and optionally plotted
//! as a self-contained SVG (no script) of each series' sums with the warning and critical lines.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bridle_core::drift::Params;
use bridle_runtime::drift::{DriftHook, DriftReport, SnapshotHook, WebhookHook};

// Arguments of `bridle drift` (its help is the variant's doc in main.rs).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tenant whose decision log is scanned (default: `bridle demo fab`'s tenant).
    #[arg(long, default_value = "fab-1")]
    pub tenant: String,
    /// Only this metric.
    #[arg(long, value_parser = bridle_core::drift::METRICS)]
    pub metric: Option<String>,
    /// The most recent decisions scanned (oldest first).
    #[arg(long, default_value_t = 10_000)]
    pub limit: u32,
    /// Values per series that set its baseline (mean and deviation).
    #[arg(long, default_value_t = 30)]
    pub baseline: usize,
    /// Allowance k, in standard deviations.
    #[arg(long, default_value_t = 0.5)]
    pub k: f64,
    /// Warning threshold, in standard deviations.
    #[arg(long, default_value_t = 2.5)]
    pub warning: f64,
    /// Critical threshold, in standard deviations.
    #[arg(long, default_value_t = 4.0)]
    pub critical: f64,
    /// Write an SVG of the sums with the warning and critical lines.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// On `drift_detected`, write a JSON snapshot of the alert into DIR.
    #[arg(long, value_name = "DIR")]
    pub snapshot_dir: Option<PathBuf>,
    /// On `drift_detected`, POST the signed alert to URL (secret in BRIDLE_DRIFT_WEBHOOK_SECRET).
    #[arg(long, value_name = "URL")]
    pub webhook: Option<String>,
}

/// Environment variable holding the webhook's HMAC secret.
const SECRET_ENV: &str = "BRIDLE_DRIFT_WEBHOOK_SECRET";

pub async fn run(g: &super::Global, args: &Args) -> anyhow::Result<ExitCode> {
    let config = super::config(g.config())?;
    let stores = super::stores(&config, g.db()).await?;
    let mut hooks: Vec<Arc<dyn DriftHook>> = Vec::new();
    if let Some(dir) = args.snapshot_dir.clone() {
        hooks.push(Arc::new(SnapshotHook { dir }));
    }
    if let Some(url) = args.webhook.clone() {
        let secret = std::env::var(SECRET_ENV).ok().filter(|s| !s.is_empty());
        let secret = secret.with_context(|| format!("`--webhook` needs the secret in `{SECRET_ENV}`"))?;
        hooks.push(Arc::new(WebhookHook { url, secret: secret.into_bytes(), timeout: Duration::from_secs(5) }));
    }
    let report = bridle_runtime::drift::scan(
        stores.decisions.as_ref(),
        &args.tenant,
        args.limit,
        Params {
            k: args.k,
            warning: args.warning,
            critical: args.critical,
            baseline_len: args.baseline,
            ..Params::default()
        },
        args.metric.clone(),
        &hooks,
    )
    .await?;
    if let Some(path) = args.plot.as_deref() {
        std::fs::write(path, svg(&report)).with_context(|| format!("writing `{}`", path.display()))?;
    }
    if g.json {
        super::out::line(&serde_json::to_string(&report)?)?;
    } else {
        print_text(&report)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(report: &DriftReport) -> anyhow::Result<()> {
    let p = &report.params;
    super::out::line(&format!(
        "tenant {}: {} records, k = {}, warning {}, critical {}, baseline {} records",
        report.tenant, report.records, p.k, p.warning, p.critical, p.baseline_len
    ))?;
    for s in &report.series {
        let baseline = match s.baseline {
            Some((m, sd)) => format!("μ {m:.4} σ {sd:.4}"),
            None => format!("learning ({} of {})", s.seen, p.baseline_len),
        };
        let critical = s.alarms.iter().filter(|a| a.level == bridle_core::drift::Level::Critical).count();
        let warnings = s.alarms.len() - critical;
        let skipped = if s.skipped > 0 { format!(", {} skipped", s.skipped) } else { String::new() };
        super::out::line(&format!(
            "{:<22} {:<18} {:<8} {baseline}  S+ {:.2} S- {:.2}  {critical} critical, {warnings} warnings ({} values{skipped})",
            s.series.metric,
            s.series.key,
            s.status.as_str(),
            s.upper,
            s.lower,
            s.seen
        ))?;
    }
    for e in report.events.iter().filter(|e| e.event != "drift_warning" && e.event != "drift_repeated") {
        let detail = e.detail.as_ref().map(|d| format!(" {d}")).unwrap_or_default();
        super::out::line(&format!(
            "{} {}/{} at {} (decision {}){detail}",
            e.event, e.series.metric, e.series.key, e.index, e.decision_id
        ))?;
    }
    Ok(())
}

const W: f64 = 760.0;
const PANEL: f64 = 150.0;
const LEFT: f64 = 50.0;
const TOP: f64 = 28.0;

/// One panel per series: `S⁺` above the axis, `−S⁻` below, dashed warning and critical lines.
pub fn svg(report: &DriftReport) -> String {
    let p = &report.params;
    let height = TOP + PANEL * report.series.len().max(1) as f64 + 10.0;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" viewBox="0 0 {W} {height}" font-family="sans-serif" font-size="11"><rect width="100%" height="100%" fill="white"/><text x="{LEFT}" y="16" font-size="13">CUSUM of tenant {} (k = {}, warning {}, critical {}): S+ blue, S- green</text>"#,
        escape(&report.tenant),
        p.k,
        p.warning,
        p.critical
    );
    for (i, s) in report.series.iter().enumerate() {
        let y0 = TOP + PANEL * i as f64;
        let mid = y0 + PANEL / 2.0;
        let peak = s.trace.iter().map(|t| t.upper.max(t.lower)).fold(p.critical * 1.2, f64::max);
        let scale = (PANEL / 2.0 - 14.0) / peak;
        let first = s.trace.first().map_or(0, |t| t.index) as f64;
        let last = s.trace.last().map_or(1, |t| t.index) as f64;
        let span = (last - first).max(1.0);
        let x = |index: u64| LEFT + (index as f64 - first) / span * (W - LEFT - 10.0);
        let _ = write!(
            out,
            r##"<g><rect x="{LEFT}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#ccc"/><text x="{:.1}" y="{:.1}">{} / {} ({})</text><line x1="{LEFT}" y1="{mid:.1}" x2="{:.1}" y2="{mid:.1}" stroke="#999"/>"##,
            y0 + 4.0,
            W - LEFT - 10.0,
            PANEL - 8.0,
            LEFT + 4.0,
            y0 + 16.0,
            escape(&s.series.metric),
            escape(&s.series.key),
            s.status.as_str(),
            W - 10.0
        );
        for (h, color) in [(p.warning, "#e69f00"), (p.critical, "#d55e00")] {
            for sign in [-1.0, 1.0] {
                let y = mid - sign * h * scale;
                let _ = write!(
                    out,
                    r#"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-dasharray="4 3"/>"#,
                    W - 10.0
                );
            }
            let _ = write!(out, r#"<text x="4" y="{:.1}" fill="{color}">±{h}</text>"#, mid - h * scale + 4.0);
        }
        let path = |f: &dyn Fn(&bridle_core::drift::Point) -> f64| {
            s.trace.iter().map(|t| format!("{:.1},{:.1}", x(t.index), mid - f(t) * scale)).collect::<Vec<_>>().join(" ")
        };
        let _ = write!(
            out,
            r##"<polyline fill="none" stroke="#0072b2" points="{}"/><polyline fill="none" stroke="#009e73" points="{}"/>"##,
            path(&|t| t.upper),
            path(&|t| -t.lower)
        );
        for a in s.alarms.iter().filter(|a| a.level == bridle_core::drift::Level::Critical) {
            let _ = write!(
                out,
                r##"<circle cx="{:.1}" cy="{:.1}" r="3" fill="#d55e00"><title>critical at {}</title></circle>"##,
                x(a.index),
                if a.side == bridle_core::drift::Side::Upper {
                    mid - p.critical * scale
                } else {
                    mid + p.critical * scale
                },
                a.index
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
