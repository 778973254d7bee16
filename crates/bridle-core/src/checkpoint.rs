//! Checkpoints of graph runs: what is saved between super-steps so a run can pause for a human,
//! survive a crash and resume without repeating work that already happened.
//!
//! A thread (one run of one graph) is a sequence of checkpoints, one per super-step: the state
//! before step `step` and the tasks that step will run. While a step runs, each task that
//! finishes stores its writes ([`TaskWrites`]) under that step, so after a failure, an interrupt
//! or a crash only the tasks without stored writes run again. The port is
//! [`crate::ports::Checkpointer`]; the runtime implements it in memory, on SQLite and on
//! PostgreSQL.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a thread stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// Steps remain; resuming continues with the checkpoint's tasks.
    Running,
    /// Paused for a human; resumed by interrupt id.
    Interrupted,
    /// Finished; the checkpoint holds the final state.
    Done,
    /// Stopped by an error; the checkpoint holds the state before the failing step.
    Failed,
    /// Stopped by cancellation.
    Cancelled,
}

impl ThreadStatus {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Interrupted => "interrupted",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether nothing more will run on this thread.
    pub const fn is_final(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Cancelled)
    }
}

/// One task of a super-step: a node to run, with its own input when it was sent by a fan-out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSpec {
    /// Stable id within the thread: `{step}:{index}`; with the thread id it is the task's
    /// idempotency key.
    pub id: String,
    /// Node name.
    pub node: String,
    /// Per-branch input of a fan-out (`Send`); `None` means the node reads the shared state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
}

/// A pause waiting for a human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterruptRecord {
    /// Stable id: `{thread}/{task}/{n}` for the n-th interrupt a task raised, or
    /// `{thread}/{task}/before` for a pause before the node.
    pub id: String,
    /// The task that raised it.
    pub task_id: String,
    /// Its node.
    pub node: String,
    /// What the human must decide.
    pub payload: Value,
}

/// The writes of one finished task of a step that has not completed yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskWrites {
    /// The task.
    pub task_id: String,
    /// Its node.
    pub node: String,
    /// The update it returned (a JSON object: field → value).
    pub update: Value,
}

/// The state of a thread before one super-step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The thread (run) id.
    pub thread_id: String,
    /// The super-step these tasks belong to (0 for the first).
    pub step: u64,
    /// Which graph wrote it: name and structural hash. Resuming with another graph is refused.
    pub graph: String,
    /// Where the thread stands.
    pub status: ThreadStatus,
    /// The state: a JSON object, field → value.
    pub state: Value,
    /// Tasks of this step, in order.
    pub tasks: Vec<TaskSpec>,
    /// How often each node has run on this thread (loop bounds).
    pub visits: BTreeMap<String, u32>,
    /// Joins waiting for more of their sources: join node → sources that have finished.
    #[serde(default)]
    pub barriers: BTreeMap<String, Vec<String>>,
    /// Pending interrupts (status `interrupted`).
    #[serde(default)]
    pub interrupts: Vec<InterruptRecord>,
    /// Values humans gave, by interrupt id; a node that raises an answered interrupt gets the
    /// value back instead of pausing.
    #[serde(default)]
    pub resumes: BTreeMap<String, Value>,
    /// The error that stopped the thread (status `failed`): `{code, message}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

/// Which threads [`crate::ports::Checkpointer::threads`] lists: those whose id starts with
/// `prefix` (a tenant's `{tenant}/`), below `before` when given, whose newest checkpoint has
/// `status` when given; at most `limit`, by thread id descending (byte order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadQuery {
    /// Thread ids start with this.
    pub prefix: String,
    /// Only thread ids strictly less than this one (the last of the previous page).
    pub before: Option<String>,
    /// Only threads whose newest checkpoint has this status.
    pub status: Option<ThreadStatus>,
    /// At most this many.
    pub limit: u32,
}

/// One thread of a listing: the head of its newest checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadSummary {
    /// The thread id.
    pub thread_id: String,
    /// The graph that wrote the newest checkpoint.
    pub graph: String,
    /// Its status.
    pub status: ThreadStatus,
    /// Its step.
    pub step: u64,
}

/// One kept event of a run's history (`Checkpointer::append_run_event`): what happened, as the
/// runtime recorded it (a JSON object with an `event` name and an RFC 3339 `at`), and when, in
/// milliseconds since the Unix epoch (what retention compares).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEventRow {
    /// Order within the run, from 1 (the first event is never dropped by the per-run bound).
    pub seq: u64,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The event.
    pub body: Value,
}

/// When a run writes its checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// After each super-step, before the next starts.
    #[default]
    Sync,
    /// After each super-step, while the next runs (awaited before the following write and at
    /// the end).
    Async,
    /// Only when the run stops (done, paused, failed).
    Exit,
}

/// How hard a checkpoint write is made durable (SQLite's `synchronous`; PostgreSQL commits are
/// as durable as the server is configured).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strictness {
    /// WAL with `synchronous=NORMAL`: survives a process crash, may lose the last commits on
    /// power loss.
    #[default]
    Normal,
    /// `synchronous=FULL`: every commit is fsynced; survives power loss.
    Strict,
}
