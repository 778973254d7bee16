//! `bridle bench decisions`: durable audited decisions per second through the whole gate, on
//! the store a URL names, with or without group commit, from one or several replicas.
//!
//! The fixture is the bundled checkout configuration with the in-memory adapter: `concurrency`
//! tasks call `get_service_snapshot` as `requester-1`, one call in eight for a service the
//! principal does not hold (`policy_denied`), for `seconds` after a warm-up. Every call appends
//! its audit event and waits until the transaction holding it has committed, so each decision
//! counted is durable at the store's setting (SQLite `?synchronous=normal|full`; PostgreSQL
//! `?options[synchronous_commit]=on|off`). Replicas are separate stores (their own pools and, with
//! group commit, their own writers) on the same URL, each with its own gate, as two `bridle serve`
//! processes would be. The callers act for `tenants` tenants (the bundled `tenant-a` and copies
//! of it, `bench-tenant-2`, …), spread over the replicas independently of them, so each replica
//! appends to every tenant's chain; with one tenant, every call writes tenant-a's one chain, the
//! worst case for the chain's lock. Every chain is verified afterwards.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bridle_core::config::MemoryResource;
use bridle_core::ports::StoreError;
use bridle_core::{Code, RunContext};
use bridle_runtime::adapter::MemoryAdapter;
use bridle_runtime::gate::{CallRequest, Gate};
use bridle_runtime::store::Stores;
use serde::Serialize;
use serde_json::json;

/// One call in this many is denied by policy.
const DENY_EVERY: u64 = 8;

/// What to measure.
#[derive(Debug, Clone)]
pub struct DecisionsPlan {
    /// Store URL.
    pub store: String,
    /// Concurrent callers (spread over the replicas).
    pub concurrency: usize,
    /// Measured time.
    pub duration: Duration,
    /// Group commit: at most this many events per transaction; `None`: one transaction per call.
    pub batch: Option<usize>,
    /// Stores (pools, writers, gates) on the same URL.
    pub replicas: usize,
    /// Tenants the callers act for (at least 1).
    pub tenants: usize,
}

/// Per-call latency, microseconds.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest call.
    pub max: f64,
}

/// The figures of one run.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionsReport {
    /// Store URL without its password.
    pub store: String,
    /// `sqlite`, `postgres` or `memory`.
    pub backend: &'static str,
    /// The durability setting read from the URL (`normal`, `full`, `on`, `off`, `none`).
    pub durability: String,
    /// Group commit's largest batch, or `null` without group commit.
    pub batch: Option<usize>,
    /// Replicas.
    pub replicas: usize,
    /// Tenants the callers act for.
    pub tenants: usize,
    /// Concurrent callers.
    pub concurrency: usize,
    /// Measured seconds.
    pub seconds: f64,
    /// Decisions made (each audited and committed) in that time.
    pub decisions: u64,
    /// Of those, denied by policy.
    pub denied: u64,
    /// Decisions per second.
    pub decisions_per_s: f64,
    /// Wall-clock cost per decision at this concurrency (1 / throughput), microseconds.
    pub us_per_decision: f64,
    /// What one caller waited per call.
    pub latency_us: Latency,
    /// Audit events in the verified chain(s) afterwards.
    pub audit_events_verified: u64,
    /// Chains (tenants) verified afterwards.
    pub audit_chains_verified: usize,
}

/// A failure that stops the benchmark.
#[derive(Debug, thiserror::Error)]
pub enum DecisionsError {
    /// The store could not be opened or answered an error.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Something the benchmark relies on is missing or wrong.
    #[error("{0}")]
    Setup(String),
}

fn backend(url: &str) -> &'static str {
    if url.starts_with("sqlite:") {
        "sqlite"
    } else if url.starts_with("postgres") {
        "postgres"
    } else {
        "memory"
    }
}

