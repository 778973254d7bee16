//! Signed audit heads (issue 20 point 5, "a chain that knows its length"): a head keeper signs
//! each changed chain's head into a head log outside the audited table, and verification checks
//! every chain against every trusted head. Regression tests are named after the finding: a
//! deleted tail (the last event, the last hundred) used to verify OK.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bridle_core::audit::head::HeadKey;
use bridle_core::audit::{AuditRecord, Decision, EventKind, Timings, Versions};
use bridle_core::config::AuditSettings;
use bridle_core::contract::ApprovalLevel;
use bridle_runtime::audit::{AnchoredReport, HeadEnv, HeadPlan, HeadSource, Unanchored, head_log, verify_anchored};
use bridle_runtime::store::{Anchoring, Stores};
use serde_json::json;

use super::support::{H, T0, postgres_url, run};

fn key() -> HeadKey {
    HeadKey::from_seed(&[42; 32])
}

fn record(tenant: &str, i: u64) -> AuditRecord {
    AuditRecord {
        kind: EventKind::ToolCall,
        call_id: format!("c-{i}"),
        at: T0 + time::Duration::milliseconds(i64::try_from(i).unwrap()),
        tenant: tenant.into(),
        subject: "requester-1".into(),
        run_id: "run-1".into(),
        incident: String::new(),
        tool: "get_service_snapshot".into(),
        policy_version: "v1".into(),
        plan_hash: None,
        executor_identity: None,
        approval_id: None,
        approver: None,
        decision: Some(Decision::Executed),
        code: None,
        reason: None,
        timings: Timings::default(),
        auth: None,
        versions: Versions::default(),
    }
}

/// Heads of a store at `url` into `heads`, signed with `key`.
fn plan(url: &str, heads: &Path, key: Option<&HeadKey>, every_events: u64, every: Duration) -> HeadPlan {
    let settings = AuditSettings {
        heads: Some(heads.display().to_string()),
        head_every_events: every_events,
        head_every: every,
        ..AuditSettings::default()
    };
    let env = HeadEnv { signing_key: key.map(HeadKey::to_text), ..HeadEnv::default() };
    HeadPlan::resolve(&settings, url, &env).unwrap()
}

/// Long intervals: heads only when the test flushes or closes.
fn quiet(url: &str, heads: &Path) -> HeadPlan {
    plan(url, heads, Some(&key()), 1_000_000, Duration::from_secs(3600))
}

async fn anchored(url: &str, heads: &Path) -> Stores {
    Stores::open(url).await.unwrap().with_heads(&quiet(url, heads)).await.unwrap()
}

fn source(heads: &Path) -> HeadSource {
    HeadSource { key: key().public(), path: heads.to_path_buf() }
}

async fn verified(stores: &Stores, heads: &Path) -> AnchoredReport {
    verify_anchored(stores.audit.as_ref(), Ok(&source(heads))).await.unwrap()
}

async fn append(stores: &Stores, tenant: &str, n: u64) {
    let records = (1..=n).map(|i| record(tenant, i)).collect();
    stores.audit.append(records).await.unwrap();
}

fn sqlite(dir: &Path) -> (String, PathBuf) {
    let db = dir.join("bridle.db");
    (format!("sqlite://{}", db.display()), dir.join("bridle.db.heads"))
}

/// Deletes `tenant`'s events after `seq` behind the store's back.
async fn delete_after_sqlite(url: &str, tenant: &str, seq: i64) {
    let pool = sqlx::SqlitePool::connect(url).await.unwrap();
    sqlx::query("DELETE FROM audit_events WHERE tenant = ? AND seq > ?")
        .bind(tenant)
        .bind(seq)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
}

fn missing(report: &AnchoredReport, tenant: &str) -> Option<(u64, u64)> {
    report.tails.iter().find(|t| t.tenant == tenant)?.missing.as_ref().map(|m| (m.from, m.to))
}

#[tokio::test]
async fn regression_tail_deletion_of_the_last_event_is_named_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let (url, heads) = sqlite(dir.path());
    let stores = anchored(&url, &heads).await;
    append(&stores, "tenant-a", 12).await;
    append(&stores, "tenant-b", 3).await;
    stores.anchoring.close().await.unwrap();
    let report = verified(&stores, &heads).await;
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.heads.trusted, 2, "one head per tenant that changed");

    delete_after_sqlite(&url, "tenant-a", 11).await;
    let report = verified(&stores, &heads).await;
    // The chain alone still verifies: only the head knows it was longer.
    assert!(report.chains.ok());
    assert!(!report.ok());
    assert_eq!(missing(&report, "tenant-a"), Some((12, 12)));
    assert_eq!(missing(&report, "tenant-b"), None);
}

