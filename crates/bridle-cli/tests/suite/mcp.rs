//! `bridle mcp --stdio` as an MCP client launches it: the token is required and verified, every
//! line on stdout is a JSON-RPC message (logs go to stderr), the handshake settles on
//! 2025-11-25, the 2026-07-28 revision is served without one, and tools/list and tools/call
//! answer as the token's principal.

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

/// `bridle mcp --stdio` as a child: send JSON-RPC lines, read the answer to an id.
struct StdioPeer {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
}

impl StdioPeer {
    fn start(db: &str, token: &str, cwd: &Path) -> Self {
        let mut child = bridle(&["mcp", "--stdio", "--db", db], cwd)
            .env("BRIDLE_TOKEN", token)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self { child, stdin, stdout }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin.as_mut().unwrap(), "{message}").unwrap();
    }

    /// The answer to request `id`; every line on stdout must be a JSON-RPC message.
    fn answer(&mut self, id: i64) -> Value {
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "stdout closed before answer {id}");
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC: {line:?}: {e}"));
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if message["id"] == id {
                return message;
            }
        }
    }

    fn ask(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(id)
    }

    /// Closes stdin and waits for the process (it must exit on its own, within 20 s).
    fn finish(mut self) -> std::process::Output {
        drop(self.stdin.take());
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            assert!(started.elapsed() < Duration::from_secs(20), "bridle mcp did not exit after stdin closed");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.wait_with_output().unwrap()
    }
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
    let mut peer = StdioPeer::start("memory", &token, dir.path());
    let init = peer.ask(
        1,
        "initialize",
        json!({
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "0"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "bridle");
    peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let tools = peer.ask(2, "tools/list", json!({}));
    let names: Vec<_> = tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, [json!("get_service_snapshot")], "{tools}");
    let denied = peer.ask(
        3,
        "tools/call",
        json!({
        "name": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7}}),
    );
    assert_eq!(denied["result"]["isError"], true, "{denied}");
    assert_eq!(denied["result"]["structuredContent"]["code"], "policy_denied");
    let read = peer.ask(4, "tools/call", json!({"name": "get_service_snapshot", "arguments": {"service": "checkout"}}));
    assert_eq!(read["result"]["isError"], false, "{read}");
    assert_eq!(read["result"]["structuredContent"]["result"]["replicas"], 2);
    // The handshake era keeps `logging/setLevel`.
    let level = peer.ask(5, "logging/setLevel", json!({"level": "warning"}));
    assert!(level.get("result").is_some(), "{level}");
    // Closing stdin ends the session and the process.
    let out = peer.finish();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("serving MCP on stdio as `viewer-4`"), "{}", text(&out.stderr));
}

#[test]
fn stdio_serves_the_stateless_revision_without_a_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let token = token(dir.path(), "service:read");
    let mut peer = StdioPeer::start("memory", &token, dir.path());
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}});
    let discovered = peer.ask(1, "server/discover", json!({"_meta": meta}));
    let versions = discovered["result"]["supportedVersions"].as_array().cloned().unwrap_or_default();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")), "{discovered}");
    // A request without the revision's `_meta` is refused before any handshake exists.
    let bare = peer.ask(2, "tools/list", json!({}));
    assert!(bare.get("error").is_some(), "{bare}");
    let tools = peer.ask(3, "tools/list", json!({"_meta": meta}));
    let names: Vec<_> = tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, [json!("get_service_snapshot")], "{tools}");
    let read = peer.ask(
        4,
        "tools/call",
        json!({
        "name": "get_service_snapshot", "arguments": {"service": "checkout"}, "_meta": meta}),
    );
    assert_eq!(read["result"]["structuredContent"]["result"]["replicas"], 2, "{read}");
    let level = peer.ask(5, "logging/setLevel", json!({"level": "warning", "_meta": meta}));
    assert_eq!(level["error"]["code"], -32601, "the revision removed logging/setLevel: {level}");
    let out = peer.finish();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn stdio_refuses_a_nul_or_3kb_run_id_and_a_nul_argument_with_bad_request_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("mcp.db").display());
    let token = token(dir.path(), "service:read");
    let mut peer = StdioPeer::start(&db, &token, dir.path());
    peer.ask(
        1,
        "initialize",
        json!({
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "0"}}),
    );
    peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let snapshot = json!({"service": "checkout"});
    let cases = [
        (json!({"bridle/run_id": "run\u{0}1"}), snapshot.clone(), "bridle/run_id"),
        (json!({"bridle/run_id": "r".repeat(3072)}), snapshot.clone(), "bridle/run_id"),
        (json!({"bridle/incident": "inc\u{0}1"}), snapshot.clone(), "bridle/incident"),
        (json!({}), json!({"service": "check\u{0}out"}), "arguments.service"),
    ];
    for (n, (meta, arguments, field)) in cases.into_iter().enumerate() {
        let id = i64::try_from(n).unwrap() + 2;
        let refused =
            peer.ask(id, "tools/call", json!({"name": "get_service_snapshot", "arguments": arguments, "_meta": meta}));
        assert_eq!(refused["result"]["isError"], true, "{refused}");
        assert_eq!(refused["result"]["structuredContent"]["code"], "bad_request", "{refused}");
        assert_eq!(refused["result"]["structuredContent"]["detail"]["field"], field, "{refused}");
    }
    let out = peer.finish();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let export = bridle(&["audit", "export", "--db", &db], dir.path()).output().unwrap();
    assert!(text(&export.stdout).trim().is_empty(), "nothing stored: {}", text(&export.stdout));
}
