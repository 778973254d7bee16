//! Approval links that open the card: `bridle serve` with `[webhooks] approval_requested` naming
//! a fake receiver (axum on 127.0.0.1:0) sends, for a change that needs approval, a link that the
//! same server answers with the console; with `BRIDLE_CONSOLE_URL` set, the link is built on it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use axum::Json;
use axum::routing::post;
use serde_json::Value;

use super::support::{Proc, copy_example, text};

const SECRET: &str = "links-test-secret-links-test-secret-01";

/// One HTTP/1.1 exchange; returns the status line and the body.
fn http(addr: &str, request: &str) -> (String, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.lines().next().unwrap_or_default().to_owned();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

/// A `bridle serve` child, killed when dropped.
struct Served {
    _child: Proc,
    addr: String,
}

/// `bridle serve` over the checkout example with webhooks to `receiver`.
fn serve(dir: &std::path::Path, receiver: &str, console: Option<&str>) -> Served {
    let config = format!("{}\n[webhooks]\napproval_requested = \"http://{receiver}/hook\"\n", copy_example(dir));
    std::fs::write(dir.join("bridle.toml"), config).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridle"));
    cmd.args(["serve", "--config", "bridle.toml", "--listen", "127.0.0.1:0", "--db", "sqlite://links.db"])
        .current_dir(dir)
        .env("BRIDLE_JWT_SECRET", SECRET)
        .env("BRIDLE_WEBHOOK_SECRET", "hook-secret")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for var in
        ["BRIDLE_CONFIG", "BRIDLE_STORE_URL", "BRIDLE_LISTEN", "BRIDLE_CONSOLE_URL", "OTEL_EXPORTER_OTLP_ENDPOINT"]
    {
        cmd.env_remove(var);
    }
    if let Some(console) = console {
        cmd.env("BRIDLE_CONSOLE_URL", console);
    }
    let mut child = cmd.spawn().unwrap();
    let first = BufReader::new(child.stdout.take().unwrap()).lines().next().unwrap().unwrap();
    let addr = first.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).unwrap().to_owned();
    Served { _child: Proc(child), addr }
}

fn token(dir: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bridle"))
        .args(["token", "issue", "--subject", "requester-1", "--tenant", "tenant-a", "--services", "checkout"])
        .args(["--scopes", "service:read,service:scale", "--ttl", "1h"])
        .current_dir(dir)
        .env("BRIDLE_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// Asks for a change that needs approval and returns the link the webhook carried.
async fn link_for(server: &Served, token: &str, rx: &mut tokio::sync::mpsc::UnboundedReceiver<Value>) -> String {
    let call =
        r#"{"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7}}"#;
    let request = format!(
        "POST /v1/calls HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{call}",
        call.len(),
        a = server.addr
    );
    let addr = server.addr.clone();
    let (status, body) = tokio::task::spawn_blocking(move || http(&addr, &request)).await.unwrap();
    assert!(status.contains("200") && body.contains("approval_required"), "{status} {body}");
    let event = tokio::time::timeout(Duration::from_secs(20), rx.recv()).await.unwrap().unwrap();
    event["console_url"].as_str().unwrap_or_else(|| panic!("no console_url in {event}")).to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhooks_approval_link_opens_the_card_on_the_console_base() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    let receiver = axum::Router::new().route(
        "/hook",
        post(move |Json(body): Json<Value>| {
            let _ = tx.send(body);
            async { "ok" }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let receiver_addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, receiver).await });

    // By default the link is the server's own card page, and it answers with the console.
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &receiver_addr, None);
    let link = link_for(&server, &token(dir.path()), &mut rx).await;
    let path = link.strip_prefix(&format!("http://{}", server.addr)).unwrap_or_else(|| panic!("{link}")).to_owned();
    assert!(path.starts_with("/approvals/"), "{link}");
    let addr = server.addr.clone();
    let get = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let (status, page) = tokio::task::spawn_blocking(move || http(&addr, &get)).await.unwrap();
    assert!(status.contains("200"), "{link}: {status}");
    assert!(page.contains("<html") && page.contains("app.js"), "{link} is not the console");
    drop(server);

    // Behind a proxy: the one setting, `BRIDLE_CONSOLE_URL`, is the base of the link.
    let dir = tempfile::tempdir().unwrap();
    let server = serve(dir.path(), &receiver_addr, Some("https://bridle.example/"));
    let link = link_for(&server, &token(dir.path()), &mut rx).await;
    assert!(link.starts_with("https://bridle.example/approvals/"), "{link}");
}
