//! The drift job: reads a tenant's decision log oldest first through the CUSUM monitor of
//! `bridle_core::drift` and fires `drift_detected` hooks on critical alarms.
//!
//! Only the critical alarm that opens an episode fires hooks (one alert per metric and key until
//! that series has been quiet for `rearm` records); every other alarm, warnings included, is
//! only recorded in the report. A failing hook becomes a `hook_failed` event, never an error of
//! the scan. The scan keeps no state between runs: each run reads the log again from its start
//! (at most `limit` records), so it announces the open episodes of that window.

pub mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bridle_core::decision::DecisionRecord;
use bridle_core::drift::{Alarm, Level, Monitor, Params, Point, SeriesKey};
use bridle_core::ports::{DecisionLog, StoreError};
use serde::Serialize;
use serde_json::{Value, json};

use crate::hook::HookError;
use crate::notify::webhook::post_once;

/// What a hook is told: one critical alarm opening an episode.
#[derive(Debug, Clone, Serialize)]
pub struct DriftAlert {
    /// Always `drift_detected`.
    pub event: &'static str,
    /// Tenant scanned.
    pub tenant: String,
    /// Metric and key.
    pub series: SeriesKey,
    /// The alarm.
    pub alarm: Alarm,
    /// `(μ, σ)` of the series.
    pub baseline: Option<(f64, f64)>,
    /// The decision whose value crossed the line.
    pub decision_id: String,
}

/// A `drift_detected` handler.
#[async_trait::async_trait]
pub trait DriftHook: Send + Sync {
    /// Short name for the report.
    fn name(&self) -> &str;
    /// Handles one alert; the value (if any) is recorded as the hook's event detail.
    async fn on_drift(&self, alert: &DriftAlert) -> Result<Option<Value>, HookError>;
}

/// "Snapshot the state": writes the alert and the decisions before it as a JSON file in `dir`
/// and reports a `snapshot_captured` event naming the file.
#[derive(Debug, Clone)]
pub struct SnapshotHook {
    /// Directory for `drift-{metric}-{key}-{index}.json`.
    pub dir: PathBuf,
}

#[async_trait::async_trait]
impl DriftHook for SnapshotHook {
    fn name(&self) -> &str {
        "snapshot"
    }

    async fn on_drift(&self, alert: &DriftAlert) -> Result<Option<Value>, HookError> {
        let safe: String = format!("{}-{}", alert.series.metric, alert.series.key)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
            .collect();
        let path = self.dir.join(format!("drift-{safe}-{}.json", alert.alarm.index));
        let body = serde_json::to_vec_pretty(alert)?;
        let io = |path: &std::path::Path| {
            let path = path.display().to_string();
            move |cause: std::io::Error| HookError::Io { path, cause }
        };
        tokio::fs::create_dir_all(&self.dir).await.map_err(io(&self.dir))?;
        tokio::fs::write(&path, body).await.map_err(io(&path))?;
        Ok(Some(json!({"event": "snapshot_captured", "path": path.display().to_string()})))
    }
}

/// Callback type of [`ReanalysisHook`].
pub type ReanalysisFn = dyn Fn(&DriftAlert) -> Result<(), HookError> + Send + Sync;

/// "Trigger re-analysis": calls a callback (e.g. one that starts the analysis pipeline).
pub struct ReanalysisHook(pub Arc<ReanalysisFn>);

#[async_trait::async_trait]
impl DriftHook for ReanalysisHook {
    fn name(&self) -> &str {
        "reanalysis"
    }

    async fn on_drift(&self, alert: &DriftAlert) -> Result<Option<Value>, HookError> {
        (self.0)(alert).map(|()| Some(json!({"event": "trigger_fired"})))
    }
}

/// "Call a webhook": one signed POST per alert, signed like the approval webhook
/// (`notify/webhook.rs`: `X-Bridle-Signature: sha256=HMAC(secret, "{timestamp}.{body}")`) with
/// `X-Bridle-Event: drift_detected`; one attempt with a timeout, awaited.
#[derive(Debug, Clone)]
pub struct WebhookHook {
    /// Target URL.
    pub url: String,
    /// HMAC secret.
    pub secret: Vec<u8>,
    /// Timeout of the attempt.
    pub timeout: Duration,
}

#[async_trait::async_trait]
impl DriftHook for WebhookHook {
    fn name(&self) -> &str {
        "webhook"
    }

    async fn on_drift(&self, alert: &DriftAlert) -> Result<Option<Value>, HookError> {
        let body = serde_json::to_vec(alert)?;
        let status = post_once(&self.url, &self.secret, self.timeout, "drift_detected", body).await?;
        Ok(Some(json!({"event": "webhook_delivered", "status": status})))
    }
}

