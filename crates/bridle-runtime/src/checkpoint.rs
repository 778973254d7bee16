//! Checkpointers: where graph runs keep their checkpoints, in memory, on SQLite or on
//! PostgreSQL (the [`bridle_core::ports::Checkpointer`] port), and how hard each write is made
//! durable.

pub mod memory;
pub mod postgres;
pub mod sqlite;

use std::sync::Arc;

use bridle_core::checkpoint::{Checkpoint, RunEventRow, TaskWrites, ThreadStatus, ThreadSummary};
use bridle_core::ports::{Checkpointer, StoreError, StoreResult};
use serde::Serialize;

pub use memory::MemoryCheckpointer;
pub use postgres::PostgresCheckpointer;
pub use sqlite::SqliteCheckpointer;

pub use bridle_core::checkpoint::Strictness;

/// Opens the checkpointer a URL names: `memory`, `sqlite://PATH` / `sqlite::memory:`, or
/// `postgres://…` / `postgresql://…`. `strictness` applies to SQLite (PostgreSQL commits are
/// always durable as the server is configured).
pub async fn open_checkpointer(url: &str, strictness: Strictness) -> Result<Arc<dyn Checkpointer>, StoreError> {
    if url == "memory" {
        return Ok(Arc::new(MemoryCheckpointer::new()));
    }
    if url.starts_with("sqlite:") {
        return Ok(Arc::new(SqliteCheckpointer::open(url, strictness).await?));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Arc::new(PostgresCheckpointer::open(url).await?));
    }
    Err(StoreError::Unavailable(format!(
        "unsupported checkpointer URL `{url}` (use `memory`, `sqlite://PATH`, `sqlite::memory:` or \
         `postgres://USER@HOST/DB`)"
    )))
}

// ---- helpers shared by the database checkpointers ----

/// A step or retention count for a BIGINT/INTEGER column; values above `i64::MAX` are refused.
fn to_i64(what: &str, v: u64) -> StoreResult<i64> {
    i64::try_from(v).map_err(|_| StoreError::Unavailable(format!("{what} {v} exceeds the largest storable integer")))
}

/// A stored step back to a step.
fn to_step(v: i64) -> StoreResult<u64> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("checkpoint step is negative ({v})")))
}

/// The JSON text stored in a `body` column.
fn encode<T: Serialize>(what: &str, value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Unavailable(format!("cannot encode {what}: {e}")))
}

/// A checkpoint back from its row; a body that does not parse or names another thread or step
/// than its key columns is corrupt.
fn decode_checkpoint(thread_id: &str, step: i64, body: &str) -> StoreResult<Checkpoint> {
    let checkpoint: Checkpoint = serde_json::from_str(body)
        .map_err(|e| StoreError::Corrupt(format!("checkpoint `{thread_id}` step {step}: {e}")))?;
    if checkpoint.thread_id != thread_id || Some(checkpoint.step) != u64::try_from(step).ok() {
        return Err(StoreError::Corrupt(format!(
            "checkpoint stored as `{thread_id}` step {step} says `{}` step {}",
            checkpoint.thread_id, checkpoint.step
        )));
    }
    Ok(checkpoint)
}

/// Task writes back from their row.
fn decode_writes(thread_id: &str, step: u64, task_id: &str, body: &str) -> StoreResult<TaskWrites> {
    let writes: TaskWrites = serde_json::from_str(body)
        .map_err(|e| StoreError::Corrupt(format!("writes of task `{task_id}` of `{thread_id}` step {step}: {e}")))?;
    if writes.task_id != task_id {
        return Err(StoreError::Corrupt(format!(
            "writes stored for task `{task_id}` of `{thread_id}` step {step} say task `{}`",
            writes.task_id
        )));
    }
    Ok(writes)
}

/// A run event back from its row.
fn decode_event(thread_id: &str, seq: i64, at_ms: i64, body: &str) -> StoreResult<RunEventRow> {
    let body = serde_json::from_str(body)
        .map_err(|e| StoreError::Corrupt(format!("run event {seq} of `{thread_id}`: {e}")))?;
    let seq = u64::try_from(seq).map_err(|_| StoreError::Corrupt(format!("run event seq is negative ({seq})")))?;
    Ok(RunEventRow { seq, at_ms, body })
}

/// The first and newest of a run's span rows (one row when they are the same event).
fn span_of(thread_id: &str, rows: Vec<(i64, i64, String)>) -> StoreResult<Option<(RunEventRow, RunEventRow)>> {
    let mut rows = rows.into_iter().map(|(seq, at, body)| decode_event(thread_id, seq, at, &body));
    let Some(first) = rows.next().transpose()? else { return Ok(None) };
    let last = rows.next_back().transpose()?.unwrap_or_else(|| first.clone());
    Ok(Some((first, last)))
}

/// A listed thread back from its row (`status` as stored in its column).
fn summary(thread_id: String, step: i64, graph: String, status: &str) -> StoreResult<ThreadSummary> {
    let status: ThreadStatus = serde_json::from_value(serde_json::Value::String(status.to_owned()))
        .map_err(|_| StoreError::Corrupt(format!("checkpoint `{thread_id}` has the unknown status `{status}`")))?;
    Ok(ThreadSummary { thread_id, graph, status, step: to_step(step)? })
}

/// The least string above every string that starts with `prefix` (in code point order, which is
/// UTF-8 byte order), so `prefix <= id < end` is "starts with `prefix`" as an index range; `None`
/// when there is none (an empty prefix, or one of `char::MAX` only).
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = u32::from(last) + 1;
        while let Some(n) = (next <= u32::from(char::MAX)).then_some(next) {
            if let Some(c) = char::from_u32(n) {
                chars.push(c);
                return Some(chars.into_iter().collect());
            }
            next = n + 1; // a surrogate
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_bounds_exactly_the_strings_with_the_prefix() {
        assert_eq!(prefix_end("tenant-a/").as_deref(), Some("tenant-a0"));
        assert_eq!(prefix_end("").as_deref(), None);
        assert_eq!(prefix_end("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
        let end = prefix_end("t/").unwrap_or_default();
        for inside in ["t/", "t/\u{10FFFF}\u{10FFFF}", "t/zz"] {
            assert!(inside >= "t/" && inside < end.as_str(), "{inside}");
        }
        assert!("t0" >= end.as_str());
    }
}
