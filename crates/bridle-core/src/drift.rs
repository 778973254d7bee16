//! Drift detection: a two-sided standardized CUSUM per series of decision metrics.
//!
//! Pure: no I/O, no clock. Every function is total — a NaN or infinite value is skipped and
//! counted, a zero deviation is floored, nothing panics. The runtime (`bridle-runtime`'s
//! `drift.rs`) feeds records in and fires hooks on what comes out.
//!
//! For each value `x`: `z = (x − μ) / σ`, `S⁺ = max(0, S⁺ + z − k)`, `S⁻ = max(0, S⁻ − z − k)`.
//! A side passing `warning` (default 2.5) raises one warning until it falls back below it; a side
//! passing `critical` (default 4.0) raises a critical alarm and **both sums reset to 0**, so the
//! next alarm needs fresh evidence (run lengths are counted from the reset). A critical alarm
//! opens an *episode*; the episode closes after `rearm` consecutive records with both sums below
//! the warning line, and only the alarm that opens an episode is meant to be announced
//! ([`Alarm::opens_episode`]). μ and σ are the mean and sample deviation of the first
//! `baseline_len` finite values of the series (those values are not scored), or given.
//!
//! False alarms implied by the defaults (k = 0.5, in control, normal data): two-sided h = 4
//! gives one critical alarm per ~168 records per series; h = 2.5 one warning per ~30–35.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decision::DecisionRecord;

/// How loud a series is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Both sums below the warning line.
    Ok,
    /// A sum above the warning line.
    Warning,
    /// A sum passed the critical line.
    Critical,
}

impl Level {
    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warning => "warning",
            Self::Critical => "critical",
        }
    }
}

/// Which sum raised an alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// `S⁺`: the metric went up.
    Upper,
    /// `S⁻`: the metric went down.
    Lower,
}

/// Detector settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    /// Allowance `k` in σ units (half the shift to detect quickly).
    pub k: f64,
    /// Warning threshold `h` in σ units.
    pub warning: f64,
    /// Critical threshold `h` in σ units.
    pub critical: f64,
    /// Values used to learn μ and σ when no baseline is given.
    pub baseline_len: usize,
    /// A given baseline `(mean, deviation)`; `None` learns it.
    pub baseline: Option<(f64, f64)>,
    /// Smallest σ used (a constant baseline would otherwise divide by zero).
    pub min_sigma: f64,
    /// Records with both sums below `warning` that close an episode.
    pub rearm: usize,
}

impl Default for Params {
    fn default() -> Self {
        Self { k: 0.5, warning: 2.5, critical: 4.0, baseline_len: 30, baseline: None, min_sigma: 1e-6, rearm: 10 }
    }
}

/// One alarm of a series.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Alarm {
    /// Position of the value in the series (finite values, baseline included, from 0).
    pub index: u64,
    /// `warning` or `critical`.
    pub level: Level,
    /// Which sum.
    pub side: Side,
    /// The sum when it crossed.
    pub sum: f64,
    /// The value that made it cross.
    pub value: f64,
    /// True for the critical alarm that opens an episode (the one to announce).
    pub opens_episode: bool,
}

/// What one scored value did.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Position in the series.
    pub index: u64,
    /// Standardized value.
    pub z: f64,
    /// `S⁺` after the update (0 after a critical reset).
    pub upper: f64,
    /// `S⁻` after the update.
    pub lower: f64,
    /// Level of this step (critical when it alarmed).
    pub level: Level,
    /// Alarms this value raised (at most one per side).
    pub alarms: [Option<Alarm>; 2],
}

/// A two-sided CUSUM over one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Cusum {
    params: Params,
    learned: (u64, f64, f64),
    baseline: Option<(f64, f64)>,
    upper: f64,
    lower: f64,
    warned: [bool; 2],
    in_episode: bool,
    quiet: usize,
    seen: u64,
    skipped: u64,
    alarms: Vec<Alarm>,
}

impl Cusum {
    /// A detector; a given baseline is used at once, else the first `baseline_len` values.
    pub fn new(params: Params) -> Self {
        let baseline = params.baseline.map(|(m, s)| (m, floor_sigma(&params, m, s)));
        Self {
            params,
            learned: (0, 0.0, 0.0),
            baseline,
            upper: 0.0,
            lower: 0.0,
            warned: [false; 2],
            in_episode: false,
            quiet: 0,
            seen: 0,
            skipped: 0,
            alarms: Vec::new(),
        }
    }

