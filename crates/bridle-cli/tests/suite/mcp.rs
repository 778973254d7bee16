//! `bridle mcp --stdio` as an MCP client launches it: the token is required and verified, every
//! line on stdout is a JSON-RPC message (logs go to stderr), the handshake settles on
//! 2025-11-25, and tools/list and tools/call answer as the token's principal.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::text;

const SECRET: &str = "cli-test-secret-cli-test-secret-0123";

fn bridle(args: &[&str], cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridle"));
    cmd.args(args).current_dir(cwd).env("BRIDLE_JWT_SECRET", SECRET).env("RUST_LOG", "info");
    for var in ["BRIDLE_CONFIG", "BRIDLE_STORE_URL", "BRIDLE_TOKEN", "BRIDLE_JWT_PUBLIC_KEY", "BRIDLE_JWT_JWKS"] {
        cmd.env_remove(var);
    }
    cmd
}

fn token(cwd: &Path, scopes: &str) -> String {
    let out = bridle(
        &[
            "token",
            "issue",
            "--subject",
            "viewer-4",
            "--tenant",
            "tenant-a",
            "--services",
            "checkout",
            "--scopes",
            scopes,
        ],
        cwd,
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

#[test]
fn stdio_refuses_to_start_without_a_valid_token() {
    let dir = tempfile::tempdir().unwrap();
    let out = bridle(&["mcp", "--stdio", "--db", "memory"], dir.path()).stdin(Stdio::null()).output().unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "stdout is for protocol only");
    assert!(text(&out.stderr).contains("BRIDLE_TOKEN"), "{}", text(&out.stderr));
    let out = bridle(&["mcp", "--stdio", "--db", "memory", "--token", "not-a-jwt"], dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
}

#[test]
fn stdio_speaks_only_protocol_on_stdout_as_the_tokens_principal() {
    let dir = tempfile::tempdir().unwrap();
    let token = token(dir.path(), "service:read");
    let mut child = bridle(&["mcp", "--stdio", "--db", "memory"], dir.path())
        .env("BRIDLE_TOKEN", &token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| writeln!(&mut stdin, "{message}").unwrap();
    let mut answer = |id: i64| -> Value {
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout closed before answer {id}");
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC: {line:?}: {e}"));
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if message["id"] == id {
                return message;
            }
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "0"}}}));
    let init = answer(1);
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "bridle");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let tools = answer(2);
    let names: Vec<_> = tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, [json!("get_service_snapshot")], "{tools}");
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7}}}));
    let denied = answer(3);
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(denied["result"]["structuredContent"]["code"], "policy_denied");
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "get_service_snapshot", "arguments": {"service": "checkout"}}}));
    let read = answer(4);
    assert_eq!(read["result"]["isError"], false, "{read}");
    assert_eq!(read["result"]["structuredContent"]["result"]["replicas"], 2);
    // Closing stdin ends the session and the process.
    drop(stdin);
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(20), "bridle mcp did not exit after stdin closed");
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("serving MCP on stdio as `viewer-4`"), "{}", text(&out.stderr));
}

#[test]
fn stdio_refuses_a_nul_or_3kb_run_id_and_a_nul_argument_with_bad_request_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("mcp.db").display());
    let token = token(dir.path(), "service:read");
    let mut child = bridle(&["mcp", "--stdio", "--db", &db], dir.path())
        .env("BRIDLE_TOKEN", &token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| writeln!(&mut stdin, "{message}").unwrap();
    let mut answer = |id: i64| -> Value {
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "stdout closed before answer {id}");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "0"}}}));
    answer(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let snapshot = json!({"service": "checkout"});
    let cases = [
        (json!({"bridle/run_id": "run\u{0}1"}), snapshot.clone(), "bridle/run_id"),
        (json!({"bridle/run_id": "r".repeat(3072)}), snapshot.clone(), "bridle/run_id"),
        (json!({"bridle/incident": "inc\u{0}1"}), snapshot.clone(), "bridle/incident"),
        (json!({}), json!({"service": "check\u{0}out"}), "arguments.service"),
    ];
    for (n, (meta, arguments, field)) in cases.into_iter().enumerate() {
        let id = i64::try_from(n).unwrap() + 2;
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "get_service_snapshot", "arguments": arguments, "_meta": meta}}));
        let refused = answer(id);
        assert_eq!(refused["result"]["isError"], true, "{refused}");
        assert_eq!(refused["result"]["structuredContent"]["code"], "bad_request", "{refused}");
        assert_eq!(refused["result"]["structuredContent"]["detail"]["field"], field, "{refused}");
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let export = bridle(&["audit", "export", "--db", &db], dir.path()).output().unwrap();
    assert!(text(&export.stdout).trim().is_empty(), "nothing stored: {}", text(&export.stdout));
}
