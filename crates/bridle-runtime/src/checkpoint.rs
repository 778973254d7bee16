//! Checkpointers: where graph runs keep their checkpoints, in memory, on SQLite or on
//! PostgreSQL (the [`bridle_core::ports::Checkpointer`] port), and how hard each write is made
//! durable.

pub mod memory;
pub mod postgres;
pub mod sqlite;

use std::sync::Arc;

use bridle_core::checkpoint::{Checkpoint, TaskWrites};
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
