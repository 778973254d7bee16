//! The SQLite checkpointer: checkpoints and task writes in the store's database file (or a
//! throwaway in-memory database), through one connection of its own.
//!
//! Shares the file and the migration history with [`crate::store::SqliteStore`] (schema 2,
//! `migrations/sqlite/0002_checkpoints.sql`, applied through the store's migration runner);
//! it must not hold any rule of its own: semantics are those of [`super::MemoryCheckpointer`],
//! which the contract suite checks both against.
//!
//! Speed: a run stores one checkpoint per super-step, so `put` is ONE statement (an upsert;
//! retention runs inside it, in the `checkpoints_retain_*` triggers, which read the `keep`
//! stored with the row). Under `synchronous=NORMAL` a WAL commit does not wait for the disk and
//! costs ~15–20 µs of CPU, less than handing the statement to a driver thread and back (sqlx's
//! model: 17–45 µs measured here), so this checkpointer uses `rusqlite` and runs such a
//! statement in the calling task — when the connection is free and SQLite's write lock can be
//! taken at once. Anything that could wait (the connection busy, the lock held by another
//! writer, `synchronous=FULL`'s fsync) goes to the blocking pool instead, where it may wait up
//! to the busy timeout. Both paths use the same connection behind a mutex.

use std::sync::{Arc, Mutex, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bridle_core::checkpoint::{Checkpoint, RunEventRow, TaskWrites, ThreadQuery, ThreadStatus, ThreadSummary};
use bridle_core::ports::{Checkpointer, StoreError, StoreResult};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use serde_json::Value;
use time::OffsetDateTime;

use super::{
    Strictness, decode_checkpoint, decode_event, decode_writes, encode, prefix_end, span_of, summary, to_i64, to_step,
};

/// How long a write waits on SQLite's lock held by another writer (the store's connection,
/// another process) before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between attempts while another writer holds the lock.
const BUSY_PAUSE: Duration = Duration::from_millis(1);

/// Stores a checkpoint, replacing the same step's; the triggers apply retention.
const PUT: &str = "INSERT INTO checkpoints (thread_id, step, graph, status, keep, body, created_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
     ON CONFLICT (thread_id, step) DO UPDATE SET graph = excluded.graph, status = excluded.status,
         keep = excluded.keep, body = excluded.body, created_at = excluded.created_at";

/// Stores a task's writes at the end of the step's order, replacing (and moving) the task's.
const PUT_WRITES: &str = "INSERT INTO checkpoint_writes (thread_id, step, task_id, seq, body)
     VALUES (?1, ?2, ?3,
         (SELECT COALESCE(MAX(seq), 0) + 1 FROM checkpoint_writes WHERE thread_id = ?1 AND step = ?2), ?4)
     ON CONFLICT (thread_id, step, task_id) DO UPDATE SET seq = excluded.seq, body = excluded.body";

/// Checkpoints over SQLite.
#[derive(Debug, Clone)]
pub struct SqliteCheckpointer {
    conn: Arc<Mutex<Option<Connection>>>,
    /// Whether commits fsync (then every statement goes to the blocking pool).
    strict: bool,
}

impl SqliteCheckpointer {
    /// Opens (creating if missing) the database a `sqlite://PATH` or `sqlite::memory:` URL
    /// names and brings its schema up to date. `Strict` makes every commit fsync
    /// (`synchronous=FULL`); `Normal` survives a process crash (WAL, `synchronous=NORMAL`).
    pub async fn open(url: &str, strictness: Strictness) -> Result<Self, StoreError> {
        // The schema is the store's, opened and migrated as the store opens it; checkpoints keep
        // their own strictness, not the URL's `synchronous=`.
        let conn = crate::store::sqlite::open_migrated(url)?;
        let synchronous = match strictness {
            Strictness::Normal => "NORMAL",
            Strictness::Strict => "FULL",
        };
        conn.pragma_update(None, "synchronous", synchronous).map_err(|e| unavailable(url, &e))?;
        // The in-task path must never wait: a held lock is reported at once and retried on the
        // blocking pool.
        conn.busy_timeout(Duration::ZERO).map_err(|e| unavailable(url, &e))?;
        Ok(Self { conn: Arc::new(Mutex::new(Some(conn))), strict: strictness == Strictness::Strict })
    }

    /// Closes the connection; later calls fail with `Unavailable`.
    pub async fn close(&self) {
        let conn = self.conn.clone();
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(c) = conn.lock().unwrap_or_else(PoisonError::into_inner).take() {
                let _ = c.close();
            }
        })
        .await;
    }

    /// Runs `f` on the connection: in the calling task when that cannot wait, else on the
    /// blocking pool, retrying while another writer holds SQLite's lock.
    async fn with<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Fn(&Connection) -> rusqlite::Result<T> + Send + Sync + 'static,
    {
        if !self.strict {
            match self.conn.try_lock() {
                Ok(guard) => match run_once(guard.as_ref(), &f) {
                    Err(Attempt::Busy) => {}
                    other => return other.map_err(Attempt::into_store),
                },
                Err(TryLockError::Poisoned(_)) => {
                    return Err(StoreError::Unavailable("checkpointer lock poisoned".into()));
                }
                Err(TryLockError::WouldBlock) => {}
            }
        }
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            loop {
                let guard = conn.lock().map_err(|_| StoreError::Unavailable("checkpointer lock poisoned".into()))?;
                match run_once(guard.as_ref(), &f) {
                    Err(Attempt::Busy) if started.elapsed() < BUSY_TIMEOUT => {
                        drop(guard);
                        std::thread::sleep(BUSY_PAUSE);
                    }
                    other => return other.map_err(Attempt::into_store),
                }
            }
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("checkpoint write stopped: {e}")))?
    }
}

