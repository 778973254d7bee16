//! Signed audit heads through the binary (issue 20 point 5): `bridle audit keygen`, a one-shot
//! command leaving a head before it exits, `bridle audit verify` naming a deleted tail (exit
//! non-zero) or saying the tail is unanchored without a key (exit 0), and `bridle serve` writing
//! heads periodically and at shutdown.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::support::{bridle, bridle_env, copy_example, text};

const KEY_VAR: &str = "BRIDLE_AUDIT_SIGNING_KEY";
const SECRET: &str = "heads-test-secret-of-at-least-32-bytes!!";

fn keygen(dir: &Path) -> String {
    let out = bridle(&["audit", "keygen"], dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let key = text(&out.stdout).trim().to_owned();
    assert!(key.starts_with("bridle-audit-ed25519:") && !key.contains('\n'), "{key}");
    assert!(text(&out.stderr).contains("public key: "), "{}", text(&out.stderr));
    key
}

fn with_key(key: &str) -> [(&str, &str); 1] {
    [(KEY_VAR, key)]
}

async fn delete_after(db: &str, tenant: &str, seq: i64) {
    let pool = sqlx::SqlitePool::connect(db).await.unwrap();
    sqlx::query("DELETE FROM audit_events WHERE tenant = ? AND seq > ?")
        .bind(tenant)
        .bind(seq)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

async fn last_seq(db: &str, tenant: &str) -> i64 {
    let pool = sqlx::SqlitePool::connect(db).await.unwrap();
    let seq: i64 = sqlx::query_scalar("SELECT MAX(seq) FROM audit_events WHERE tenant = ?")
        .bind(tenant)
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    seq
}

#[test]
fn keygen_prints_one_fresh_key_a_line() {
    let dir = tempfile::tempdir().unwrap();
    assert_ne!(keygen(dir.path()), keygen(dir.path()));
    let out = bridle(&["audit", "keygen", "--json"], dir.path());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["public_key"].as_str().map(str::len), Some(64), "{v}");
}

#[tokio::test]
async fn regression_a_demo_leaves_a_signed_head_so_deleting_its_last_event_fails_verify() {
    let dir = tempfile::tempdir().unwrap();
    let key = keygen(dir.path());
    let db = format!("sqlite://{}", dir.path().join("demo.db").display());
    let demo = bridle_env(&["demo", "--db", &db], dir.path(), b"", &with_key(&key));
    assert!(demo.status.success(), "{}", text(&demo.stderr));
    assert!(dir.path().join("demo.db.heads").exists(), "the head log beside the database");

    let ok = bridle_env(&["audit", "verify", "--db", &db], dir.path(), b"", &with_key(&key));
    let stdout = text(&ok.stdout);
    assert!(ok.status.success(), "{stdout}{}", text(&ok.stderr));
    let last = last_seq(&db, "tenant-a").await;
    assert!(stdout.contains(&format!("tenant-a: ok ({last} events); anchored at seq {last}")), "{stdout}");

    delete_after(&db, "tenant-a", last - 1).await;
    let bad = bridle_env(&["audit", "verify", "--db", &db], dir.path(), b"", &with_key(&key));
    let stdout = text(&bad.stdout);
    assert!(!bad.status.success(), "{stdout}");
    assert!(stdout.contains(&format!("TAIL MISSING: event {last} deleted")), "{stdout}");
    let json = bridle_env(&["audit", "verify", "--db", &db, "--json"], dir.path(), b"", &with_key(&key));
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let tail = report["tails"].as_array().unwrap().iter().find(|t| t["tenant"] == "tenant-a").unwrap();
    assert_eq!(
        (tail["missing"]["from"].as_i64(), tail["missing"]["to"].as_i64()),
        (Some(last), Some(last)),
        "{report}"
    );

    // Without the key the same store says the tail is unanchored, and passes.
    let unanchored = bridle(&["audit", "verify", "--db", &db], dir.path());
    let stdout = text(&unanchored.stdout);
    assert!(unanchored.status.success(), "{stdout}");
    assert!(stdout.contains("heads: no audit signing key is set") && stdout.contains("unanchored"), "{stdout}");
}

#[tokio::test]
async fn a_key_file_is_the_alternative_and_demo_fab_check_and_kill_leave_heads() {
    let dir = tempfile::tempdir().unwrap();
    let key = keygen(dir.path());
    let key_file = dir.path().join("audit.key");
    std::fs::write(&key_file, format!("{key}\n")).unwrap();
    let env = [("BRIDLE_AUDIT_SIGNING_KEY_FILE", key_file.to_str().unwrap())];
    let db = format!("sqlite://{}", dir.path().join("one.db").display());
    for args in [
        &["demo", "fab", "--db", &db][..],
        &["check", "--db", &db, "-"][..],
        &["kill", "--tenant", "tenant-a", "--reason", "drill", "--db", &db][..],
    ] {
        let out =
            bridle_env(args, dir.path(), b"{\"tool\": \"calculate\", \"arguments\": {\"expression\": \"1+1\"}}", &env);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    }
    let verify = bridle_env(&["audit", "verify", "--db", &db, "--json"], dir.path(), b"", &env);
    assert!(verify.status.success(), "{}", text(&verify.stdout));
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    for tenant in ["fab-1", "workbench", "tenant-a"] {
        let tail = report["tails"].as_array().unwrap().iter().find(|t| t["tenant"] == tenant);
        let tail = tail.unwrap_or_else(|| panic!("{tenant}: {report}"));
        assert_eq!(tail["unanchored"], 0, "{tenant}: every event anchored at exit: {tail}");
        assert_eq!(tail["anchor"]["seq"], tail["events"], "{tail}");
    }
    // A malformed key stops the command before it touches anything, naming no key material.
    let bad = bridle_env(&["demo", "--db", &db], dir.path(), b"", &[(KEY_VAR, "bridle-audit-ed25519:1234")]);
    assert!(!bad.status.success());
    assert!(text(&bad.stderr).contains("64 hex digits"), "{}", text(&bad.stderr));
}

fn http(addr: &str, method: &str, path: &str, token: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

fn token(dir: &Path, subject: &str, scopes: &str) -> String {
    let out = bridle_env(
        &["token", "issue", "--subject", subject, "--tenant", "tenant-a", "--services", "checkout", "--scopes", scopes],
        dir,
        b"",
        &[("BRIDLE_JWT_SECRET", SECRET)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// Head lines of the log naming `tenant`, as seqs.
fn head_seqs(heads: &Path, tenant: &str) -> Vec<u64> {
    let Ok(text) = std::fs::read_to_string(heads) else { return Vec::new() };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["tenant"] == tenant)
        .filter_map(|v| v["seq"].as_u64())
        .collect()
}

#[tokio::test]
async fn serve_writes_heads_periodically_and_at_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let key = keygen(dir.path());
    let toml = copy_example(dir.path());
    // A head at most every second; the head log named in the config (relative to it).
    std::fs::write(
        dir.path().join("bridle.toml"),
        format!("{toml}\n[audit]\nheads = \"logs/heads.jsonl\"\nhead_every_seconds = 1\n"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    let heads = dir.path().join("logs/heads.jsonl");
    let db = format!("sqlite://{}", dir.path().join("serve.db").display());
    let mut server = Command::new(env!("CARGO_BIN_EXE_bridle"))
        .args(["serve", "--config", "bridle.toml", "--db", &db, "--listen", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env("BRIDLE_JWT_SECRET", SECRET)
        .env(KEY_VAR, &key)
        .env_remove("BRIDLE_STORE_URL")
        .env_remove("BRIDLE_LISTEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).unwrap().to_owned();
    let requester = token(dir.path(), "requester-1", "service:read,service:scale");
    let call = r#"{"tool": "get_service_snapshot", "arguments": {"service": "checkout"}, "run_id": "r-1"}"#;
    let (status, body) = http(&addr, "POST", "/v1/calls", &requester, call);
    assert_eq!(status, 200, "{body}");

    // The periodic flush, while the server runs.
    let mut waited = 0;
    while head_seqs(&heads, "tenant-a").is_empty() {
        assert!(waited < 100, "no periodic head within 10 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += 1;
    }
    assert_eq!(head_seqs(&heads, "tenant-a"), [1]);
    // More events, then SIGTERM at once (well before the next tick is certain): the shutdown
    // flush anchors them.
    for i in 0..3 {
        let call =
            format!(r#"{{"tool": "get_service_snapshot", "arguments": {{"service": "checkout"}}, "run_id": "r-{i}"}}"#);
        assert_eq!(http(&addr, "POST", "/v1/calls", &requester, &call).0, 200);
    }
    let killed = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(server.wait().unwrap().success(), "{rest:?}");
    assert_eq!(head_seqs(&heads, "tenant-a").last(), Some(&4), "{:?}", head_seqs(&heads, "tenant-a"));

    let env = with_key(&key);
    let verify = bridle_env(&["audit", "verify", "--config", "bridle.toml", "--db", &db], dir.path(), b"", &env);
    let stdout = text(&verify.stdout);
    assert!(verify.status.success() && stdout.contains("anchored at seq 4"), "{stdout}");
    delete_after(&db, "tenant-a", 1).await;
    let verify = bridle_env(&["audit", "verify", "--config", "bridle.toml", "--db", &db], dir.path(), b"", &env);
    assert!(!verify.status.success());
    assert!(text(&verify.stdout).contains("events 2–4 deleted"), "{}", text(&verify.stdout));
}

/// `tenant`'s chain in `bridle audit verify --json`: (events, seq of the newest head).
fn anchored_at(dir: &Path, db: &str, key: &str, tenant: &str) -> (u64, Option<u64>) {
    let out = bridle_env(&["audit", "verify", "--db", db, "--json"], dir, b"", &with_key(key));
    assert!(out.status.success(), "{}", text(&out.stdout));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tail = report["tails"].as_array().unwrap().iter().find(|t| t["tenant"] == tenant).cloned().unwrap();
    (tail["events"].as_u64().unwrap(), tail["anchor"]["seq"].as_u64())
}

#[test]
fn run_and_approvals_each_leave_a_head_before_they_exit() {
    let dir = tempfile::tempdir().unwrap();
    let key = keygen(dir.path());
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/workflows");
    let (file, model) = (examples.join("checkout_incident.toml"), examples.join("scripts/checkout_incident.toml"));
    let (file, model) = (file.to_str().unwrap(), model.to_str().unwrap());
    let db = "sqlite://wf.db";
    let input = r#"{"incident": "inc-42", "service": "checkout"}"#;
    let out = bridle_env(
        &["run", file, "--model", model, "--db", db, "--input", input, "--json"],
        dir.path(),
        b"",
        &with_key(&key),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let paused: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (events, head) = anchored_at(dir.path(), db, &key, "tenant-a");
    assert_eq!(Some(events), head, "the paused run's events are anchored");

    let approval = paused["interrupts"][0]["payload"]["approval_id"].as_str().unwrap();
    let out = bridle_env(
        &["approvals", "approve", approval, "--as", "operator-2", "--db", db],
        dir.path(),
        b"",
        &with_key(&key),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (after, head) = anchored_at(dir.path(), db, &key, "tenant-a");
    assert_eq!((after, head), (events + 1, Some(events + 1)), "the grant's event is anchored");
}
