//! `bridle bench runtime --json`: one JSON line with every key of the LangGraph anchor, each
//! with a median, its samples and a unit.

use serde_json::Value;

use super::support::{bridle, text};

#[test]
fn the_runtime_benchmark_prints_every_key_with_samples_and_units() {
    let dir = tempfile::tempdir().unwrap();
    let out = bridle(&["bench", "runtime", "--json", "--samples", "1"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    let results = report["results"].as_object().unwrap();
    let keys = [
        ("linear_invoke_us_per_step", "us"),
        ("linear_invoke_us_per_run", "us"),
        ("single_node_invoke_us_per_run", "us"),
        ("fanout_send_us_per_run", "us"),
        ("loop_us_per_iteration", "us"),
        ("linear_memory_saver_us_per_step", "us"),
        ("linear_sqlite_syncnormal_us_per_step", "us"),
        ("linear_sqlite_strict_us_per_step", "us"),
        ("interrupt_static_sqlite_syncnormal_ms", "ms"),
        ("interrupt_static_sqlite_strict_ms", "ms"),
        ("sqlite_raw_commit_full_us", "us"),
        ("sqlite_raw_commit_normal_us", "us"),
    ];
    assert_eq!(results.len(), keys.len(), "{results:?}");
    for (key, unit) in keys {
        let m = &results[key];
        assert_eq!(m["unit"], unit, "{key}");
        let samples = m["samples"].as_array().unwrap();
        assert_eq!(samples.len(), 1, "{key}");
        assert!(m["median"].as_f64().unwrap() > 0.0, "{key}: {m}");
    }
    // the benchmark's SQLite files live in a temporary directory, not beside the caller
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn the_decisions_benchmark_runs_tiny_and_verifies_its_chain() {
    let dir = tempfile::tempdir().unwrap();
    // NORMAL, not FULL: on a loaded CI disk one FULL fsync can outlast a short window, and this
    // test is about the report's shape and the chain, not the speed.
    let db = format!("sqlite://{}?synchronous=normal", dir.path().join("b.db").display());
    for batch in ["0", "16"] {
        let args = ["bench", "decisions", "--store", &db, "--concurrency", "4", "--seconds", "0.5", "--batch", batch];
        let out = bridle(&[&args[..], &["--json", "--threads", "2"]].concat(), dir.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
        let report: Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
        assert_eq!(report["backend"], "sqlite");
        assert_eq!(report["durability"], "normal");
        assert_eq!(report["batch"], if batch == "0" { Value::Null } else { 16.into() });
        assert!(report["decisions"].as_u64().unwrap() > 0, "{report}");
        assert!(report["decisions_per_s"].as_f64().unwrap() > 0.0);
        assert!(report["latency_us"]["p99"].as_f64().unwrap() >= report["latency_us"]["p50"].as_f64().unwrap());
        assert!(report["audit_events_verified"].as_u64().unwrap() >= report["decisions"].as_u64().unwrap());
    }
    let out = bridle(&["bench", "decisions", "--store", "memory", "--seconds", "0.1", "--replicas", "2"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("decisions/s"), "{}", text(&out.stdout));
    // Callers over three tenants write three chains, each verified.
    let db = format!("sqlite://{}", dir.path().join("t.db").display());
    let args = ["bench", "decisions", "--store", &db, "--concurrency", "6", "--seconds", "0.3", "--tenants", "3"];
    let out = bridle(&[&args[..], &["--json", "--replicas", "2"]].concat(), dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!((report["tenants"].as_u64(), report["replicas"].as_u64()), (Some(3), Some(2)), "{report}");
    assert_eq!(report["audit_chains_verified"], 3, "{report}");
}
