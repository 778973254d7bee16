//! `[drift]`: the CUSUM scan `bridle serve` runs on an interval over the decision log (off by
//! default), with the same settings `bridle drift` takes as flags.
//!
//! ```toml
//! [drift]
//! interval_seconds = 300          # absent: no scan while serving
//! tenants = ["fab-1"]             # whose decision logs are scanned
//! metrics = ["confidence"]        # default: every metric
//! k = 0.5
//! warning = 2.5
//! critical = 4.0
//! baseline = 30                   # values per series that set μ and σ
//! limit = 10000                   # most recent records per scan
//! snapshot_dir = "bridle-data/drift"              # optional: `drift_detected` → JSON snapshot
//! webhook = "https://ops.example/bridle-drift"    # optional: signed POST ([webhooks] secret_env)
//! ```

use serde::Deserialize;

use super::validate::Errors;
use crate::drift::{METRICS, Params};

/// Shortest interval accepted.
const MIN_INTERVAL_SECONDS: u64 = 10;
/// Longest interval accepted (a day).
const MAX_INTERVAL_SECONDS: u64 = 86_400;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDrift {
    interval_seconds: Option<u64>,
    #[serde(default)]
    tenants: Vec<String>,
    #[serde(default)]
    metrics: Vec<String>,
    k: Option<f64>,
    warning: Option<f64>,
    critical: Option<f64>,
    baseline: Option<usize>,
    limit: Option<u32>,
    snapshot_dir: Option<String>,
    webhook: Option<String>,
}

/// Validated `[drift]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DriftSettings {
    /// Seconds between scans while serving; `None`: off.
    pub interval: Option<std::time::Duration>,
    /// Tenants scanned.
    pub tenants: Vec<String>,
    /// Metrics scanned (empty: all).
    pub metrics: Vec<String>,
    /// Detector settings.
    pub params: Params,
    /// Most recent records per scan.
    pub limit: u32,
    /// Where `drift_detected` snapshots go.
    pub snapshot_dir: Option<String>,
    /// Where `drift_detected` is POSTed.
    pub webhook: Option<String>,
}

impl Default for DriftSettings {
    fn default() -> Self {
        Self {
            interval: None,
            tenants: Vec::new(),
            metrics: Vec::new(),
            params: Params::default(),
            limit: 10_000,
            snapshot_dir: None,
            webhook: None,
        }
    }
}

pub(super) fn drift_settings(raw: &RawDrift, errors: &mut Errors) -> DriftSettings {
    let defaults = DriftSettings::default();
    if let Some(s) = raw.interval_seconds
        && !(MIN_INTERVAL_SECONDS..=MAX_INTERVAL_SECONDS).contains(&s)
    {
        errors.push(
            "drift.interval_seconds",
            format!("must be between {MIN_INTERVAL_SECONDS} and {MAX_INTERVAL_SECONDS}"),
        );
    }
    if raw.interval_seconds.is_some() && raw.tenants.is_empty() {
        errors.push("drift.tenants", "name at least one tenant to scan");
    }
    if raw.tenants.iter().any(|t| t.trim().is_empty()) {
        errors.push("drift.tenants", "a tenant must not be empty");
    }
    for m in &raw.metrics {
        if !METRICS.contains(&m.as_str()) {
            errors.push("drift.metrics", format!("`{m}` is not a metric (known: {})", METRICS.join(", ")));
        }
    }
    let p = defaults.params;
    let params = Params {
        k: raw.k.unwrap_or(p.k),
        warning: raw.warning.unwrap_or(p.warning),
        critical: raw.critical.unwrap_or(p.critical),
        baseline_len: raw.baseline.unwrap_or(p.baseline_len),
        ..p
    };
    if !(params.k.is_finite() && params.k >= 0.0) {
        errors.push("drift.k", "must be a number ≥ 0");
    }
    if !(params.warning.is_finite() && params.warning > 0.0) {
        errors.push("drift.warning", "must be a number > 0");
    }
    if !(params.critical.is_finite() && params.critical > params.warning) {
        errors.push("drift.critical", "must be a number above `warning`");
    }
    if !(2..=100_000).contains(&params.baseline_len) {
        errors.push("drift.baseline", "must be between 2 and 100000");
    }
    let limit = raw.limit.unwrap_or(defaults.limit);
    if limit == 0 {
        errors.push("drift.limit", "must be at least 1");
    }
    if let Some(url) = &raw.webhook
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        errors.push("drift.webhook", format!("`{url}` is not an http:// or https:// URL"));
    }
    DriftSettings {
        interval: raw.interval_seconds.map(std::time::Duration::from_secs),
        tenants: raw.tenants.clone(),
        metrics: raw.metrics.clone(),
        params,
        limit,
        snapshot_dir: raw.snapshot_dir.clone(),
        webhook: raw.webhook.clone(),
    }
}
