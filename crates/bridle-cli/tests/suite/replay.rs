//! `bridle replay` on the decision log `bridle demo fab` leaves: a report per agent, the JSON and
//! HTML files, A/B, and a run's first divergence.

use super::support::{bridle, text};

fn example(rel: &str) -> String {
    format!("{}/../../examples/fab/{rel}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn replay_reports_agreement_writes_json_and_html_and_finds_a_runs_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("fab.db").display());
    assert!(bridle(&["demo", "fab", "--db", &db], dir.path()).status.success());
    let config = example("bridle.toml");
    let etch = example("scripts/etch_delta_rejected.toml");
    let report = dir.path().join("replay");
    let out = bridle(
        &[
            "replay",
            "--tenant",
            "fab-1",
            "--config",
            &config,
            "--db",
            &db,
            "--model",
            &etch,
            "--filter",
            "agent=advisor",
            "--report",
            report.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("  advisor: "), "{stdout}");
    assert!(!stdout.contains("diagnostician"), "the filter keeps advisors only: {stdout}");
    assert!(text(&out.stderr).contains("replayed "), "progress on stderr");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.with_extension("json")).unwrap()).unwrap();
    assert!(json["total"].as_u64().unwrap() >= 5);
    let html = std::fs::read_to_string(report.with_extension("html")).unwrap();
    assert!(html.contains("<svg") && !html.contains("<script"));

    // Side by side: the same script twice agrees with itself everywhere it could answer.
    let ab = bridle(
        &["replay", "--tenant", "fab-1", "--config", &config, "--db", &db, "--ab", &etch, &etch, "--json"],
        dir.path(),
    );
    assert!(ab.status.success(), "{}", text(&ab.stderr));
    let ab: serde_json::Value = serde_json::from_slice(&ab.stdout).unwrap();
    assert_eq!(ab["a"]["agree"], ab["b"]["agree"]);

    // The etch run replayed on its own script agrees; on another scenario's script it diverges
    // at the first decision, the Diagnostician.
    let export = bridle(&["audit", "export", "--db", &db], dir.path());
    let run = text(&export.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| e["run_id"].as_str().map(str::to_owned))
        .find(|r| r.ends_with("/etch_delta_rejected"))
        .unwrap();
    let same = bridle(&["replay", "--tenant", "fab-1", "--db", &db, "--model", &etch, "--run", &run], dir.path());
    assert!(text(&same.stdout).contains("decisions agree"), "{}", text(&same.stdout));
    let other = example("scripts/negative_temperature_rejected.toml");
    let diverged = bridle(&["replay", "--tenant", "fab-1", "--db", &db, "--model", &other, "--run", &run], dir.path());
    assert!(text(&diverged.stdout).contains("agent diagnostician"), "{}", text(&diverged.stdout));
}

/// Copies the fab example to `to`, with `edit` applied to the Advisor's prompt.
fn fab_copy(to: &std::path::Path, edit: &str) -> String {
    let from = std::path::PathBuf::from(example(""));
    for entry in walk(&from) {
        let rel = entry.strip_prefix(&from).unwrap();
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &dest).unwrap();
    }
    let prompt = to.join("prompts/advisor.md");
    let text = std::fs::read_to_string(&prompt).unwrap();
    std::fs::write(&prompt, format!("{text}{edit}")).unwrap();
    to.join("bridle.toml").display().to_string()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

#[test]
fn the_release_gate_fails_below_its_threshold_and_names_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("fab.db").display());
    assert!(bridle(&["demo", "fab", "--db", &db], dir.path()).status.success());
    let config = example("bridle.toml");
    let etch = example("scripts/etch_delta_rejected.toml");
    let export = bridle(&["audit", "export", "--db", &db], dir.path());
    let run = text(&export.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| e["run_id"].as_str().map(str::to_owned))
        .find(|r| r.ends_with("/etch_delta_rejected"))
        .unwrap();
    let filter = format!("run={run}");
    let gate = |config: &str, model: &str, threshold: &str| {
        bridle(
            &[
                "replay", "--tenant", "fab-1", "--config", config, "--db", &db, "--model", model, "--filter", &filter,
                "--gate", threshold, "--json",
            ],
            dir.path(),
        )
    };
    // The run on its own script: everything agrees, the gate passes.
    let pass = gate(&config, &etch, "0.99");
    assert!(pass.status.success(), "{}", text(&pass.stderr));
    let v: serde_json::Value = serde_json::from_slice(&pass.stdout).unwrap();
    assert_eq!(v["gate"]["passed"], true, "{v}");
    assert!(v["gate"]["changes"].as_array().unwrap().iter().all(|c| c["what"] == "model"), "{v}");
    // Another scenario's script: agreement falls below the threshold, exit 1, and it says why.
    let other = example("scripts/negative_temperature_rejected.toml");
    let fail = gate(&config, &other, "0.99");
    assert_eq!(fail.status.code(), Some(1), "{}", text(&fail.stdout));
    assert!(text(&fail.stderr).contains("release gate FAILED"), "{}", text(&fail.stderr));
    // A changed prompt is named, whatever the agreement.
    let changed = fab_copy(&dir.path().join("changed"), "\nBe brief.");
    let v: serde_json::Value = serde_json::from_slice(&gate(&changed, &etch, "0.0").stdout).unwrap();
    let what: Vec<String> = v["gate"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}:{}", c["what"].as_str().unwrap(), c["agent"].as_str().unwrap_or("*")))
        .collect();
    assert!(what.contains(&"prompt:advisor".to_owned()), "{what:?}");
    assert!(!what.iter().any(|w| w.starts_with("policy") || w.starts_with("tool_schema")), "{what:?}");
    // Out of range.
    assert_eq!(gate(&config, &etch, "95").status.code(), Some(1));
}
