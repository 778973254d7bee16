//! SQLite-only store properties: data survives reopening, tampering is caught, schema versions
//! are checked, integers never wrap, corrupt rows are reported as such.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use bridle_core::audit::verify_chain;
use bridle_core::ports::{BudgetKind, Debit, Reserved, StoreError};
use bridle_runtime::store::{SqliteStore, Stores};
use sqlx::SqlitePool;
use sqlx::sqlite::SqliteConnectOptions;
use tempfile::TempDir;

use super::{T0, decision, granted, job, plan, record, secs};

fn db_path(dir: &TempDir) -> PathBuf {
    dir.path().join("bridle.db")
}

fn url(path: &Path) -> String {
    format!("sqlite://{}", path.display())
}

async fn open(path: &Path) -> anyhow::Result<(Arc<SqliteStore>, Stores)> {
    let store = Arc::new(SqliteStore::open(&url(path)).await?);
    let stores = Stores::from_backend(store.clone(), &url(path));
    Ok((store, stores))
}

/// A plain connection to the same file, standing in for someone editing it behind our back.
async fn raw(path: &Path) -> anyhow::Result<SqlitePool> {
    Ok(SqlitePool::connect_with(SqliteConnectOptions::new().filename(path)).await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reopening_a_file_keeps_data_and_continues_the_chain() -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let path = db_path(&dir);
    let p = plan("tenant-a", 3);
    {
        let (store, s) = open(&path).await?;
        granted(&s, "a-1", &p, T0).await?;
        s.jobs.reserve(&job("j-1", &p, Some("k-1"), None, T0)?, None, Vec::new()).await?;
        s.budgets.debit("tenant-a", "run-1", BudgetKind::Calls, 4, 10).await?;
        s.audit.append((0..5).map(|i| record("tenant-a", i)).collect()).await?;
        s.decisions.record(&decision("d-1", "tenant-a", secs(1))).await?;
        store.close().await;
    }
    let (store, s) = open(&path).await?;
    let a1 = s.approvals.get_request("tenant-a", "a-1").await?.context("approval survives")?;
    assert_eq!(a1.grants.len(), 1);
    assert_eq!(s.jobs.find_by_key("tenant-a", "requester-1", "k-1").await?.map(|j| j.id).as_deref(), Some("j-1"));
    assert_eq!(s.budgets.debit("tenant-a", "run-1", BudgetKind::Calls, 7, 10).await?, Debit::Exhausted { used: 4 });
    assert_eq!(s.decisions.recent("tenant-a", 10).await?.len(), 1);
    let more = s.audit.append((5..8).map(|i| record("tenant-a", i)).collect()).await?;
    assert_eq!(more.first().map(|e| e.seq), Some(6));
    let events = s.audit.events("tenant-a", 0, 100).await?;
    assert_eq!(verify_chain("tenant-a", &events).map_err(|b| anyhow::anyhow!("{b:?}"))?, 8);
    store.close().await;
    // Migrations ran once.
    let db = raw(&path).await?;
    let versions: Vec<i64> = sqlx::query_scalar("SELECT version FROM schema_migrations").fetch_all(&db).await?;
    assert!(versions.starts_with(&[1, 2, 3, 4]), "versions {versions:?}");
    assert!(versions.windows(2).all(|w| w[1] > w[0]), "versions {versions:?}");
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&db).await?;
    assert_eq!(mode, "wal");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tampered_audit_row_is_caught_at_its_seq() -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let path = db_path(&dir);
    let (_store, s) = open(&path).await?;
    let mut records: Vec<_> = (0..6).map(|i| record("tenant-a", i)).collect();
    records.extend((0..6).map(|i| record("tenant-b", i)));
    records.extend((0..6).map(|i| record("tenant-c", i)));
    s.audit.append(records).await?;
    let db = raw(&path).await?;
    let edited =
        sqlx::query("UPDATE audit_events SET code = 'ok' WHERE tenant = 'tenant-a' AND seq = 3").execute(&db).await?;
    assert_eq!(edited.rows_affected(), 1);
    sqlx::query("DELETE FROM audit_events WHERE tenant = 'tenant-b' AND seq = 2").execute(&db).await?;
    sqlx::query("UPDATE audit_events SET at = at + 1 WHERE tenant = 'tenant-c' AND seq = 5").execute(&db).await?;
    let broken = |tenant: &'static str| {
        let s = s.clone();
        async move {
            let events = s.audit.events(tenant, 0, 100).await?;
            Ok::<_, anyhow::Error>(verify_chain(tenant, &events).err().map(|b| b.seq))
        }
    };
    assert_eq!(broken("tenant-a").await?, Some(3));
    assert_eq!(broken("tenant-b").await?, Some(2));
    assert_eq!(broken("tenant-c").await?, Some(5));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_from_a_newer_build_is_refused() -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let path = db_path(&dir);
    open(&path).await?.0.close().await;
    let db = raw(&path).await?;
    sqlx::query("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')")
        .execute(&db)
        .await?;
    let err = SqliteStore::open(&url(&path)).await.err();
    assert!(matches!(&err, Some(StoreError::Unavailable(m)) if m.contains("999")), "{err:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn counts_past_i64_are_refused_never_wrapped() -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let (_store, s) = open(&db_path(&dir)).await?;
    let huge = u64::MAX - 1;
    let err = s.budgets.debit("tenant-a", "run-1", BudgetKind::Cost, huge, u64::MAX).await;
    assert!(matches!(err, Err(StoreError::Unavailable(_))), "{err:?}");
    let max = i64::MAX.unsigned_abs();
    assert_eq!(
        s.budgets.debit("tenant-a", "run-1", BudgetKind::Cost, max, u64::MAX).await?,
        Debit::Accepted { used: max }
    );
    // The counter is full: one more fits the limit but not the column.
    let err = s.budgets.debit("tenant-a", "run-1", BudgetKind::Cost, 1, u64::MAX).await;
    assert!(matches!(err, Err(StoreError::Unavailable(_))), "{err:?}");
    assert_eq!(s.budgets.debit("tenant-a", "run-1", BudgetKind::Cost, 1, max).await?, Debit::Exhausted { used: max });
    assert_eq!(s.budgets.used("tenant-a", "run-1", BudgetKind::Cost).await?, max);
    let mut d = decision("d-1", "tenant-a", secs(1));
    d.prompt_tokens = u64::MAX;
    let err = s.decisions.record(&d).await;
    assert!(matches!(err, Err(StoreError::Unavailable(_))), "{err:?}");
    assert!(s.decisions.recent("tenant-a", 10).await?.is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn undecodable_rows_are_corrupt() -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let path = db_path(&dir);
    let (_store, s) = open(&path).await?;
    let p = plan("tenant-a", 3);
    assert_eq!(s.jobs.reserve(&job("j-1", &p, None, None, T0)?, None, Vec::new()).await?, Reserved::Reserved);
    granted(&s, "a-1", &p, T0).await?;
    let db = raw(&path).await?;
    sqlx::query("UPDATE jobs SET status = 'exploded' WHERE id = 'j-1'").execute(&db).await?;
    sqlx::query("UPDATE approvals SET grants = '[{\"approver\": 1}]' WHERE id = 'a-1'").execute(&db).await?;
    let job = s.jobs.get_job("j-1").await;
    assert!(matches!(job, Err(StoreError::Corrupt(_))), "{job:?}");
    let req = s.approvals.get_request("tenant-a", "a-1").await;
    assert!(matches!(req, Err(StoreError::Corrupt(_))), "{req:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_in_memory_store_is_its_own_database() -> anyhow::Result<()> {
    let a = Stores::open("sqlite::memory:").await?;
    let b = Stores::open("sqlite::memory:").await?;
    a.budgets.debit("tenant-a", "run-1", BudgetKind::Calls, 2, 10).await?;
    assert_eq!(a.budgets.used("tenant-a", "run-1", BudgetKind::Calls).await?, 2);
    assert_eq!(b.budgets.used("tenant-a", "run-1", BudgetKind::Calls).await?, 0);
    Ok(())
}

/// Many writers at once, with another connection taking SQLite's write lock now and then: the
/// store commits their transactions in groups, answers each caller only after the commit that
/// holds its writes (another connection already sees them), keeps one job per idempotency key
/// (the loser's savepoint undone, the group's other writes kept), and keeps the chain whole.
async fn group_commit_case(suffix: &str) -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let path = db_path(&dir);
    let store = Arc::new(SqliteStore::open(&format!("{}{suffix}", url(&path))).await?);
    let s = Stores::from_backend(store.clone(), &url(&path));
    let other = raw(&path).await?;
    let holder = {
        let other = other.clone();
        tokio::spawn(async move {
            for _ in 0..5 {
                let tx = other.begin_with("BEGIN IMMEDIATE").await?;
                tokio::time::sleep(std::time::Duration::from_millis(15)).await;
                tx.commit().await?;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            Ok::<_, anyhow::Error>(())
        })
    };
    let mut tasks = Vec::new();
    for i in 0..64u32 {
        let (s, other) = (s.clone(), other.clone());
        tasks.push(tokio::spawn(async move {
            let event = s.audit.append(vec![record("tenant-a", i.into())]).await?.remove(0);
            let seen: Option<String> =
                sqlx::query_scalar("SELECT hash FROM audit_events WHERE tenant = 'tenant-a' AND seq = ?")
                    .bind(i64::try_from(event.seq)?)
                    .fetch_optional(&other)
                    .await?;
            assert_eq!(seen.as_deref(), Some(event.hash.as_str()), "event {} answered before its commit", event.seq);
            let p = plan("tenant-a", u64::from(i % 16));
            let key = format!("k-{}", i % 16);
            let won = s.jobs.reserve(&job(&format!("j-{i}"), &p, Some(&key), None, T0)?, None, Vec::new()).await?;
            Ok::<_, anyhow::Error>(matches!(won, Reserved::Reserved))
        }));
    }
    let mut reserved = 0;
    for t in tasks {
        reserved += usize::from(t.await??);
    }
    holder.await??;
    assert_eq!(reserved, 16, "one job per key");
    let jobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs").fetch_one(&other).await?;
    assert_eq!(jobs, 16);
    let events = s.audit.events("tenant-a", 0, 1000).await?;
    assert_eq!(verify_chain("tenant-a", &events).map_err(|b| anyhow::anyhow!("{b:?}"))?, 64);
    store.close().await;
    assert!(s.audit.events("tenant-a", 0, 10).await.is_err(), "a closed store answers nothing");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writes_are_group_committed_and_answered_after_their_commit() -> anyhow::Result<()> {
    group_commit_case("").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn group_commits_fsync_under_synchronous_full() -> anyhow::Result<()> {
    group_commit_case("?synchronous=full").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_appending_to_one_file_in_turns_keep_one_chain() -> anyhow::Result<()> {
    // Each store's writer knows its chain heads only inside its own group transaction: the
    // other store's appends in between are read, never chained over.
    let dir = TempDir::new()?;
    let path = db_path(&dir);
    let (first, a) = open(&path).await?;
    let (second, b) = open(&path).await?;
    for round in 0..4 {
        let by_a = a.audit.append(vec![record("tenant-a", round * 2)]).await?;
        let by_b = b.audit.append(vec![record("tenant-a", round * 2 + 1)]).await?;
        assert_eq!(by_a.first().map(|e| e.seq), Some(round * 2 + 1));
        assert_eq!(by_b.first().map(|e| e.seq), Some(round * 2 + 2));
        assert_eq!(by_b.first().map(|e| e.prev_hash.as_str()), by_a.first().map(|e| e.hash.as_str()));
    }
    let events = a.audit.events("tenant-a", 0, 100).await?;
    assert_eq!(verify_chain("tenant-a", &events).map_err(|e| anyhow::anyhow!("{e:?}"))?, 8);
    first.close().await;
    second.close().await;
    Ok(())
}
