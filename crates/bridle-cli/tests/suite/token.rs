//! `bridle token issue` and `bridle serve` end to end: a token the CLI issues is accepted by the
//! server it starts; both refuse to run without a secret; SIGTERM stops the server cleanly.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use super::support::text;

const SECRET: &str = "cli-test-secret-cli-test-secret-0123";

fn bridle(args: &[&str], cwd: &Path, secret: Option<&str>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridle"));
    cmd.args(args).current_dir(cwd);
    for var in [
        "BRIDLE_CONFIG",
        "BRIDLE_STORE_URL",
        "BRIDLE_LISTEN",
        "BRIDLE_JWT_SECRET",
        "BRIDLE_JWT_PUBLIC_KEY",
        "BRIDLE_JWT_JWKS",
        "BRIDLE_JWT_JWKS_URL",
        "BRIDLE_JWT_OIDC_ISSUER",
        "BRIDLE_JWT_ISSUER",
        "BRIDLE_JWT_AUDIENCE",
    ] {
        cmd.env_remove(var);
    }
    if let Some(s) = secret {
        cmd.env("BRIDLE_JWT_SECRET", s);
    }
    cmd
}

fn issue(cwd: &Path, secret: Option<&str>) -> Output {
    let args = [
        "token",
        "issue",
        "--subject",
        "requester-1",
        "--tenant",
        "tenant-a",
        "--services",
        "checkout",
        "--scopes",
        "service:read,service:scale",
        "--ttl",
        "1h",
    ];
    bridle(&args, cwd, secret).output().unwrap()
}

/// A plain HTTP/1.1 GET; returns the status line and the body.
fn http_get(addr: &str, path: &str, token: Option<&str>) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.lines().next().unwrap_or_default().to_owned();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

#[test]
fn token_issue_refuses_without_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let out = issue(dir.path(), None);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("BRIDLE_JWT_SECRET is not set"), "{}", text(&out.stderr));
    let short = issue(dir.path(), Some("short"));
    assert!(!short.status.success());
    assert!(text(&short.stderr).contains("at least 32 bytes"), "{}", text(&short.stderr));
    let serve = bridle(&["serve"], dir.path(), None).output().unwrap();
    assert!(!serve.status.success());
    assert!(text(&serve.stderr).contains("BRIDLE_JWT_SECRET"), "{}", text(&serve.stderr));
}

#[test]
fn a_token_it_issues_is_accepted_by_the_server_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = issue(dir.path(), Some(SECRET));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let token = text(&out.stdout).trim().to_owned();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    let mut server = bridle(&["serve", "--listen", "127.0.0.1:0"], dir.path(), Some(SECRET))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).unwrap().to_owned();

    let (status, body) = http_get(&addr, "/v1/tools", Some(&token));
    assert!(status.contains("200"), "{status} {body}");
    assert!(body.contains("scale_replicas"), "{body}");
    let (status, body) = http_get(&addr, "/v1/tools", None);
    assert!(status.contains("401") && body.contains("unauthenticated"), "{status} {body}");
    assert!(http_get(&addr, "/healthz", None).0.contains("200"));

    // SIGTERM: open requests drain, the runtime shuts down, the process exits 0.
    let killed = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = server.wait().unwrap();
    assert!(status.success(), "{status:?} {rest:?}");
    assert!(rest.iter().any(|l| l.contains("shutting down")), "{rest:?}");
    assert!(dir.path().join("bridle-data/bridle.db").exists(), "the default SQLite store under ./bridle-data/");
}
