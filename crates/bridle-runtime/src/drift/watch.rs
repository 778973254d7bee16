//! The drift watch: `bridle serve` scans the decision logs of `[drift]`'s tenants every
//! interval with [`super::scan`], and each hook hears of an episode once per process.
//!
//! A scan keeps no state, so every scan announces the open episodes of its window again;
//! [`Dedup`] wraps each hook and forwards an alert only the first time its tenant, series and
//! decision are seen. The window is the last `limit` records, so as long as the log holds
//! fewer, an episode is announced exactly once; past that, a baseline learned from a later
//! window may place an alarm on another decision and announce it anew.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use bridle_core::config::DriftSettings;
use bridle_core::ports::{DecisionLog, StoreError};
use serde_json::{Value, json};

use super::{DriftAlert, DriftHook, DriftReport, scan};

/// A hook that hears of each alert once.
pub struct Dedup {
    hook: Arc<dyn DriftHook>,
    seen: Mutex<HashSet<(String, String, String, String)>>,
}

impl Dedup {
    /// Wraps `hook`.
    pub fn new(hook: Arc<dyn DriftHook>) -> Self {
        Self { hook, seen: Mutex::new(HashSet::new()) }
    }
}

#[async_trait::async_trait]
impl DriftHook for Dedup {
    fn name(&self) -> &str {
        self.hook.name()
    }

    async fn on_drift(&self, alert: &DriftAlert) -> Result<Option<Value>, crate::hook::HookError> {
        let key =
            (alert.tenant.clone(), alert.series.metric.clone(), alert.series.key.clone(), alert.decision_id.clone());
        let first = self.seen.lock().map_err(|_| crate::hook::HookError::Poisoned("drift dedup"))?.insert(key);
        if first { self.hook.on_drift(alert).await } else { Ok(Some(json!({"event": "drift_already_announced"}))) }
    }
}

/// One scan of every configured tenant (one per metric named, or one over all metrics).
pub async fn scan_all(
    log: &dyn DecisionLog,
    settings: &DriftSettings,
    hooks: &[Arc<dyn DriftHook>],
) -> Result<Vec<DriftReport>, StoreError> {
    let metrics: Vec<Option<String>> =
        if settings.metrics.is_empty() { vec![None] } else { settings.metrics.iter().cloned().map(Some).collect() };
    let mut reports = Vec::new();
    for tenant in &settings.tenants {
        for metric in &metrics {
            reports.push(scan(log, tenant, settings.limit, settings.params, metric.clone(), hooks).await?);
        }
    }
    Ok(reports)
}

/// Starts the watch when `[drift] interval_seconds` is set: a scan at once, then every interval,
/// each hook wrapped in [`Dedup`]. Abort the handle to stop it.
pub fn spawn(
    log: Arc<dyn DecisionLog>,
    settings: DriftSettings,
    hooks: Vec<Arc<dyn DriftHook>>,
) -> Option<tokio::task::JoinHandle<()>> {
    let interval = settings.interval?;
    let hooks: Vec<Arc<dyn DriftHook>> =
        hooks.into_iter().map(|h| Arc::new(Dedup::new(h)) as Arc<dyn DriftHook>).collect();
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            match scan_all(log.as_ref(), &settings, &hooks).await {
                Ok(reports) => {
                    for r in &reports {
                        let detected = r.events.iter().filter(|e| e.event == "drift_detected").count();
                        tracing::info!(tenant = %r.tenant, records = r.records, detected, "drift scan");
                    }
                }
                Err(error) => tracing::warn!(%error, "drift scan failed: store unavailable"),
            }
        }
    }))
}
