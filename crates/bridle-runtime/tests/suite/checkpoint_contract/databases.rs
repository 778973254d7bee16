//! Checkpointer properties only a database has: data survives reopening, the store and the
//! checkpointer share one SQLite file and migration history, corrupt rows are errors (never
//! panics), concurrent openers migrate once, and a newer schema is refused.

use std::sync::Arc;

use anyhow::{Context, ensure};
use bridle_core::ports::{Checkpointer, StoreError};
use bridle_runtime::checkpoint::{PostgresCheckpointer, SqliteCheckpointer, Strictness, open_checkpointer};
use bridle_runtime::store::Stores;
use sqlx::{PgPool, SqlitePool};
use tempfile::TempDir;

use super::{checkpoint, task_ids, thread, writes};
use crate::suite::support::postgres_url;

fn sqlite_url(dir: &TempDir) -> String {
    format!("sqlite://{}", dir.path().join("bridle.db").display())
}

fn is_corrupt<T: std::fmt::Debug>(r: Result<T, StoreError>) -> bool {
    matches!(r, Err(StoreError::Corrupt(_)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_data_survives_reopening_beside_the_store() -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let url = sqlite_url(&dir);
    let t = thread();
    let cp = SqliteCheckpointer::open(&url, Strictness::Normal).await?;
    for step in 0..3 {
        cp.put(&checkpoint(&t, step), 2).await?;
    }
    cp.put_writes(&t, 2, &writes("2:1", 5)).await?;
    cp.close().await;
    // The store opens the same file (one migration history), then the checkpointer again.
    let stores = Stores::open(&url).await?;
    let cp = SqliteCheckpointer::open(&url, Strictness::Strict).await?;
    assert_eq!(cp.latest(&t).await?, Some(checkpoint(&t, 2)));
    assert_eq!(cp.steps(&t).await?, [1, 2]);
    assert_eq!(cp.writes(&t, 2).await?, [writes("2:1", 5)]);
    ensure!(stores.decisions.recent("tenant-a", 5).await?.is_empty());
    let db = SqlitePool::connect(&url).await?;
    // One history: the checkpoint schema (2) recorded once, beside the store's.
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM schema_migrations ORDER BY version").fetch_all(&db).await?;
    ensure!(versions.starts_with(&[1, 2]), "versions {versions:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_concurrent_openers_of_a_fresh_file() -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let url = sqlite_url(&dir);
    let (a, b, s) = tokio::join!(
        SqliteCheckpointer::open(&url, Strictness::Normal),
        SqliteCheckpointer::open(&url, Strictness::Strict),
        Stores::open(&url),
    );
    let (a, b, _s) = (a?, b?, s?);
    let t = thread();
    a.put(&checkpoint(&t, 0), 1).await?;
    assert_eq!(b.latest(&t).await?, Some(checkpoint(&t, 0)));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_corrupt_rows_are_errors() -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let url = sqlite_url(&dir);
    let cp = open_checkpointer(&url, Strictness::Normal).await?;
    let db = SqlitePool::connect(&url).await?;
    corrupt_rows_are_errors(cp, |sql, thread| {
        let db = db.clone();
        async move { Ok(sqlx::query(&sql.replace("$1", "?")).bind(thread).execute(&db).await.map(|_| ())?) }
    })
    .await
}

/// Tampers with stored rows through `exec(sql, thread)` (`$1` = the thread id) and checks that
/// reading them back fails with `Corrupt` while the key columns stay readable.
async fn corrupt_rows_are_errors<F, Fut>(cp: Arc<dyn Checkpointer>, exec: F) -> anyhow::Result<()>
where
    F: Fn(String, String) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let t = thread();
    cp.put(&checkpoint(&t, 1), 3).await?;
    cp.put_writes(&t, 1, &writes("1:0", 1)).await?;
    exec("UPDATE checkpoints SET body = 'not json {' WHERE thread_id = $1".into(), t.clone()).await?;
    ensure!(is_corrupt(cp.latest(&t).await), "garbage body");
    // Valid JSON of the wrong shape, and a body naming another thread, are corrupt too.
    exec("UPDATE checkpoints SET body = '{\"thread_id\": 1}' WHERE thread_id = $1".into(), t.clone()).await?;
    ensure!(is_corrupt(cp.latest(&t).await), "wrong shape");
    let other = serde_json::to_string(&checkpoint("another-thread", 1))?.replace('\'', "''");
    exec(format!("UPDATE checkpoints SET body = '{other}' WHERE thread_id = $1"), t.clone()).await?;
    ensure!(is_corrupt(cp.latest(&t).await), "body of another thread");
    exec("UPDATE checkpoint_writes SET body = '[]' WHERE thread_id = $1".into(), t.clone()).await?;
    ensure!(is_corrupt(cp.writes(&t, 1).await), "writes body");
    assert_eq!(cp.steps(&t).await?, [1]);
    // Overwriting repairs the thread.
    cp.put(&checkpoint(&t, 1), 3).await?;
    cp.put_writes(&t, 1, &writes("1:0", 2)).await?;
    assert_eq!(cp.latest(&t).await?, Some(checkpoint(&t, 1)));
    assert_eq!(task_ids(&cp.writes(&t, 1).await?), ["1:0"]);
    cp.delete_thread(&t).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_corrupt_rows_are_errors() -> anyhow::Result<()> {
    let Some(url) = postgres_url() else { return Ok(()) };
    let cp = open_checkpointer(&url, Strictness::Normal).await?;
    let db = PgPool::connect(&url).await?;
    corrupt_rows_are_errors(cp, |sql, thread| {
        let db = db.clone();
        async move { Ok(sqlx::query(&sql).bind(thread).execute(&db).await.map(|_| ())?) }
    })
    .await
}

/// A fresh schema (so the first migration really runs) opened by four checkpointers at once:
/// the schema is applied once; then a newer recorded version makes opening fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_concurrent_openers_migrate_once_and_newer_schemas_are_refused() -> anyhow::Result<()> {
    let Some(url) = postgres_url() else { return Ok(()) };
    let admin = PgPool::connect(&url).await?;
    let schema = format!("bridle_test_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await?;
    let result = async {
        let sep = if url.contains('?') { '&' } else { '?' };
        let scoped = format!("{url}{sep}options[search_path]={schema}");
        let (a, b, c, d) = tokio::join!(
            PostgresCheckpointer::open(&scoped),
            PostgresCheckpointer::open(&scoped),
            PostgresCheckpointer::open(&scoped),
            PostgresCheckpointer::open(&scoped),
        );
        let (a, b, _c, _d) = (a?, b?, c?, d?);
        let t = thread();
        a.put(&checkpoint(&t, 0), 1).await?;
        assert_eq!(b.latest(&t).await?, Some(checkpoint(&t, 0)));
        let versions: Vec<i64> =
            sqlx::query_scalar(&format!("SELECT version FROM {schema}.schema_migrations ORDER BY version"))
                .fetch_all(&admin)
                .await?;
        // The checkpoints (1), the stores (2), audit evidence (3) and whatever came later: every
        // schema is applied by any opener, each once.
        assert!(versions.starts_with(&[1, 2, 3]), "versions {versions:?}");
        // Strictly increasing; numbers are assigned per branch, so one may be missing until merged.
        assert!(versions.windows(2).all(|w| w[1] > w[0]), "versions {versions:?}");
        sqlx::query(&format!("INSERT INTO {schema}.schema_migrations (version, name) VALUES (999, 'future')"))
            .execute(&admin)
            .await?;
        let refused = PostgresCheckpointer::open(&scoped).await.err().context("a newer schema must be refused")?;
        ensure!(refused.to_string().contains("newer"), "unexpected error: {refused}");
        anyhow::Ok(())
    }
    .await;
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await?;
    result
}

#[tokio::test]
async fn unknown_checkpointer_urls_are_refused_with_the_accepted_forms() {
    let Err(StoreError::Unavailable(message)) = open_checkpointer("mysql://db/bridle", Strictness::Normal).await else {
        panic!("a mysql URL must be refused");
    };
    for form in ["`memory`", "`sqlite://PATH`", "`sqlite::memory:`", "`postgres://"] {
        assert!(message.contains(form), "{message} lacks {form}");
    }
}