/// One thing the scan recorded.
#[derive(Debug, Clone, Serialize)]
pub struct DriftEvent {
    /// `drift_detected`, `drift_warning`, `drift_repeated` (a critical alarm inside an open
    /// episode), `hook_failed`, or a hook's own event (`snapshot_captured`, `trigger_fired`, …).
    pub event: String,
    /// Metric and key.
    pub series: SeriesKey,
    /// Index of the alarm in its series.
    pub index: u64,
    /// The decision it came from.
    pub decision_id: String,
    /// Hook name and detail, when a hook produced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

/// One series at the end of a scan.
#[derive(Debug, Clone, Serialize)]
pub struct SeriesReport {
    /// Metric and key.
    pub series: SeriesKey,
    /// `(μ, σ)`, `None` while still learning.
    pub baseline: Option<(f64, f64)>,
    /// Finite values seen.
    pub seen: u64,
    /// NaN / infinite values skipped.
    pub skipped: u64,
    /// `S⁺` now.
    pub upper: f64,
    /// `S⁻` now.
    pub lower: f64,
    /// `ok`, `warning` or `critical` (an open episode).
    pub status: Level,
    /// Every alarm, oldest first.
    pub alarms: Vec<Alarm>,
    /// The sums after each scored value (for plots; left out of JSON).
    #[serde(skip)]
    pub trace: Vec<Point>,
}

/// The result of one scan.
#[derive(Debug, Clone, Serialize)]
pub struct DriftReport {
    /// Tenant scanned.
    pub tenant: String,
    /// Records read.
    pub records: usize,
    /// Detector settings.
    pub params: Params,
    /// Every series, in key order.
    pub series: Vec<SeriesReport>,
    /// What was recorded and fired, in order.
    pub events: Vec<DriftEvent>,
}

/// Scans the last `limit` records of `tenant` oldest first, optionally one `metric` only,
/// firing `hooks` on each critical alarm that opens an episode.
pub async fn scan(
    log: &dyn DecisionLog,
    tenant: &str,
    limit: u32,
    params: Params,
    metric: Option<String>,
    hooks: &[Arc<dyn DriftHook>],
) -> Result<DriftReport, StoreError> {
    let mut records = log.recent(tenant, limit).await?;
    records.reverse();
    Ok(scan_records(tenant, &records, params, metric, hooks).await)
}

/// [`scan`] over records already in order (oldest first).
pub async fn scan_records(
    tenant: &str,
    records: &[DecisionRecord],
    params: Params,
    metric: Option<String>,
    hooks: &[Arc<dyn DriftHook>],
) -> DriftReport {
    let mut monitor = Monitor::new(params, metric);
    let mut events = Vec::new();
    for record in records {
        for (series, alarm) in monitor.observe(record) {
            let event = |event: &str, detail: Option<Value>| DriftEvent {
                event: event.to_owned(),
                series: series.clone(),
                index: alarm.index,
                decision_id: record.decision_id.clone(),
                detail,
            };
            match (alarm.level, alarm.opens_episode) {
                (Level::Critical, true) => {
                    events.push(event("drift_detected", None));
                    let baseline = monitor.series().find(|(k, _, _)| **k == series).and_then(|(_, c, _)| c.baseline());
                    let alert = DriftAlert {
                        event: "drift_detected",
                        tenant: tenant.to_owned(),
                        series: series.clone(),
                        alarm,
                        baseline,
                        decision_id: record.decision_id.clone(),
                    };
                    for hook in hooks {
                        match hook.on_drift(&alert).await {
                            Ok(detail) => {
                                let name = detail
                                    .as_ref()
                                    .and_then(|d| d.get("event"))
                                    .and_then(Value::as_str)
                                    .unwrap_or("hook_done")
                                    .to_owned();
                                events.push(event(&name, Some(json!({"hook": hook.name(), "detail": detail}))));
                            }
                            Err(error) => {
                                tracing::warn!(hook = hook.name(), %error, "drift hook failed");
                                events.push(event(
                                    "hook_failed",
                                    Some(json!({"hook": hook.name(), "error": error.to_string()})),
                                ));
                            }
                        }
                    }
                }
                (Level::Critical, false) => events.push(event("drift_repeated", None)),
                _ => events.push(event("drift_warning", None)),
            }
        }
    }
    let series = monitor
        .series()
        .map(|(key, c, trace)| {
            let (upper, lower) = c.sums();
            SeriesReport {
                series: key.clone(),
                baseline: c.baseline(),
                seen: c.seen(),
                skipped: c.skipped(),
                upper,
                lower,
                status: c.level(),
                alarms: c.alarms().to_vec(),
                trace: trace.to_vec(),
            }
        })
        .collect();
    DriftReport { tenant: tenant.to_owned(), records: records.len(), params: *monitor.params(), series, events }
}
