//! The drift job over a decision log: one `drift_detected` per episode, its hooks (snapshot file,
//! re-analysis callback, signed webhook), a failing hook recorded, warnings only recorded.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use bridle_core::decision::DecisionRecord;
use bridle_core::drift::{Level, Params};
use bridle_runtime::drift::{DriftAlert, DriftHook, ReanalysisHook, SnapshotHook, WebhookHook, scan};
use bridle_runtime::notify::webhook::signature;
use bridle_runtime::store::Stores;
use serde_json::{Value, json};
use time::{Duration as Span, OffsetDateTime};

fn record(i: i64, latency_ms: u64) -> DecisionRecord {
    DecisionRecord {
        decision_id: format!("d-{i:03}"),
        pipeline_run_id: "run-1".into(),
        tenant: "fab-1".into(),
        agent: "advisor".into(),
        model: "m".into(),
        input: json!({}),
        output: json!({}),
        prompt_tokens: 100,
        completion_tokens: 20,
        latency_ms,
        harness_checks: json!({"confidence": 0.8}),
        final_verdict: "accepted".into(),
        created_at: OffsetDateTime::UNIX_EPOCH + Span::seconds(i),
        prompt_hash: None,
        tool_schema_hash: None,
        policy_version: None,
    }
}

struct Failing;

#[async_trait::async_trait]
impl DriftHook for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    async fn on_drift(&self, _: &DriftAlert) -> Result<Option<Value>, bridle_runtime::hook::HookError> {
        Err("receiver down".into())
    }
}

type Seen = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

async fn keep(State(seen): State<Seen>, headers: HeaderMap, body: Bytes) -> StatusCode {
    seen.lock().unwrap().push((headers, body));
    StatusCode::NO_CONTENT
}

#[tokio::test]
async fn a_latency_jump_fires_each_hook_once_per_episode() {
    let stores = Stores::memory();
    // 40 records alternating 300/320 ms (μ 310, σ ≈ 10), then 30 at 360 ms (+5σ).
    for i in 0..70 {
        let latency = if i < 40 { 300 + 20 * (i as u64 % 2) } else { 360 };
        stores.decisions.record(&record(i, latency)).await.unwrap();
    }
    let seen: Seen = Seen::default();
    let app = Router::new().route("/hook", post(keep)).with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let dir = tempfile::tempdir().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let hooks: Vec<Arc<dyn DriftHook>> = vec![
        Arc::new(SnapshotHook { dir: dir.path().to_owned() }),
        Arc::new(ReanalysisHook(Arc::new(move |_: &DriftAlert| {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }))),
        Arc::new(WebhookHook { url, secret: b"s3cret".to_vec(), timeout: Duration::from_secs(2) }),
        Arc::new(Failing),
    ];
    let report = scan(stores.decisions.as_ref(), "fab-1", 1000, Params::default(), Some("latency_ms".into()), &hooks)
        .await
        .unwrap();
    assert_eq!(report.records, 70);
    let s = &report.series[0];
    assert_eq!(s.series.metric, "latency_ms");
    assert_eq!(s.status, Level::Critical);
    // The first shifted value (index 40) is 5σ above: critical at once; the sums reset and
    // pass the line again every record, all inside one episode.
    assert_eq!(s.alarms[0].index, 40);
    let names: Vec<&str> = report.events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names.iter().filter(|n| **n == "drift_detected").count(), 1, "{names:?}");
    assert!(names.iter().filter(|n| **n == "drift_repeated").count() >= 25, "{names:?}");
    for expected in ["snapshot_captured", "trigger_fired", "webhook_delivered", "hook_failed"] {
        assert_eq!(names.iter().filter(|n| **n == expected).count(), 1, "{expected} in {names:?}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let snapshot: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("drift-latency_ms-advisor-40.json")).unwrap()).unwrap();
    assert_eq!(snapshot["event"], "drift_detected");
    assert_eq!(snapshot["decision_id"], "d-040");

    let seen = seen.lock().unwrap();
    let (headers, body) = &seen[0];
    assert_eq!(headers["x-bridle-event"], "drift_detected");
    let ts: i64 = headers["x-bridle-timestamp"].to_str().unwrap().parse().unwrap();
    assert_eq!(headers["x-bridle-signature"].to_str().unwrap(), signature(b"s3cret", ts, body));
}

#[tokio::test]
async fn a_stable_log_records_nothing_and_an_empty_log_is_fine() {
    let stores = Stores::memory();
    let empty = scan(stores.decisions.as_ref(), "fab-1", 100, Params::default(), None, &[]).await.unwrap();
    assert_eq!((empty.records, empty.series.len(), empty.events.len()), (0, 0, 0));
    for i in 0..60 {
        stores.decisions.record(&record(i, 300 + 20 * (i as u64 % 2))).await.unwrap();
    }
    let report = scan(stores.decisions.as_ref(), "fab-1", 100, Params::default(), None, &[]).await.unwrap();
    assert!(report.events.is_empty(), "{:?}", report.events);
    assert!(report.series.iter().all(|s| s.status == Level::Ok));
}

#[tokio::test]
async fn the_serve_watch_announces_an_episode_once_across_scans() {
    use bridle_runtime::drift::watch::{Dedup, scan_all};
    let stores = Stores::memory();
    for i in 0..70 {
        let latency = if i < 40 { 300 + 20 * (i as u64 % 2) } else { 360 };
        stores.decisions.record(&record(i, latency)).await.unwrap();
    }
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let reanalysis: Arc<dyn DriftHook> = Arc::new(ReanalysisHook(Arc::new(move |_: &DriftAlert| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(())
    })));
    let hooks: Vec<Arc<dyn DriftHook>> = vec![Arc::new(Dedup::new(reanalysis))];
    let config = bridle_core::config::DriftSettings {
        interval: Some(Duration::from_secs(60)),
        tenants: vec!["fab-1".into(), "fab-2".into()],
        metrics: vec!["latency_ms".into(), "confidence".into()],
        ..Default::default()
    };
    // Three scans as the interval would run them: the episode is announced by the first only.
    for round in 0..3 {
        let reports = scan_all(stores.decisions.as_ref(), &config, &hooks).await.unwrap();
        assert_eq!(reports.len(), 4, "two tenants × two metrics");
        let detected: usize =
            reports.iter().map(|r| r.events.iter().filter(|e| e.event == "drift_detected").count()).sum();
        assert_eq!(detected, 1, "every scan sees the open episode (round {round})");
        let names: Vec<&str> = reports.iter().flat_map(|r| r.events.iter().map(|e| e.event.as_str())).collect();
        let expected = if round == 0 { "trigger_fired" } else { "drift_already_announced" };
        assert!(names.contains(&expected), "round {round}: {names:?}");
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the hook heard of the episode once");
    // Back in control long enough to close the episode, then a drop: a new episode, announced.
    for i in 70..100 {
        let latency = if i < 85 { 300 + 20 * (i as u64 % 2) } else { 200 };
        stores.decisions.record(&record(i, latency)).await.unwrap();
    }
    scan_all(stores.decisions.as_ref(), &config, &hooks).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    scan_all(stores.decisions.as_ref(), &config, &hooks).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}
