//! `bridle run`: a workflow to completion with progress on stderr, a pause answered on the
//! desk and resumed from a second process, and a refused file listing every problem.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::support::{bridle, text};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn arg(p: &Path) -> String {
    p.display().to_string()
}

fn json(out: &[u8]) -> Value {
    serde_json::from_str(text(out).trim()).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

#[test]
fn the_checkout_workflow_pauses_for_approval_and_a_second_process_resumes_it() {
    let dir = tempfile::TempDir::new().unwrap();
    let (file, model) = (
        examples().join("workflows/checkout_incident.toml"),
        examples().join("workflows/scripts/checkout_incident.toml"),
    );
    let input = r#"{"incident": "inc-42", "service": "checkout"}"#;
    let out = bridle(
        &["run", &arg(&file), "--model", &arg(&model), "--db", "sqlite://wf.db", "--input", input, "--json"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let paused = json(&out.stdout);
    assert_eq!(paused["status"], "interrupted");
    let interrupt = paused["interrupts"][0]["id"].as_str().unwrap().to_owned();
    let approval = paused["interrupts"][0]["payload"]["approval_id"].as_str().unwrap().to_owned();
    let run = paused["run_id"].as_str().unwrap().to_owned();
    assert!(run.starts_with("tenant-a/"), "{run}");

    let out = bridle(&["approvals", "approve", &approval, "--as", "operator-2", "--db", "sqlite://wf.db"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = bridle(
        &["run", &arg(&file), "--db", "sqlite://wf.db", "--resume", &run, "--interrupt", &interrupt, "--value", "{}"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("done after 4 steps"), "{stdout}");
    assert!(text(&out.stderr).contains("scale_replicas → executed"), "{}", text(&out.stderr));

    // Answered once: the same interrupt again is refused and nothing runs.
    let out = bridle(
        &[
            "run",
            &arg(&file),
            "--db",
            "sqlite://wf.db",
            "--resume",
            &run,
            "--interrupt",
            &interrupt,
            "--value",
            "{}",
            "--json",
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out.stdout)["error"]["code"], "stale_checkpoint");
}

#[test]
fn the_fab_workflow_runs_to_completion_with_a_progress_line_per_node() {
    let dir = tempfile::TempDir::new().unwrap();
    let w = examples().join("workflows");
    let input =
        r#"{"anomaly": {"equipment": "etch-01", "metric": "chamber_temp_c", "value": 388}, "incident": "inc-7"}"#;
    let out = bridle(
        &[
            "--config",
            &arg(&examples().join("fab/bridle.toml")),
            "run",
            &arg(&w.join("fab_anomaly.toml")),
            "--model",
            &arg(&w.join("scripts/fab_anomaly.toml")),
            "--db",
            "sqlite://fab.db",
            "--input",
            input,
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for node in ["gather", "read_recipe", "read_equipment", "diagnose", "decide", "trim", "settle", "reread"] {
        assert!(stderr.contains(&format!("▶ {node}")), "{node} missing from\n{stderr}");
    }
    assert!(stderr.contains("set_temperature → executed"), "{stderr}");
    assert!(text(&out.stdout).contains("\"temp_celsius\": 375"), "{}", text(&out.stdout));
}

#[test]
fn a_refused_workflow_lists_every_problem_and_exits_2() {
    let dir = tempfile::TempDir::new().unwrap();
    let bad = r#"
[workflow]
name = "bad"
principal = "nobody"
start = "a"

[nodes.a]
kind = "loop"
while = "x > 1"
body = "b"

[nodes.b]
kind = "sleep"
"#;
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let out = bridle(&["run", "bad.toml", "--db", "sqlite::memory:"], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for words in [
        "workflow.principal: `nobody`",
        "nodes.a.while: CEL expression `x > 1` refers to `x`",
        "nodes.a.max_iterations: a loop needs a bound",
        "nodes.b.kind: unknown node kind `sleep`",
    ] {
        assert!(stderr.contains(words), "{words} missing from\n{stderr}");
    }
}