#[tokio::test]
async fn regression_tail_deletion_of_the_last_hundred_events_is_named_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let (url, heads) = sqlite(dir.path());
    let stores = anchored(&url, &heads).await;
    append(&stores, "tenant-a", 150).await;
    stores.anchoring.close().await.unwrap();
    delete_after_sqlite(&url, "tenant-a", 50).await;
    let report = verified(&stores, &heads).await;
    assert!(report.chains.ok() && !report.ok());
    assert_eq!(missing(&report, "tenant-a"), Some((51, 150)));
    let tail = report.tails.iter().find(|t| t.tenant == "tenant-a").unwrap();
    assert!(tail.describe().contains("events 51–150"), "{}", tail.describe());

    // Every event gone: the tenant is still named, from its heads alone.
    delete_after_sqlite(&url, "tenant-a", 0).await;
    let report = verified(&stores, &heads).await;
    assert_eq!(missing(&report, "tenant-a"), Some((1, 150)));
}

#[tokio::test]
async fn regression_tail_deletion_is_named_on_postgres() {
    let Some(base) = postgres_url() else { return };
    let admin = sqlx::PgPool::connect(&base).await.expect("PostgreSQL must be reachable");
    let schema = format!("bridle_heads_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options[search_path]={schema}");
    let dir = tempfile::tempdir().unwrap();
    let heads = dir.path().join("replicas.heads");

    // Two replicas (two pools) appending to one head log.
    let (a, b) = (anchored(&url, &heads).await, anchored(&url, &heads).await);
    append(&a, "tenant-a", 150).await;
    append(&b, "tenant-b", 20).await;
    a.anchoring.close().await.unwrap();
    b.anchoring.close().await.unwrap();
    let report = verified(&a, &heads).await;
    assert!(report.ok(), "{report:?}");
    assert!(report.heads.trusted >= 2, "{:?}", report.heads);

    let raw = sqlx::PgPool::connect(&url).await.unwrap();
    let delete = |tenant: &'static str, after: i64| {
        let raw = raw.clone();
        async move {
            sqlx::query("DELETE FROM audit_events WHERE tenant = $1 AND seq > $2")
                .bind(tenant)
                .bind(after)
                .execute(&raw)
                .await
                .unwrap();
        }
    };
    delete("tenant-b", 19).await;
    delete("tenant-a", 50).await;
    let report = verified(&a, &heads).await;
    assert!(report.chains.ok() && !report.ok());
    assert_eq!(missing(&report, "tenant-b"), Some((20, 20)), "the last event");
    assert_eq!(missing(&report, "tenant-a"), Some((51, 150)), "the last hundred");
    raw.close().await;
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await.unwrap();
}

#[tokio::test]
async fn regression_a_tail_deleted_and_regrown_is_a_rewrite_at_the_signed_seq() {
    let dir = tempfile::tempdir().unwrap();
    let (url, heads) = sqlite(dir.path());
    let stores = anchored(&url, &heads).await;
    append(&stores, "tenant-a", 10).await;
    stores.anchoring.close().await.unwrap();
    // Cut back to 4 and append other events: a chain valid link by link, longer than the head.
    delete_after_sqlite(&url, "tenant-a", 4).await;
    let forged: Vec<AuditRecord> = (5..=14).map(|i| record("tenant-a", 1000 + i)).collect();
    stores.audit.append(forged).await.unwrap();
    let report = verified(&stores, &heads).await;
    assert!(report.chains.ok(), "{report:?}");
    let tail = report.tails.iter().find(|t| t.tenant == "tenant-a").unwrap();
    assert_eq!(tail.rewritten.as_ref().map(|r| r.seq), Some(10), "{tail:?}");
    assert!(tail.missing.is_none());
    assert!(!report.ok());
}