/// One attempt's failure.
enum Attempt {
    /// Another writer holds the lock.
    Busy,
    Failed(StoreError),
}

impl Attempt {
    fn into_store(self) -> StoreError {
        match self {
            Self::Busy => StoreError::Unavailable(format!("database still locked after {} s", BUSY_TIMEOUT.as_secs())),
            Self::Failed(e) => e,
        }
    }
}

fn run_once<T>(conn: Option<&Connection>, f: &impl Fn(&Connection) -> rusqlite::Result<T>) -> Result<T, Attempt> {
    let conn = conn.ok_or_else(|| Attempt::Failed(StoreError::Unavailable("the checkpointer is closed".into())))?;
    f(conn).map_err(|e| match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Attempt::Busy,
        _ => Attempt::Failed(sql_err(&e)),
    })
}

fn sql_err(e: &rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::FromSqlConversionFailure(..) | rusqlite::Error::InvalidColumnType(..) => {
            StoreError::Corrupt(e.to_string())
        }
        other => StoreError::Unavailable(other.to_string()),
    }
}

fn unavailable(url: &str, e: &rusqlite::Error) -> StoreError {
    StoreError::Unavailable(format!("cannot open `{url}`: {e}"))
}

#[async_trait]
impl Checkpointer for SqliteCheckpointer {
    async fn put(&self, checkpoint: &Checkpoint, keep: u32) -> StoreResult<()> {
        let now = i64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos()).unwrap_or(i64::MAX);
        let row = (
            checkpoint.thread_id.clone(),
            to_i64("checkpoint step", checkpoint.step)?,
            checkpoint.graph.clone(),
            checkpoint.status.as_str(),
            i64::from(keep.max(1)),
            encode("checkpoint", checkpoint)?,
            now,
        );
        self.with(move |c| {
            let (thread, step, graph, status, keep, body, now) = &row;
            c.prepare_cached(PUT)?.execute(params![thread, step, graph, status, keep, body, now]).map(drop)
        })
        .await
    }

    async fn put_writes(&self, thread_id: &str, step: u64, writes: &TaskWrites) -> StoreResult<()> {
        let row = (
            thread_id.to_owned(),
            to_i64("checkpoint step", step)?,
            writes.task_id.clone(),
            encode("task writes", writes)?,
        );
        self.with(move |c| {
            let (thread, step, task, body) = &row;
            c.prepare_cached(PUT_WRITES)?.execute(params![thread, step, task, body]).map(drop)
        })
        .await
    }

    async fn latest(&self, thread_id: &str) -> StoreResult<Option<Checkpoint>> {
        let thread = thread_id.to_owned();
        let row = self
            .with(move |c| {
                c.prepare_cached("SELECT step, body FROM checkpoints WHERE thread_id = ?1 ORDER BY step DESC LIMIT 1")?
                    .query_row(params![thread], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
                    .optional()
            })
            .await?;
        row.map(|(step, body)| decode_checkpoint(thread_id, step, &body)).transpose()
    }

    async fn writes(&self, thread_id: &str, step: u64) -> StoreResult<Vec<TaskWrites>> {
        let (thread, at) = (thread_id.to_owned(), to_i64("checkpoint step", step)?);
        let rows = self
            .with(move |c| {
                c.prepare_cached(
                    "SELECT task_id, body FROM checkpoint_writes WHERE thread_id = ?1 AND step = ?2 ORDER BY seq",
                )?
                .query_map(params![thread, at], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
            })
            .await?;
        rows.iter().map(|(task, body)| decode_writes(thread_id, step, task, body)).collect()
    }

    async fn steps(&self, thread_id: &str) -> StoreResult<Vec<u64>> {
        let thread = thread_id.to_owned();
        let steps = self
            .with(move |c| {
                c.prepare_cached("SELECT step FROM checkpoints WHERE thread_id = ?1 ORDER BY step")?
                    .query_map(params![thread], |r| r.get::<_, i64>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .await?;
        steps.into_iter().map(to_step).collect()
    }

    async fn delete_thread(&self, thread_id: &str) -> StoreResult<()> {
        let thread = thread_id.to_owned();
        self.with(move |c| {
            let tx = c.unchecked_transaction()?;
            tx.execute("DELETE FROM checkpoints WHERE thread_id = ?1", params![thread])?;
            tx.execute("DELETE FROM checkpoint_writes WHERE thread_id = ?1", params![thread])?;
            tx.execute("DELETE FROM run_events WHERE thread_id = ?1", params![thread])?;
            tx.commit()
        })
        .await
    }

    async fn threads(&self, query: &ThreadQuery) -> StoreResult<Vec<ThreadSummary>> {
        // Below the previous page's last id, else below every id with the prefix.
        let below = match (&query.before, prefix_end(&query.prefix)) {
            (Some(before), Some(end)) => Some(before.clone().min(end)),
            (before, end) => before.clone().or(end),
        };
        let args = (query.prefix.clone(), below, query.status.map(ThreadStatus::as_str), i64::from(query.limit));
        let rows = self
            .with(move |c| {
                let (prefix, before, status, limit) = &args;
                c.prepare_cached(THREADS)?
                    .query_map(params![prefix, before, status, limit], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, i64>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, String>(3)?,
                        ))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .await?;
        rows.into_iter().map(|(thread_id, step, graph, status)| summary(thread_id, step, graph, &status)).collect()
    }

    async fn append_run_event(&self, thread_id: &str, at_ms: i64, body: &Value, keep: u32) -> StoreResult<()> {
        let row = (thread_id.to_owned(), at_ms, encode("run event", body)?, i64::from(keep.max(2)));
        self.with(move |c| {
            let (thread, at, body, keep) = &row;
            let tx = c.unchecked_transaction()?;
            let seq: i64 = tx.prepare_cached(APPEND_EVENT)?.query_row(params![thread, at, body], |r| r.get(0))?;
            tx.prepare_cached(TRIM_EVENTS)?.execute(params![thread, seq + 2 - keep])?;
            tx.commit()
        })
        .await
    }

    async fn run_events(&self, thread_id: &str) -> StoreResult<Vec<RunEventRow>> {
        let thread = thread_id.to_owned();
        let rows = self
            .with(move |c| {
                c.prepare_cached("SELECT seq, at_ms, body FROM run_events WHERE thread_id = ?1 ORDER BY seq")?
                    .query_map(params![thread], |r| {
                        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .await?;
        rows.into_iter().map(|(seq, at, body)| decode_event(thread_id, seq, at, &body)).collect()
    }

    async fn run_event_span(&self, thread_id: &str) -> StoreResult<Option<(RunEventRow, RunEventRow)>> {
        let thread = thread_id.to_owned();
        let rows = self
            .with(move |c| {
                c.prepare_cached(SPAN)?
                    .query_map(params![thread], |r| {
                        Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()
            })
            .await?;
        span_of(thread_id, rows)
    }

    async fn prune_run_events(&self, before_ms: i64) -> StoreResult<u64> {
        let gone = self.with(move |c| c.prepare_cached(PRUNE_EVENTS)?.execute(params![before_ms])).await?;
        Ok(gone as u64)
    }
}

/// Appends a run's next event, numbered after its last.
const APPEND_EVENT: &str = "INSERT INTO run_events (thread_id, seq, at_ms, body)
     VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM run_events WHERE thread_id = ?1), ?2, ?3) RETURNING seq";
/// Drops a run's events between its first and ?2 (the oldest kept).
const TRIM_EVENTS: &str = "DELETE FROM run_events WHERE thread_id = ?1 AND seq > 1 AND seq < ?2";
/// A run's first and newest events (one row when they are the same).
const SPAN: &str = "SELECT seq, at_ms, body FROM run_events WHERE thread_id = ?1
       AND (seq = (SELECT MIN(seq) FROM run_events WHERE thread_id = ?1)
         OR seq = (SELECT MAX(seq) FROM run_events WHERE thread_id = ?1))
     ORDER BY seq";
/// Drops the history of every run whose newest event is older than ?1.
const PRUNE_EVENTS: &str = "DELETE FROM run_events WHERE thread_id IN
     (SELECT thread_id FROM run_events GROUP BY thread_id HAVING MAX(at_ms) < ?1)";

/// The newest checkpoint of each thread whose id is in [?1, ?2) (?1 the prefix, ?2 the end of the
/// prefix's range or the previous page's last id; no bound when null), with status ?3 when
/// given; thread ids descending (text compares as bytes here), at most ?4.
const THREADS: &str = "SELECT c.thread_id, c.step, c.graph, c.status FROM checkpoints c
     WHERE c.thread_id >= ?1 AND (?2 IS NULL OR c.thread_id < ?2)
       AND c.step = (SELECT MAX(m.step) FROM checkpoints m WHERE m.thread_id = c.thread_id)
       AND (?3 IS NULL OR c.status = ?3)
     ORDER BY c.thread_id DESC LIMIT ?4";