    /// Feeds one value; `None` when it was skipped (not finite) or went into the baseline.
    pub fn update(&mut self, x: f64) -> Option<Step> {
        if !x.is_finite() {
            self.skipped += 1;
            return None;
        }
        let index = self.seen;
        self.seen += 1;
        let Some((mean, sigma)) = self.baseline else {
            self.learn(x);
            return None;
        };
        let z = ((x - mean) / sigma).clamp(-1e12, 1e12);
        let k = self.params.k;
        self.upper = (self.upper + z - k).max(0.0);
        self.lower = (self.lower - z - k).max(0.0);
        let mut alarms = [None, None];
        let mut critical = false;
        for (i, (side, sum)) in [(Side::Upper, self.upper), (Side::Lower, self.lower)].into_iter().enumerate() {
            let warned = self.warned.get_mut(i);
            let slot = alarms.get_mut(i);
            let (Some(warned), Some(slot)) = (warned, slot) else { continue };
            if sum > self.params.critical {
                critical = true;
                *slot = Some(Alarm { index, level: Level::Critical, side, sum, value: x, opens_episode: false });
            } else if sum > self.params.warning {
                if !*warned {
                    *warned = true;
                    *slot = Some(Alarm { index, level: Level::Warning, side, sum, value: x, opens_episode: false });
                }
            } else {
                *warned = false;
            }
        }
        let level = if critical {
            // INVARIANT: a critical alarm resets both sums, so run lengths count from here.
            self.upper = 0.0;
            self.lower = 0.0;
            self.warned = [false; 2];
            self.quiet = 0;
            let opens = !self.in_episode;
            self.in_episode = true;
            for a in alarms.iter_mut().flatten() {
                a.opens_episode = opens && a.level == Level::Critical;
            }
            Level::Critical
        } else if self.upper > self.params.warning || self.lower > self.params.warning {
            self.quiet = 0;
            Level::Warning
        } else {
            self.quiet += 1;
            if self.quiet >= self.params.rearm {
                self.in_episode = false;
            }
            Level::Ok
        };
        self.alarms.extend(alarms.iter().flatten().copied());
        Some(Step { index, z, upper: self.upper, lower: self.lower, level, alarms })
    }

    fn learn(&mut self, x: f64) {
        // Welford's running mean and sum of squared deviations.
        let (n, mean, m2) = self.learned;
        let n = n + 1;
        let delta = x - mean;
        let mean = mean + delta / n as f64;
        let m2 = m2 + delta * (x - mean);
        self.learned = (n, mean, m2);
        if n as usize >= self.params.baseline_len.max(1) {
            let sd = if n > 1 { (m2 / (n - 1) as f64).sqrt() } else { 0.0 };
            self.baseline = Some((mean, floor_sigma(&self.params, mean, sd)));
        }
    }

    /// `(μ, σ)` once known (σ already floored).
    pub fn baseline(&self) -> Option<(f64, f64)> {
        self.baseline
    }

    /// Current `(S⁺, S⁻)`.
    pub fn sums(&self) -> (f64, f64) {
        (self.upper, self.lower)
    }

    /// The level now: critical while an episode is open, else from the sums.
    pub fn level(&self) -> Level {
        if self.in_episode {
            Level::Critical
        } else if self.upper > self.params.warning || self.lower > self.params.warning {
            Level::Warning
        } else {
            Level::Ok
        }
    }

    /// Finite values seen (baseline included).
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Values skipped because they were NaN or infinite.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Every alarm raised so far, oldest first.
    pub fn alarms(&self) -> &[Alarm] {
        &self.alarms
    }

    /// The settings.
    pub fn params(&self) -> &Params {
        &self.params
    }
}

fn floor_sigma(params: &Params, mean: f64, sd: f64) -> f64 {
    let floor = params.min_sigma.max(1e-9 * mean.abs()).max(f64::MIN_POSITIVE);
    if sd.is_finite() && sd > floor { sd } else { floor }
}

/// A series: a metric and the key it is split by (`*` when it is not split).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SeriesKey {
    /// `confidence`, `latency_ms`, `tokens`, `rejection_rate`, `degraded_rate`,
    /// `injection_detections`, `auto_executions`.
    pub metric: String,
    /// Agent, principal or equipment; `*` for tenant-wide metrics.
    pub key: String,
}

/// The metric names [`metrics_of`] produces.
pub const METRICS: [&str; 7] = [
    "confidence",
    "latency_ms",
    "tokens",
    "rejection_rate",
    "degraded_rate",
    "injection_detections",
    "auto_executions",
];