#[tokio::test]
async fn a_forged_head_line_is_reported_and_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (url, heads) = sqlite(dir.path());
    let stores = anchored(&url, &heads).await;
    append(&stores, "tenant-a", 5).await;
    stores.anchoring.close().await.unwrap();
    let text = std::fs::read_to_string(&heads).unwrap();
    let line = text.lines().next().unwrap();
    // The same head claiming a longer chain, signature unchanged.
    let forged = line.replace("\"seq\":5", "\"seq\":500");
    assert_ne!(forged, line);
    std::fs::write(&heads, format!("{text}{forged}\n")).unwrap();
    let report = verified(&stores, &heads).await;
    assert_eq!(report.heads.problems.len(), 1, "{:?}", report.heads);
    assert_eq!(report.heads.problems[0].line, 2);
    assert!(report.heads.problems[0].problem.contains("signature does not verify"));
    assert_eq!(missing(&report, "tenant-a"), None, "a forged head is never trusted");
    assert!(!report.ok(), "an untrusted line fails the verification");
    // A head signed by another key is not trusted either.
    let other = HeadKey::from_seed(&[9; 32]);
    let theirs = other.sign(
        &bridle_core::audit::head::ChainHead { tenant: "tenant-a".into(), seq: 99, hash: "x".into() },
        "2026-01-01T00:00:00Z",
    );
    std::fs::write(&heads, format!("{text}{}\n", theirs.to_line())).unwrap();
    let report = verified(&stores, &heads).await;
    assert!(report.heads.problems[0].problem.contains("another key"), "{:?}", report.heads);
    assert_eq!(missing(&report, "tenant-a"), None);
}

#[tokio::test]
async fn without_a_key_nothing_is_signed_and_verify_says_the_tail_is_unanchored() {
    let dir = tempfile::tempdir().unwrap();
    let (url, heads) = sqlite(dir.path());
    let plan = plan(&url, &heads, None, 1, Duration::from_millis(10));
    assert_eq!(plan.unanchored(), Some(Unanchored::NoKey));
    let stores = Stores::open(&url).await.unwrap().with_heads(&plan).await.unwrap();
    assert!(matches!(stores.anchoring, Anchoring::Unanchored(Unanchored::NoKey)));
    append(&stores, "tenant-a", 3).await;
    stores.anchoring.close().await.unwrap();
    assert!(!heads.exists(), "no head log without a key");
    let report = verify_anchored(stores.audit.as_ref(), plan.source().as_ref().map_err(|w| *w)).await.unwrap();
    assert!(report.ok());
    assert_eq!(report.heads.status, "no_key");
    assert!(report.heads.note.as_deref().unwrap_or_default().contains("unanchored"), "{:?}", report.heads);
    // A key but no head log yet: unanchored too, and said so.
    let report = verified(&stores, &heads).await;
    assert!(report.ok());
    assert_eq!(report.heads.status, "no_heads_yet");
}

#[tokio::test]
async fn heads_cover_events_appended_inside_store_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let (url, heads) = sqlite(dir.path());
    let h = H::new(bridle_runtime::bundled::checkout().unwrap(), anchored(&url, &heads).await);
    // `approval_requested` and `approval_granted` are appended in the store's own transactions
    // (`append_in`), never through the audit log port.
    h.approved("a-1", &json!({"service": "checkout", "replicas": 3, "resource_version": 7}), &run()).await;
    h.requested(
        "a-2",
        "requester-1",
        "scale_replicas",
        &json!({"service": "checkout", "replicas": 4, "resource_version": 7}),
        &run(),
        ApprovalLevel::Approval,
    )
    .await;
    h.gate.stores().anchoring.close().await.unwrap();
    let last = h.events().await.into_iter().filter(|e| e.record.tenant == "tenant-a").map(|e| e.seq).max();
    let report = verified(h.gate.stores(), &heads).await;
    let tail = report.tails.iter().find(|t| t.tenant == "tenant-a").unwrap();
    assert_eq!(tail.anchor.as_ref().map(|a| a.seq), last, "{tail:?}");
    assert_eq!(tail.unanchored, 0);
}

/// Lines of the head log naming `tenant`, as (seq).
fn head_seqs(heads: &Path, tenant: &str) -> Vec<u64> {
    let Ok(text) = std::fs::read_to_string(heads) else { return Vec::new() };
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["tenant"] == tenant)
        .filter_map(|v| v["seq"].as_u64())
        .collect()
}

async fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..200 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{what} never happened");
}