/// The durability the URL asks for, as its setting's value.
fn durability(url: &str) -> String {
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let find = |key: &str| query.split('&').find_map(|p| p.strip_prefix(key)).map(str::to_ascii_lowercase);
    match backend(url) {
        "sqlite" if url.contains(":memory:") || query.contains("mode=memory") => "none".to_owned(),
        "sqlite" => find("synchronous=").unwrap_or_else(|| "normal".to_owned()),
        "postgres" => find("options[synchronous_commit]=").unwrap_or_else(|| "on".to_owned()),
        _ => "none".to_owned(),
    }
}

/// The bundled checkout configuration with its resources copied into `tenants - 1` more tenants,
/// and `requester-1` of each tenant (the bundled one first).
fn fixture(tenants: usize) -> Result<(bridle_core::config::Config, Vec<bridle_core::Principal>), DecisionsError> {
    let mut config = bridle_runtime::bundled::checkout().map_err(|e| DecisionsError::Setup(e.to_string()))?;
    let requester = config
        .principals
        .get("requester-1")
        .cloned()
        .ok_or_else(|| DecisionsError::Setup("the bundled config has no `requester-1`".to_owned()))?;
    let resources: Vec<_> = config.memory_adapter.iter().filter(|r| r.tenant == requester.tenant).cloned().collect();
    let mut principals = vec![requester.clone()];
    for n in 2..=tenants.max(1) {
        let tenant = format!("bench-tenant-{n}");
        config.memory_adapter.extend(resources.iter().map(|r| MemoryResource { tenant: tenant.clone(), ..r.clone() }));
        principals.push(bridle_core::Principal { tenant, ..requester.clone() });
    }
    Ok((config, principals))
}

async fn replica(plan: &DecisionsPlan, config: &Arc<bridle_core::config::Config>) -> Result<Gate, DecisionsError> {
    let stores = Stores::open(&plan.store).await?;
    let stores = match plan.batch {
        Some(n) => stores.with_batched_audit(n),
        None => stores,
    };
    let adapter = Arc::new(MemoryAdapter::from_config(config));
    bridle_runtime::engine::Engine::builder(config.clone(), stores, adapter)
        .gate()
        .map_err(|e| DecisionsError::Setup(e.to_string()))
}

/// Calls until `stop`, returning (latencies in µs of the calls completed between `measuring`
/// and `stop`, how many of those were denied).
async fn caller(
    gate: Arc<Gate>,
    principal: bridle_core::Principal,
    task: u64,
    measuring: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
) -> Result<(Vec<f64>, u64), DecisionsError> {
    // One run per caller, as one agent session would be: callers never contend on a run's record.
    let run = RunContext::new(&format!("run-bench-{}-{task}", uuid::Uuid::now_v7().simple()), "inc-bench");
    let read = CallRequest::new("get_service_snapshot", json!({"service": "checkout"}));
    let denied = CallRequest::new("get_service_snapshot", json!({"service": "payments"}));
    let (mut latencies, mut denials) = (Vec::new(), 0);
    let mut i = task;
    while !stop.load(Ordering::Relaxed) {
        let deny = i.is_multiple_of(DENY_EVERY);
        i += 1;
        let start = Instant::now();
        let outcome = gate
            .call(&principal, &run, if deny { &denied } else { &read })
            .await
            .map_err(|e| DecisionsError::Setup(format!("gate call failed: {e}")))?;
        let took = start.elapsed();
        let expected = if deny { Some(Code::PolicyDenied) } else { None };
        if outcome.code() != expected {
            return Err(DecisionsError::Setup(format!("unexpected verdict {:?}", outcome.verdict)));
        }
        // A decision counts when it completes inside the measured window.
        if measuring.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
            latencies.push(took.as_secs_f64() * 1e6);
            denials += u64::from(deny);
        }
    }
    Ok((latencies, denials))
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let last = sorted.len() - 1;
    // q is in [0, 1]; `min` keeps the index in range anyway.
    let at = ((last as f64) * q).round() as usize;
    sorted.get(at.min(last)).copied().unwrap_or_default()
}

