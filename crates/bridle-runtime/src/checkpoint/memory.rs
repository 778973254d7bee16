//! The in-memory checkpointer: nothing survives the process; for tests, benchmarks and runs
//! that need pauses but no durability.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use async_trait::async_trait;
use bridle_core::checkpoint::{Checkpoint, RunEventRow, TaskWrites, ThreadQuery, ThreadSummary};
use bridle_core::ports::{Checkpointer, StoreError, StoreResult};
use serde_json::Value;

/// One thread's checkpoints by step and task writes by step.
#[derive(Debug, Default)]
struct Thread {
    checkpoints: BTreeMap<u64, Checkpoint>,
    writes: BTreeMap<u64, Vec<TaskWrites>>,
}

/// One run's kept history and the seq of its last appended event.
#[derive(Debug, Default)]
struct History {
    last_seq: u64,
    events: Vec<RunEventRow>,
}

/// Checkpoints held in a map.
#[derive(Debug, Default)]
pub struct MemoryCheckpointer {
    threads: Mutex<HashMap<String, Thread>>,
    histories: Mutex<HashMap<String, History>>,
}

impl MemoryCheckpointer {
    /// An empty checkpointer.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Thread>) -> T) -> StoreResult<T> {
        let mut threads =
            self.threads.lock().map_err(|_| StoreError::Unavailable("checkpointer lock poisoned".into()))?;
        Ok(f(&mut threads))
    }

    fn with_histories<T>(&self, f: impl FnOnce(&mut HashMap<String, History>) -> T) -> StoreResult<T> {
        let mut histories =
            self.histories.lock().map_err(|_| StoreError::Unavailable("checkpointer lock poisoned".into()))?;
        Ok(f(&mut histories))
    }
}

#[async_trait]
impl Checkpointer for MemoryCheckpointer {
    async fn put(&self, checkpoint: &Checkpoint, keep: u32) -> StoreResult<()> {
        self.with(|threads| {
            let thread = threads.entry(checkpoint.thread_id.clone()).or_default();
            let step = checkpoint.step;
            thread.checkpoints.insert(step, checkpoint.clone());
            let oldest_kept = step.saturating_sub(u64::from(keep.max(1)) - 1);
            thread.checkpoints.retain(|s, _| *s >= oldest_kept);
            thread.writes.retain(|s, _| *s >= step);
        })
    }

    async fn put_writes(&self, thread_id: &str, step: u64, writes: &TaskWrites) -> StoreResult<()> {
        self.with(|threads| {
            let stored = threads.entry(thread_id.to_owned()).or_default().writes.entry(step).or_default();
            stored.retain(|w| w.task_id != writes.task_id);
            stored.push(writes.clone());
        })
    }

    async fn latest(&self, thread_id: &str) -> StoreResult<Option<Checkpoint>> {
        self.with(|threads| threads.get(thread_id).and_then(|t| t.checkpoints.last_key_value()).map(|(_, c)| c.clone()))
    }

    async fn writes(&self, thread_id: &str, step: u64) -> StoreResult<Vec<TaskWrites>> {
        self.with(|threads| threads.get(thread_id).and_then(|t| t.writes.get(&step)).cloned().unwrap_or_default())
    }

    async fn steps(&self, thread_id: &str) -> StoreResult<Vec<u64>> {
        self.with(|threads| threads.get(thread_id).map(|t| t.checkpoints.keys().copied().collect()).unwrap_or_default())
    }

    async fn delete_thread(&self, thread_id: &str) -> StoreResult<()> {
        self.with(|threads| {
            threads.remove(thread_id);
        })?;
        self.with_histories(|histories| {
            histories.remove(thread_id);
        })
    }

    async fn threads(&self, query: &ThreadQuery) -> StoreResult<Vec<ThreadSummary>> {
        self.with(|threads| {
            let mut found: Vec<ThreadSummary> = threads
                .iter()
                .filter(|(id, _)| id.starts_with(&query.prefix))
                .filter(|(id, _)| query.before.as_ref().is_none_or(|b| id.as_str() < b.as_str()))
                .filter_map(|(id, t)| {
                    let (_, c) = t.checkpoints.last_key_value()?;
                    Some(ThreadSummary {
                        thread_id: id.clone(),
                        graph: c.graph.clone(),
                        status: c.status,
                        step: c.step,
                    })
                })
                .filter(|s| query.status.is_none_or(|status| s.status == status))
                .collect();
            found.sort_by(|a, b| b.thread_id.cmp(&a.thread_id));
            found.truncate(usize::try_from(query.limit).unwrap_or(usize::MAX));
            found
        })
    }

    async fn append_run_event(&self, thread_id: &str, at_ms: i64, body: &Value, keep: u32) -> StoreResult<()> {
        self.with_histories(|histories| {
            let history = histories.entry(thread_id.to_owned()).or_default();
            history.last_seq += 1;
            let seq = history.last_seq;
            history.events.push(RunEventRow { seq, at_ms, body: body.clone() });
            // The first event and the newest `keep - 1`.
            let oldest_kept = (seq + 2).saturating_sub(u64::from(keep.max(2)));
            history.events.retain(|e| e.seq == 1 || e.seq >= oldest_kept);
        })
    }

    async fn run_events(&self, thread_id: &str) -> StoreResult<Vec<RunEventRow>> {
        self.with_histories(|histories| histories.get(thread_id).map(|h| h.events.clone()).unwrap_or_default())
    }

    async fn run_event_span(&self, thread_id: &str) -> StoreResult<Option<(RunEventRow, RunEventRow)>> {
        self.with_histories(|histories| {
            let events = &histories.get(thread_id)?.events;
            Some((events.first()?.clone(), events.last()?.clone()))
        })
    }

    async fn prune_run_events(&self, before_ms: i64) -> StoreResult<u64> {
        self.with_histories(|histories| {
            let mut gone = 0;
            histories.retain(|_, h| {
                let old = h.events.last().is_none_or(|e| e.at_ms < before_ms);
                if old {
                    gone += h.events.len() as u64;
                }
                !old
            });
            gone
        })
    }
}
