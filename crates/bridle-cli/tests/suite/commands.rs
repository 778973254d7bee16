//! Commands end to end: output, exit codes, error listings.

use super::support::{bridle, copy_example, text};

#[test]
fn demo_prints_seed_004_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = bridle(&["demo"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("read: ok replicas=2 resource_version=7\n"), "{stdout}");
    assert!(stdout.ends_with("audit_events=12 executed=2 rejected=10\nassertions=passed\n"), "{stdout}");
    assert_eq!(stdout.lines().count(), 15);
}

#[test]
fn demo_on_a_sqlite_file_then_audit_verify_and_export() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("d.db").display());
    assert!(bridle(&["demo", "--db", &db], dir.path()).status.success());
    let verify = bridle(&["audit", "verify", "--db", &db], dir.path());
    assert!(verify.status.success(), "{}", text(&verify.stderr));
    assert!(text(&verify.stdout).starts_with("tenant-a: ok ("), "{}", text(&verify.stdout));
    let export = bridle(&["audit", "export", "--db", &db], dir.path());
    let lines = text(&export.stdout);
    let tool_calls = lines.lines().filter(|l| l.contains("\"kind\":\"tool_call\"")).count();
    assert_eq!(tool_calls, 12);
    let again = bridle(&["demo", "--db", &db], dir.path());
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("fresh database"), "{}", text(&again.stderr));
}

#[test]
fn demo_fab_passes_every_seed_000_scenario_and_can_run_again_on_one_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("fab.db").display());
    for round in 0..2 {
        let out = bridle(&["demo", "fab", "--db", &db], dir.path());
        assert!(out.status.success(), "round {round}: {}{}", text(&out.stdout), text(&out.stderr));
        let stdout = text(&out.stdout);
        let names: Vec<&str> = stdout.lines().map(|l| l.strip_suffix(": passed").unwrap_or(l)).collect();
        assert_eq!(names.len(), 10, "{stdout}");
        for name in [
            "etch_delta_rejected",
            "diagnosis_candidates_need_human",
            "chat_injection_blocked",
            "canary_leak_blocked",
            "runaway_loop_stopped",
            "negative_temperature_rejected",
            "llm_down_rule_fallback",
            "reject_regenerate_reapprove",
            "history_escalates_failed_action",
        ] {
            assert!(names.contains(&name), "{name} missing from {stdout}");
        }
    }
    // The evidence stayed in the store, and the fab tenant's chain verifies.
    let verify = bridle(&["audit", "verify", "--db", &db], dir.path());
    assert!(verify.status.success(), "{}", text(&verify.stderr));
    assert!(text(&verify.stdout).contains("fab-1: ok ("), "{}", text(&verify.stdout));
}

#[test]
fn demo_rejects_an_unknown_variant() {
    let dir = tempfile::tempdir().unwrap();
    let out = bridle(&["demo", "factory"], dir.path());
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("factory"), "{}", text(&out.stderr));
}

#[test]
fn validate_lists_every_error_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let toml = copy_example(dir.path());
    let broken = toml
        .replace("min = 1\nmax = 5", "min = 9\nmax = 5")
        .replace("executor = \"reader-identity\"", "executor = \"nobody\"")
        .replace("schemas/scale_replicas.json", "schemas/missing.json");
    std::fs::write(dir.path().join("bridle.toml"), broken).unwrap();
    std::fs::write(dir.path().join("policies/tenancy.cedar"), b"permit (principal, action, resource) when { \xff };")
        .unwrap();
    let out = bridle(&["validate", "--config", "bridle.toml", "--json"], dir.path());
    assert!(!out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["valid"], false);
    let all = report["errors"].to_string();
    for needle in ["no executor `nobody`", "missing.json", "not UTF-8"] {
        assert!(all.contains(needle), "{needle}: {all}");
    }
    assert!(report["errors"].as_array().unwrap().len() >= 3);
    let ok = bridle(&["validate"], dir.path());
    assert!(ok.status.success());
    assert!(text(&ok.stdout).contains("bundled default: valid (5 tools"));
}

#[test]
fn a_bad_store_url_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = bridle(&["audit", "verify", "--db", "mysql://nope"], dir.path());
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("unsupported store URL"), "{}", text(&out.stderr));
}

#[test]
fn kill_sets_and_lifts_a_switch_and_lists_unfinished_work() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("kill.db").display());
    let out = bridle(&["kill", "--tenant", "tenant-a", "--reason", "bad deploy", "--db", &db], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("kill switch set for tenant `tenant-a`: bad deploy"), "{stdout}");
    for line in ["pending approvals: 0", "jobs not final: 0", "paused or interrupted runs: 0"] {
        assert!(stdout.contains(line), "{line} in {stdout}");
    }
    let out =
        bridle(&["kill", "--tenant", "tenant-a", "--reason", "fixed", "--lift", "--db", &db, "--json"], dir.path());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["action"].as_str(), v["report"]["changed"].as_bool()), (Some("lifted"), Some(true)));
    // No scope, or --all with another scope: refused.
    assert!(!bridle(&["kill", "--reason", "x", "--db", &db], dir.path()).status.success());
    assert!(!bridle(&["kill", "--all", "--tenant", "t", "--reason", "x", "--db", &db], dir.path()).status.success());
    let export = text(&bridle(&["audit", "export", "--db", &db], dir.path()).stdout);
    assert_eq!(export.matches("\"kind\":\"kill_switch_set\"").count(), 1, "{export}");
    assert_eq!(export.matches("\"kind\":\"kill_switch_lifted\"").count(), 1, "{export}");
}

#[test]
fn bridle_kill_needs_no_reason_and_refuses_an_over_long_or_nul_reason_leaving_the_switch_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("kill.db").display());
    let long = "x".repeat(2001);
    for bad in [long.as_str(), "bad\u{7}deploy"] {
        let out = bridle(&["kill", "--tenant", "tenant-a", "--reason", bad, "--db", &db], dir.path());
        assert!(!out.status.success());
        assert!(text(&out.stderr).contains("--reason"), "{}", text(&out.stderr));
    }
    let out = bridle(&["kill", "--tenant", "tenant a", "--db", &db], dir.path());
    assert!(!out.status.success(), "a tenant outside the id set");
    let export = text(&bridle(&["audit", "export", "--db", &db], dir.path()).stdout);
    assert_eq!(export.matches("kill_switch_set").count(), 0, "{export}");
    // An emergency stop: no reason at all.
    let out = bridle(&["kill", "--tenant", "tenant-a", "--db", &db], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("kill switch set for tenant `tenant-a`: no reason given"),
        "{}",
        text(&out.stdout)
    );
}
