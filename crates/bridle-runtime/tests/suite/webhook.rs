//! The `approval_requested` webhook against a local receiver: the body's fields, the signature
//! over timestamp and body, retries after failures, and a dead receiver never blocking the gate.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use bridle_core::Code;
use bridle_runtime::gate::CallRequest;
use bridle_runtime::notify::webhook::WebhookNotifier;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::support::{H, run};

const SECRET: &[u8] = b"webhook-test-secret";

#[derive(Clone, Default)]
struct Receiver {
    seen: Arc<Mutex<Vec<(HeaderMap, Bytes)>>>,
    /// Answer 503 to this many requests first.
    fail_first: Arc<Mutex<usize>>,
}

async fn record(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    r.seen.lock().unwrap().push((headers, body));
    let mut fail = r.fail_first.lock().unwrap();
    if *fail > 0 {
        *fail -= 1;
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    StatusCode::NO_CONTENT
}

async fn receiver(fail_first: usize) -> (Receiver, String) {
    let r = Receiver { fail_first: Arc::new(Mutex::new(fail_first)), ..Receiver::default() };
    let app = Router::new().route("/hook", post(record)).with_state(r.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (r, url)
}

fn notifier(url: &str, retries: u32) -> Arc<WebhookNotifier> {
    let n = WebhookNotifier::new(url, SECRET, Some("https://bridle.example/console"), Duration::from_secs(2), retries)
        .unwrap()
        .with_first_backoff(Duration::from_millis(10));
    Arc::new(n)
}

async fn wait_for(r: &Receiver, n: usize) -> Vec<(HeaderMap, Bytes)> {
    for _ in 0..200 {
        if r.seen.lock().unwrap().len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    r.seen.lock().unwrap().clone()
}

fn change() -> Value {
    json!({"service": "checkout", "replicas": 3, "resource_version": 7})
}

/// The receiver's check, written from the documented scheme (not with Bridle's own function).
fn verify(headers: &HeaderMap, body: &[u8]) -> bool {
    let timestamp = headers["x-bridle-timestamp"].to_str().unwrap();
    let given = headers["x-bridle-signature"].to_str().unwrap().strip_prefix("sha256=").unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET).unwrap();
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    mac.verify_slice(&hex::decode(given).unwrap()).is_ok()
}

#[tokio::test]
async fn a_new_pending_request_is_announced_signed() {
    let (r, url) = receiver(0).await;
    let mut h = H::checkout();
    h.rebuild(|b| b.notifier(notifier(&url, 0)));
    let me = h.who("requester-1");
    let out = h.gate.call(&me, &run(), &CallRequest::new("scale_replicas", change())).await.unwrap();
    assert_eq!(out.code(), Some(Code::ApprovalRequired));
    let id = out.approval_id.clone().unwrap();
    let seen = wait_for(&r, 1).await;
    assert_eq!(seen.len(), 1);
    let (headers, body) = &seen[0];
    assert!(verify(headers, body), "the signature must verify");
    assert_eq!(headers["x-bridle-event"], "approval_requested");
    assert!(!headers["x-bridle-delivery"].is_empty());
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let ts: i64 = headers["x-bridle-timestamp"].to_str().unwrap().parse().unwrap();
    assert!((now - ts).abs() < 60);
    // A tampered body, or the same body under another timestamp, does not verify.
    let mut tampered = body.to_vec();
    tampered.push(b' ');
    assert!(!verify(headers, &tampered));
    let mut retimed = headers.clone();
    retimed.insert("x-bridle-timestamp", (ts + 1).to_string().parse().unwrap());
    assert!(!verify(&retimed, body));

    let body: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(body["event"], "approval_requested");
    assert_eq!(body["approval_id"], id.as_str());
    assert_eq!(body["tenant"], "tenant-a");
    assert_eq!(body["tool"], "scale_replicas");
    assert_eq!(body["plan_hash"], out.plan_hash.unwrap().0.as_str());
    assert_eq!(body["level"], "approval");
    assert_eq!(body["requester"], "requester-1");
    assert!(body["expires_at"].as_str().unwrap().starts_with("2026-"));
    assert_eq!(body["console_url"], format!("https://bridle.example/console/approvals/{id}").as_str());
    // Arguments never travel in the webhook.
    assert!(body.get("arguments").is_none() && !body.to_string().contains("\"replicas\""));

    // The same call again points at the same request: nothing new is announced.
    h.gate.call(&me, &run(), &CallRequest::new("scale_replicas", change())).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(r.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn failed_deliveries_are_retried_with_the_same_delivery_id() {
    let (r, url) = receiver(2).await;
    let mut h = H::checkout();
    h.rebuild(|b| b.notifier(notifier(&url, 3)));
    let out = h.gate.call(&h.who("requester-1"), &run(), &CallRequest::new("scale_replicas", change())).await.unwrap();
    assert_eq!(out.code(), Some(Code::ApprovalRequired));
    let seen = wait_for(&r, 3).await;
    assert_eq!(seen.len(), 3, "two failures, then a success");
    let ids: Vec<_> = seen.iter().map(|(h, _)| h["x-bridle-delivery"].clone()).collect();
    assert!(ids.iter().all(|i| *i == ids[0]));
    assert!(seen.iter().all(|(h, b)| verify(h, b)));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(r.seen.lock().unwrap().len(), 3, "no attempt after a success");
}

#[tokio::test]
async fn a_dead_receiver_never_blocks_or_fails_the_gate() {
    // Bind and drop: nothing listens on this port.
    let port = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap().port();
    let mut h = H::checkout();
    h.rebuild(|b| b.notifier(notifier(&format!("http://127.0.0.1:{port}/hook"), 5)));
    let started = std::time::Instant::now();
    let out = h.gate.call(&h.who("requester-1"), &run(), &CallRequest::new("scale_replicas", change())).await.unwrap();
    assert_eq!(out.code(), Some(Code::ApprovalRequired));
    assert!(started.elapsed() < Duration::from_secs(1));
    // The request was stored regardless.
    assert_eq!(h.desk.pending_approvals(&h.who("operator-2")).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_prepared_request_is_announced_too() {
    let (r, url) = receiver(0).await;
    let mut h = H::checkout();
    h.rebuild(|b| b.notifier(notifier(&url, 0)));
    h.requested(
        "ap-prepared",
        "requester-1",
        "scale_replicas",
        &change(),
        &run(),
        bridle_core::contract::ApprovalLevel::Approval,
    )
    .await;
    let seen = wait_for(&r, 1).await;
    let body: Value = serde_json::from_slice(&seen[0].1).unwrap();
    assert_eq!(body["approval_id"], "ap-prepared");
}
