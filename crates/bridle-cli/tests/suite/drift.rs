//! `bridle drift` on the decision log `bridle demo fab` writes: series, alarms, hooks, plot.

use super::support::{bridle, text};

#[test]
fn drift_scans_the_fab_decision_log_and_plots_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("fab.db").display());
    for _ in 0..3 {
        let out = bridle(&["demo", "fab", "--db", &db], dir.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let out = bridle(&["drift", "--db", &db, "--json", "--plot", "d.svg", "--snapshot-dir", "snaps"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(report["tenant"], "fab-1");
    assert!(report["records"].as_u64().unwrap() >= 30, "{report}");
    let series = report["series"].as_array().unwrap();
    let metrics: Vec<&str> = series.iter().map(|s| s["series"]["metric"].as_str().unwrap()).collect();
    for m in ["confidence", "tokens", "latency_ms", "rejection_rate", "degraded_rate"] {
        assert!(metrics.contains(&m), "{m} missing from {metrics:?}");
    }
    for s in series {
        assert!(["ok", "warning", "critical"].contains(&s["status"].as_str().unwrap()), "{s}");
    }
    // Every announced alarm opened an episode of its series and fired the snapshot hook.
    let events = report["events"].as_array().unwrap();
    let detected: Vec<_> = events.iter().filter(|e| e["event"] == "drift_detected").collect();
    let snapshots = events.iter().filter(|e| e["event"] == "snapshot_captured").count();
    assert_eq!(detected.len(), snapshots, "{events:?}");
    let files = std::fs::read_dir(dir.path().join("snaps")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(files, snapshots);

    let svg = std::fs::read_to_string(dir.path().join("d.svg")).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{svg}");
    assert!(svg.contains("<polyline") && svg.contains("stroke-dasharray") && !svg.contains("<script"));

    let text_out = bridle(&["drift", "--db", &db, "--metric", "confidence"], dir.path());
    assert!(text_out.status.success(), "{}", text(&text_out.stderr));
    let lines = text(&text_out.stdout);
    assert!(lines.starts_with("tenant fab-1: "), "{lines}");
    assert!(lines.lines().skip(1).all(|l| l.starts_with("confidence ")), "{lines}");

    let bad = bridle(&["drift", "--db", &db, "--metric", "mood"], dir.path());
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
}