/// Runs the benchmark on the current tokio runtime.
pub async fn decisions(plan: DecisionsPlan) -> Result<DecisionsReport, DecisionsError> {
    let (config, principals) = fixture(plan.tenants)?;
    let config = Arc::new(config);
    let mut replicas = Vec::new();
    for _ in 0..plan.replicas.max(1) {
        replicas.push(Arc::new(replica(&plan, &config).await?));
    }
    let (measuring, stop) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let mut tasks = Vec::new();
    for task in 0..plan.concurrency.max(1) {
        // Replica and tenant vary independently: every replica serves every tenant.
        let gate =
            replicas.get(task % replicas.len()).cloned().ok_or_else(|| DecisionsError::Setup("no replica".into()))?;
        let principal = principals.get((task / replicas.len()) % principals.len()).cloned();
        let principal = principal.ok_or_else(|| DecisionsError::Setup("no principal".into()))?;
        tasks.push(tokio::spawn(caller(gate, principal, task as u64, measuring.clone(), stop.clone())));
    }
    // Warm-up: a fifth of the measured time, at most a second.
    tokio::time::sleep((plan.duration / 5).min(Duration::from_secs(1))).await;
    measuring.store(true, Ordering::Relaxed);
    let start = Instant::now();
    tokio::time::sleep(plan.duration).await;
    stop.store(true, Ordering::Relaxed);
    let seconds = start.elapsed().as_secs_f64();
    let (mut latencies, mut denied) = (Vec::new(), 0);
    for t in tasks {
        let (l, d) = t.await.map_err(|e| DecisionsError::Setup(format!("a caller panicked: {e}")))??;
        latencies.extend(l);
        denied += d;
    }
    latencies.sort_unstable_by(f64::total_cmp);
    let decisions = latencies.len() as u64;
    let first = replicas.first().ok_or_else(|| DecisionsError::Setup("no replica".into()))?;
    let report = bridle_runtime::audit::verify(first.stores().audit.as_ref()).await?;
    if !report.ok() {
        return Err(DecisionsError::Setup(format!("audit chain broken: {:?}", report.broken)));
    }
    let per_s = decisions as f64 / seconds;
    Ok(DecisionsReport {
        store: first.stores().url.clone(),
        backend: backend(&plan.store),
        durability: durability(&plan.store),
        batch: plan.batch,
        replicas: replicas.len(),
        tenants: principals.len(),
        concurrency: plan.concurrency.max(1),
        seconds,
        decisions,
        denied,
        decisions_per_s: per_s,
        us_per_decision: if per_s > 0.0 { 1e6 / per_s } else { 0.0 },
        latency_us: Latency {
            p50: quantile(&latencies, 0.5),
            p90: quantile(&latencies, 0.9),
            p99: quantile(&latencies, 0.99),
            max: quantile(&latencies, 1.0),
        },
        audit_events_verified: report.tenants.iter().map(|(_, n)| n).sum(),
        audit_chains_verified: report.tenants.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durability_is_read_from_the_url() {
        assert_eq!(durability("sqlite://a.db"), "normal");
        assert_eq!(durability("sqlite://a.db?synchronous=FULL"), "full");
        assert_eq!(durability("sqlite::memory:"), "none");
        assert_eq!(durability("postgres://h/db"), "on");
        assert_eq!(durability("postgres://h/db?options[synchronous_commit]=off"), "off");
        assert_eq!(durability("memory"), "none");
    }

    #[test]
    fn quantiles_of_sorted_samples() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!((quantile(&s, 0.5) - 3.0).abs() < f64::EPSILON);
        assert!((quantile(&s, 1.0) - 5.0).abs() < f64::EPSILON);
        assert!(quantile(&[], 0.5).abs() < f64::EPSILON);
    }
}