#[tokio::test]
async fn a_head_is_written_after_n_events_and_every_t_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let (url, heads) = sqlite(dir.path());
    // After 5 events (the interval is long).
    let by_count = plan(&url, &heads, Some(&key()), 5, Duration::from_secs(3600));
    let stores = Stores::open(&url).await.unwrap().with_heads(&by_count).await.unwrap();
    append(&stores, "tenant-a", 4).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(head_seqs(&heads, "tenant-a").is_empty(), "4 events: no head yet");
    append(&stores, "tenant-a", 1).await;
    eventually("a head after 5 events", || head_seqs(&heads, "tenant-a") == [5]).await;
    drop(stores);

    // Every 50 ms while chains change; nothing while they do not.
    let timed = plan(&url, &heads, Some(&key()), 1_000_000, Duration::from_millis(50));
    let stores = Stores::open(&url).await.unwrap().with_heads(&timed).await.unwrap();
    append(&stores, "tenant-b", 2).await;
    eventually("a periodic head", || head_seqs(&heads, "tenant-b") == [2]).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(head_seqs(&heads, "tenant-b"), [2], "an unchanged chain gets no new head");
    stores.anchoring.close().await.unwrap();
}

#[tokio::test]
async fn a_head_log_that_cannot_be_written_never_fails_a_call_and_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _) = sqlite(dir.path());
    let heads = dir.path().join("not-yet/heads.jsonl");
    let stores = anchored(&url, &heads).await;
    let h = H::new(bridle_runtime::bundled::checkout().unwrap(), stores.clone());
    let out = h
        .gate
        .call(
            &h.who("requester-1"),
            &run(),
            &bridle_runtime::gate::CallRequest::new("get_service_snapshot", json!({"service": "checkout"})),
        )
        .await
        .unwrap();
    assert_eq!(out.code(), None, "{out:?}");
    let Anchoring::Kept(keeper) = &stores.anchoring else { panic!("no keeper") };
    assert!(keeper.flush().await.is_err(), "the directory does not exist");
    std::fs::create_dir_all(dir.path().join("not-yet")).unwrap();
    assert_eq!(keeper.flush().await.unwrap().written, 1, "the same head, retried");
    assert_eq!(head_seqs(&heads, "tenant-a"), [1]);
}

#[tokio::test]
async fn every_head_reaches_the_webhook() {
    use axum::routing::post;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<serde_json::Value>();
    let app = axum::Router::new().route(
        "/heads",
        post(move |axum::Json(body): axum::Json<serde_json::Value>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let (url, heads) = sqlite(dir.path());
    let settings = AuditSettings {
        heads: Some(heads.display().to_string()),
        heads_webhook: Some(format!("http://{addr}/heads")),
        head_every: Duration::from_secs(3600),
        ..AuditSettings::default()
    };
    let env = HeadEnv { signing_key: Some(key().to_text()), ..HeadEnv::default() };
    let plan = HeadPlan::resolve(&settings, &url, &env).unwrap();
    let stores = Stores::open(&url).await.unwrap().with_heads(&plan).await.unwrap();
    append(&stores, "tenant-a", 3).await;
    stores.anchoring.close().await.unwrap();
    let body = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap();
    assert_eq!(body["event"], "audit_heads");
    let head: bridle_core::audit::head::SignedHead = serde_json::from_value(body["heads"][0].clone()).unwrap();
    assert_eq!((head.tenant.as_str(), head.seq), ("tenant-a", 3));
    key().public().verify(&head).unwrap();
    // The same head is in the file.
    let read = head_log::read(&heads, &key().public(), None).unwrap().unwrap();
    assert_eq!(read.trusted, 1);
}

#[tokio::test]
async fn two_writers_on_one_sqlite_file_share_one_head_log() {
    let dir = tempfile::tempdir().unwrap();
    let (url, heads) = sqlite(dir.path());
    let (a, b) = (anchored(&url, &heads).await, anchored(&url, &heads).await);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move {
                for _ in 0..5 {
                    append(&s, "tenant-a", 3).await;
                    if let Anchoring::Kept(k) = &s.anchoring {
                        k.flush().await.unwrap();
                    }
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    a.anchoring.close().await.unwrap();
    b.anchoring.close().await.unwrap();
    let report = verified(&a, &heads).await;
    assert!(report.ok(), "{:?}", report.heads);
    let tail = report.tails.iter().find(|t| t.tenant == "tenant-a").unwrap();
    assert_eq!((tail.events, tail.anchor.as_ref().map(|x| x.seq)), (120, Some(120)));
    assert!(report.heads.trusted > 2, "{:?}", report.heads);
}
