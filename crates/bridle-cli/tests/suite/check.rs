//! `bridle check` end to end: text and JSON output, stdin and files, exit codes.

use serde_json::{Value, json};

use super::support::{bridle_with_stdin, text};

fn json_check(answer: &str, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["check", "--json"];
    args.extend_from_slice(extra);
    let out = bridle_with_stdin(&args, dir.path(), answer.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 1, "exactly one JSON object");
    serde_json::from_slice(&out.stdout).unwrap()
}

const ANSWER: &str = "The gap and the load:\n```json\n[{\"tool\": \"calculate\", \"arguments\": {\"expression\": \"150 / 3 * 10\"}},\n {\"tool\": \"convert_unit\", \"arguments\": {\"value\": 100, \"from\": \"kgf\", \"to\": \"ft\"}}]\n```\n";

#[test]
fn json_output_has_exactly_the_documented_shape() {
    let v = json_check(ANSWER, &[]);
    assert_eq!(
        v,
        json!({
            "parse": {"status": "ok", "code": null, "format": "fenced"},
            "calls": [
                {"tool": "calculate", "arguments": {"expression": "150 / 3 * 10"}, "status": "ok",
                 "code": null, "message": null, "result": {"value": 500.0}},
                {"tool": "convert_unit", "arguments": {"value": 100, "from": "kgf", "to": "ft"}, "status": "rejected",
                 "code": "unknown_unit",
                 "message": "unknown unit `ft`; known units: mm, cm, m, km, g, kg, t, N, kN, kgf, deg, rad, cm2, m2",
                 "result": null}
            ]
        })
    );
}

#[test]
fn rejected_answers_exit_zero_with_the_code() {
    let v = json_check("I'd rather explain it in words.", &[]);
    assert_eq!(v, json!({"parse": {"status": "rejected", "code": "unparseable_answer", "format": null}, "calls": []}));
    let three = r#"[{"tool": "calculate", "arguments": {"expression": "1"}}, {"tool": "calculate", "arguments": {"expression": "2"}}]"#;
    let v = json_check(three, &["--max-calls", "1"]);
    assert_eq!(v["parse"]["code"], "too_many_calls");
    let v = json_check(three, &[]);
    assert_eq!(v["calls"].as_array().unwrap().len(), 2);
    let v = json_check(&"x".repeat(20_001), &[]);
    assert_eq!(v["parse"]["code"], "answer_too_long");
    let v = json_check(r#"{"tool": "rm_rf", "arguments": {}}"#, &[]);
    assert_eq!(
        (v["calls"][0]["status"].as_str(), v["calls"][0]["code"].as_str()),
        (Some("rejected"), Some("unknown_tool"))
    );
}

#[test]
fn text_output_from_a_file_and_from_stdin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("answer.txt"), ANSWER).unwrap();
    let from_file = bridle_with_stdin(&["check", "answer.txt"], dir.path(), b"");
    assert!(from_file.status.success(), "{}", text(&from_file.stderr));
    let out = text(&from_file.stdout);
    assert!(out.starts_with("parse: ok format=fenced calls=2\n"), "{out}");
    assert!(out.contains("call 1: calculate {\"expression\":\"150 / 3 * 10\"} [fenced bytes "), "{out}");
    assert!(out.contains("  -> ok {\"value\":500.0}"), "{out}");
    assert!(out.contains("  -> rejected unknown_unit: unknown unit `ft`"), "{out}");
    let from_stdin = bridle_with_stdin(&["check", "-"], dir.path(), ANSWER.as_bytes());
    assert_eq!(text(&from_stdin.stdout), out);
    let rejected = bridle_with_stdin(&["check"], dir.path(), b"nothing here");
    assert!(rejected.status.success());
    assert!(
        text(&rejected.stdout).starts_with("parse: rejected unparseable_answer: no tool call"),
        "{}",
        text(&rejected.stdout)
    );
}

#[test]
fn io_errors_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let missing = bridle_with_stdin(&["check", "missing.txt"], dir.path(), b"");
    assert!(!missing.status.success());
    assert!(text(&missing.stderr).contains("cannot read `missing.txt`"), "{}", text(&missing.stderr));
    let binary = bridle_with_stdin(&["check"], dir.path(), b"{\"tool\": \xff}");
    assert!(!binary.status.success());
    assert!(text(&binary.stderr).contains("not UTF-8"), "{}", text(&binary.stderr));
}

#[test]
fn check_audits_into_a_named_store_without_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("wb.db").display());
    let answer = r#"SECRET-PROSE {"tool": "calculate", "arguments": {"expression": "SECRET_NAME + 1"}}"#;
    let out = bridle_with_stdin(&["check", "--json", "--db", &db], dir.path(), answer.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let export = bridle_with_stdin(&["audit", "export", "--db", &db], dir.path(), b"");
    let events = text(&export.stdout);
    assert_eq!(events.lines().count(), 1, "{events}");
    assert!(events.contains("\"code\":\"calc_syntax_error\""), "{events}");
    assert!(!events.contains("SECRET"), "{events}");
}
