//! Configurations that once crashed or hung the binary: each is an error message and exit
//! code 1 from `bridle validate` and `bridle check`, never a signal (a stack overflow aborts
//! with 134) or a wait.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use super::support::{bridle, bridle_with_stdin, copy_example, text};

fn deep_policy() -> String {
    format!(
        "permit (principal, action, resource)\nwhen {{ {}resource.tenant == principal.tenant{} }};\n",
        "(".repeat(1000),
        ")".repeat(1000)
    )
}

#[test]
fn a_1000_deep_cedar_policy_makes_validate_and_check_exit_1_with_a_message_not_134() {
    let dir = tempfile::tempdir().unwrap();
    let toml = copy_example(dir.path());
    std::fs::write(dir.path().join("bridle.toml"), toml).unwrap();
    std::fs::write(dir.path().join("policies/tenancy.cedar"), deep_policy()).unwrap();

    let out = bridle(&["validate", "--config", "bridle.toml"], dir.path());
    assert_eq!(out.status.signal(), None, "killed by a signal: {}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("policies/tenancy.cedar: nesting deeper than 32 levels at line 2"), "{stderr}");

    let out = bridle_with_stdin(&["check", "--config", "bridle.toml", "-"], dir.path(), b"{\"tool\": \"calculate\"}");
    assert_eq!(out.status.signal(), None, "killed by a signal: {}", text(&out.stderr));
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("nesting deeper than"), "{}", text(&out.stderr));
}

#[test]
fn a_100kb_sensitive_term_makes_check_fail_fast_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let toml = copy_example(dir.path());
    let term = "x".repeat(100 * 1024);
    std::fs::write(dir.path().join("bridle.toml"), format!("{toml}\n[guard]\nsensitive_terms = [\"{term}\"]\n"))
        .unwrap();
    let started = Instant::now();
    let out = bridle_with_stdin(&["check", "--config", "bridle.toml", "-"], dir.path(), b"{\"tool\": \"calculate\"}");
    let took = started.elapsed();
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("guard.sensitive_terms[0]: at most 256 characters"), "{}", text(&out.stderr));
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn validate_names_a_fifo_schema_path_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let toml = copy_example(dir.path());
    let fifo = dir.path().join("schemas/fifo.json");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::fs::write(dir.path().join("bridle.toml"), toml.replace("schemas/scale_replicas.json", "schemas/fifo.json"))
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let cwd = dir.path().to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(bridle(&["validate", "--config", "bridle.toml", "--json"], &cwd));
    });
    let out = rx.recv_timeout(Duration::from_secs(30)).expect("`bridle validate` hung on a FIFO");
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let errors = report["errors"].to_string();
    assert!(errors.contains("tools.scale_replicas.schema") && errors.contains("is a FIFO"), "{errors}");
}
