//! The PostgreSQL checkpointer: checkpoints and task writes in a shared database, so any
//! replica can resume a thread another one paused.
//!
//! Schema: `migrations/postgres/0001_checkpoints.sql`, applied by
//! [`crate::store::postgres::connect`]. It must not hold any rule of its own: semantics are
//! those of [`super::MemoryCheckpointer`], which the contract suite checks both against.
//! `put` is one statement: the upsert and both retention deletes run as data-modifying CTEs.

use async_trait::async_trait;
use bridle_core::checkpoint::{Checkpoint, RunEventRow, TaskWrites, ThreadQuery, ThreadStatus, ThreadSummary};
use bridle_core::ports::{Checkpointer, StoreError, StoreResult};
use sqlx::PgPool;

use super::{decode_checkpoint, decode_event, decode_writes, encode, prefix_end, span_of, summary, to_i64, to_step};
use crate::store::postgres::{connect, db_err};
use serde_json::Value;

/// Stores a checkpoint (replacing the same step's), then keeps only the thread's checkpoints
/// newer than `step - keep` and its task writes of `step` and later. The deletes never touch
/// the new row (`keep` is at least 1), so they need not see it.
const PUT: &str = "WITH stored AS (
        INSERT INTO checkpoints (thread_id, step, graph, status, body) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (thread_id, step) DO UPDATE SET graph = EXCLUDED.graph, status = EXCLUDED.status,
            body = EXCLUDED.body, created_at = now()
    ), old_checkpoints AS (
        DELETE FROM checkpoints WHERE thread_id = $1 AND step <= $2 - $6
    ), old_writes AS (
        DELETE FROM checkpoint_writes WHERE thread_id = $1 AND step < $2
    )
    SELECT 1";

/// Stores a task's writes with a fresh sequence value, replacing (and moving) the task's.
const PUT_WRITES: &str = "INSERT INTO checkpoint_writes (thread_id, step, task_id, body) VALUES ($1, $2, $3, $4)
     ON CONFLICT (thread_id, step, task_id) DO UPDATE SET seq = EXCLUDED.seq, body = EXCLUDED.body";

/// Checkpoints over PostgreSQL.
#[derive(Debug, Clone)]
pub struct PostgresCheckpointer {
    pool: PgPool,
}

impl PostgresCheckpointer {
    /// Connects to the database a `postgres://…` URL names and brings its schema up to date.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Ok(Self { pool: connect(url).await? })
    }

    /// Closes every connection; later calls fail with `Unavailable`.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[async_trait]