/// The metrics of one decision record, as `(metric, key, value)`.
///
/// `confidence`, `latency_ms` and `tokens` (prompt + completion) per agent — latency and tokens only
/// when the model answered (a record with no model and no tokens is a fallback); `rejection_rate`
/// (1 for `rejected` / `blocked`) and `degraded_rate` (1 for `degraded` or
/// `harness_checks.degraded`) tenant-wide; `injection_detections` per principal
/// (`harness_checks.principal`, else `input.principal`, else the agent); `auto_executions` per
/// equipment (1 for `executed` with no approval) when the record names one.
pub fn metrics_of(record: &DecisionRecord) -> Vec<(&'static str, String, f64)> {
    let checks = &record.harness_checks;
    let agent = record.agent.clone();
    let verdict = record.final_verdict.as_str();
    let mut out = Vec::new();
    if let Some(c) = checks.get("confidence").and_then(Value::as_f64) {
        out.push(("confidence", agent.clone(), c));
    }
    let tokens = record.prompt_tokens.saturating_add(record.completion_tokens);
    if !record.model.is_empty() || tokens > 0 {
        out.push(("latency_ms", agent.clone(), record.latency_ms as f64));
        out.push(("tokens", agent.clone(), tokens as f64));
    }
    out.push(("rejection_rate", "*".to_owned(), flag(matches!(verdict, "rejected" | "blocked"))));
    let degraded = verdict == "degraded" || checks.get("degraded").and_then(Value::as_bool) == Some(true);
    out.push(("degraded_rate", "*".to_owned(), flag(degraded)));
    if let Some(hit) = checks.get("injection_detected").and_then(Value::as_bool) {
        let principal = text_at(checks, "principal").or_else(|| text_at(&record.input, "principal")).unwrap_or(agent);
        out.push(("injection_detections", principal, flag(hit)));
    }
    if let Some(equipment) = equipment_of(record) {
        let approved = checks.get("approval_id").is_some_and(|a| !a.is_null());
        out.push(("auto_executions", equipment, flag(verdict == "executed" && !approved)));
    }
    out
}

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

fn text_at(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn equipment_of(record: &DecisionRecord) -> Option<String> {
    for v in [&record.output, &record.input] {
        for field in ["equipment", "equipment_id"] {
            if let Some(e) = text_at(v, field) {
                return Some(e);
            }
        }
        if let Value::Object(m) = v {
            for inner in m.values() {
                for field in ["equipment", "equipment_id"] {
                    if let Some(e) = text_at(inner, field) {
                        return Some(e);
                    }
                }
            }
        }
    }
    None
}

/// One point of a series' trace (for plots).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Position in the series.
    pub index: u64,
    /// `S⁺`.
    pub upper: f64,
    /// `S⁻`.
    pub lower: f64,
}

/// Many series at once, created on first sight with the same [`Params`].
#[derive(Debug, Clone, Default)]
pub struct Monitor {
    params: Params,
    series: BTreeMap<SeriesKey, (Cusum, Vec<Point>)>,
    metric: Option<String>,
}

impl Monitor {
    /// A monitor for every metric, or only `metric`.
    pub fn new(params: Params, metric: Option<String>) -> Self {
        Self { params, series: BTreeMap::new(), metric }
    }

    /// Feeds one record; returns the alarms it raised with their series.
    pub fn observe(&mut self, record: &DecisionRecord) -> Vec<(SeriesKey, Alarm)> {
        let mut out = Vec::new();
        for (metric, key, value) in metrics_of(record) {
            if self.metric.as_deref().is_some_and(|m| m != metric) {
                continue;
            }
            let series = SeriesKey { metric: metric.to_owned(), key };
            let (cusum, trace) =
                self.series.entry(series.clone()).or_insert_with(|| (Cusum::new(self.params), Vec::new()));
            if let Some(step) = cusum.update(value) {
                trace.push(Point { index: step.index, upper: step.upper, lower: step.lower });
                out.extend(step.alarms.iter().flatten().map(|a| (series.clone(), *a)));
            }
        }
        out
    }

    /// Every series, in key order, with its detector and trace.
    pub fn series(&self) -> impl Iterator<Item = (&SeriesKey, &Cusum, &[Point])> {
        self.series.iter().map(|(k, (c, t))| (k, c, t.as_slice()))
    }

    /// The settings.
    pub fn params(&self) -> &Params {
        &self.params
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn skips_non_finite_and_floors_a_constant_baseline() {
        let mut c = Cusum::new(Params { baseline_len: 3, ..Params::default() });
        for x in [f64::NAN, 1.0, f64::INFINITY, 1.0, 1.0] {
            assert!(c.update(x).is_none());
        }
        assert_eq!(c.skipped(), 2);
        let (m, s) = c.baseline().unwrap();
        assert_eq!(m, 1.0);
        assert!(s > 0.0);
        let step = c.update(2.0).unwrap();
        assert_eq!(step.level, Level::Critical);
        assert_eq!(c.sums(), (0.0, 0.0), "sums reset after a critical alarm");
        assert!(step.alarms[0].unwrap().opens_episode);
        let again = c.update(2.0).unwrap();
        assert!(!again.alarms[0].unwrap().opens_episode, "same episode");
    }

    #[test]
    fn warns_once_per_excursion() {
        let mut c = Cusum::new(Params { baseline: Some((0.0, 1.0)), ..Params::default() });
        let levels: Vec<_> = [1.5, 1.5, 1.5, 0.6, -3.0].iter().map(|x| c.update(*x).unwrap()).collect();
        // S⁺: 1, 2, 3 (warning), 3.1 (still warning, no new alarm), 0 (back).
        assert_eq!(levels[2].alarms[0].unwrap().level, Level::Warning);
        assert!(levels[3].alarms[0].is_none());
        assert_eq!(levels[4].level, Level::Ok);
        assert_eq!(c.alarms().len(), 1);
    }
}