impl Checkpointer for PostgresCheckpointer {
    async fn put(&self, checkpoint: &Checkpoint, keep: u32) -> StoreResult<()> {
        sqlx::query(PUT)
            .bind(&checkpoint.thread_id)
            .bind(to_i64("checkpoint step", checkpoint.step)?)
            .bind(&checkpoint.graph)
            .bind(checkpoint.status.as_str())
            .bind(encode("checkpoint", checkpoint)?)
            .bind(i64::from(keep.max(1)))
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn put_writes(&self, thread_id: &str, step: u64, writes: &TaskWrites) -> StoreResult<()> {
        sqlx::query(PUT_WRITES)
            .bind(thread_id)
            .bind(to_i64("checkpoint step", step)?)
            .bind(&writes.task_id)
            .bind(encode("task writes", writes)?)
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn latest(&self, thread_id: &str) -> StoreResult<Option<Checkpoint>> {
        let row: Option<(i64, String)> =
            sqlx::query_as("SELECT step, body FROM checkpoints WHERE thread_id = $1 ORDER BY step DESC LIMIT 1")
                .bind(thread_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
        row.map(|(step, body)| decode_checkpoint(thread_id, step, &body)).transpose()
    }

    async fn writes(&self, thread_id: &str, step: u64) -> StoreResult<Vec<TaskWrites>> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT task_id, body FROM checkpoint_writes WHERE thread_id = $1 AND step = $2 ORDER BY seq",
        )
        .bind(thread_id)
        .bind(to_i64("checkpoint step", step)?)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(|(task, body)| decode_writes(thread_id, step, task, body)).collect()
    }

    async fn steps(&self, thread_id: &str) -> StoreResult<Vec<u64>> {
        let steps: Vec<i64> = sqlx::query_scalar("SELECT step FROM checkpoints WHERE thread_id = $1 ORDER BY step")
            .bind(thread_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        steps.into_iter().map(to_step).collect()
    }

    async fn delete_thread(&self, thread_id: &str) -> StoreResult<()> {
        sqlx::query(
            "WITH c AS (DELETE FROM checkpoints WHERE thread_id = $1),
                  e AS (DELETE FROM run_events WHERE thread_id = $1)
             DELETE FROM checkpoint_writes WHERE thread_id = $1",
        )
        .bind(thread_id)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn threads(&self, query: &ThreadQuery) -> StoreResult<Vec<ThreadSummary>> {
        // Below the previous page's last id, else below every id with the prefix.
        let below = match (&query.before, prefix_end(&query.prefix)) {
            (Some(before), Some(end)) => Some(before.clone().min(end)),
            (before, end) => before.clone().or(end),
        };
        let rows: Vec<(String, i64, String, String)> = sqlx::query_as(THREADS)
            .bind(&query.prefix)
            .bind(below)
            .bind(query.status.map(ThreadStatus::as_str))
            .bind(i64::from(query.limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.into_iter().map(|(thread_id, step, graph, status)| summary(thread_id, step, graph, &status)).collect()
    }

    async fn append_run_event(&self, thread_id: &str, at_ms: i64, body: &Value, keep: u32) -> StoreResult<()> {
        sqlx::query(APPEND_EVENT)
            .bind(thread_id)
            .bind(at_ms)
            .bind(encode("run event", body)?)
            .bind(i64::from(keep.max(2)))
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    async fn run_events(&self, thread_id: &str) -> StoreResult<Vec<RunEventRow>> {
        let rows: Vec<(i64, i64, String)> =
            sqlx::query_as("SELECT seq, at_ms, body FROM run_events WHERE thread_id = $1 ORDER BY seq")
                .bind(thread_id)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
        rows.into_iter().map(|(seq, at, body)| decode_event(thread_id, seq, at, &body)).collect()
    }

    async fn run_event_span(&self, thread_id: &str) -> StoreResult<Option<(RunEventRow, RunEventRow)>> {
        let rows: Vec<(i64, i64, String)> =
            sqlx::query_as(SPAN).bind(thread_id).fetch_all(&self.pool).await.map_err(db_err)?;
        span_of(thread_id, rows)
    }

    async fn prune_run_events(&self, before_ms: i64) -> StoreResult<u64> {
        let done = sqlx::query(PRUNE_EVENTS).bind(before_ms).execute(&self.pool).await.map_err(db_err)?;
        Ok(done.rows_affected())
    }
}

/// Appends a run's next event, numbered after its last, then drops its events between its
/// first and the newest `$4 - 1` (the delete never touches the new row).
const APPEND_EVENT: &str = "WITH next AS (
        SELECT COALESCE(MAX(seq), 0) + 1 AS seq FROM run_events WHERE thread_id = $1
    ), stored AS (
        INSERT INTO run_events (thread_id, seq, at_ms, body) SELECT $1, next.seq, $2, $3 FROM next RETURNING seq
    )
    DELETE FROM run_events WHERE thread_id = $1 AND seq > 1 AND seq < (SELECT seq FROM stored) + 2 - $4";
/// A run's first and newest events (one row when they are the same).
const SPAN: &str = "SELECT seq, at_ms, body FROM run_events WHERE thread_id = $1
       AND (seq = (SELECT MIN(seq) FROM run_events WHERE thread_id = $1)
         OR seq = (SELECT MAX(seq) FROM run_events WHERE thread_id = $1))
     ORDER BY seq";
/// Drops the history of every run whose newest event is older than $1.
const PRUNE_EVENTS: &str = "DELETE FROM run_events WHERE thread_id IN
     (SELECT thread_id FROM run_events GROUP BY thread_id HAVING MAX(at_ms) < $1)";

/// The newest checkpoint of each thread whose id is in [$1, $2) (the prefix, and the end of its
/// range or the previous page's last id; no bound when null), with status $3 when given; thread
/// ids descending, at most $4. Comparisons and order use the "C" collation (bytes), as the other
/// checkpointers do, whatever the database's collation.
const THREADS: &str = "SELECT c.thread_id, c.step, c.graph, c.status FROM checkpoints c
     WHERE c.thread_id COLLATE \"C\" >= $1::text AND ($2::text IS NULL OR c.thread_id COLLATE \"C\" < $2::text)
       AND c.step = (SELECT MAX(m.step) FROM checkpoints m WHERE m.thread_id = c.thread_id)
       AND ($3::text IS NULL OR c.status = $3::text)
     ORDER BY c.thread_id COLLATE \"C\" DESC LIMIT $4";
