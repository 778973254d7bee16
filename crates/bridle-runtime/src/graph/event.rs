//! What a run reports while it runs: the stream of [`Event`]s and the final [`RunOutcome`]
//! (the sink that carries them is in `hooks`).

use bridle_core::Rejection;
use bridle_core::checkpoint::{InterruptRecord, ThreadStatus};
use serde::Serialize;
use serde_json::Value;

/// One thing that happened in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The run started or resumed at `step`.
    RunStarted {
        /// Thread id.
        thread_id: String,
        /// First step to run.
        step: u64,
        /// Whether it continues a stored thread.
        resumed: bool,
    },
    /// A node started.
    NodeEnter {
        /// Super-step.
        step: u64,
        /// Task id.
        task_id: String,
        /// Node name.
        node: String,
        /// Tasks of the previous step whose edges led here (empty after a resume).
        triggers: Vec<String>,
    },
    /// A node finished (possibly with a degraded update from its error handler).
    NodeExit {
        /// Super-step.
        step: u64,
        /// Task id.
        task_id: String,
        /// Node name.
        node: String,
        /// Time spent, retries included.
        duration_us: u64,
        /// Whether the update came from the error handler.
        degraded: bool,
    },
    /// An attempt of a node failed.
    NodeError {
        /// Super-step.
        step: u64,
        /// Task id.
        task_id: String,
        /// Node name.
        node: String,
        /// Stable code and message.
        error: Rejection,
        /// Which attempt (1-based).
        attempt: u32,
        /// Whether another attempt follows.
        retrying: bool,
    },
    /// A node's update, as written.
    Update {
        /// Super-step.
        step: u64,
        /// Node name.
        node: String,
        /// Field → value.
        update: Value,
    },
    /// A custom event a node emitted.
    Custom {
        /// Super-step.
        step: u64,
        /// Node name.
        node: String,
        /// Event name.
        name: String,
        /// Its data.
        payload: Value,
    },
    /// The run paused for a human.
    Interrupted {
        /// What is waiting.
        interrupts: Vec<InterruptRecord>,
    },
    /// A super-step finished.
    StepDone {
        /// Super-step.
        step: u64,
        /// Whether a checkpoint was written (or started, under `async` durability).
        checkpointed: bool,
    },
    /// A hook handler failed; the others still ran.
    HookFailed {
        /// Hook event name.
        hook: String,
        /// Handler name.
        handler: String,
        /// What went wrong.
        message: String,
    },
    /// The run stopped: done, interrupted, failed or cancelled. Always the last event.
    Finished {
        /// How it ended.
        outcome: RunOutcome,
    },
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutcome {
    /// Thread id.
    pub thread_id: String,
    /// `done`, `interrupted`, `failed` or `cancelled`.
    pub status: ThreadStatus,
    /// The state at the end (before the failing step for `failed`).
    pub state: Value,
    /// Super-steps completed in this thread.
    pub steps: u64,
    /// Pending interrupts (status `interrupted`).
    pub interrupts: Vec<InterruptRecord>,
    /// Why it stopped (status `failed` or `cancelled`).
    pub error: Option<Rejection>,
}

impl RunOutcome {
    /// `Ok` unless the run failed or was cancelled.
    pub fn into_result(self) -> Result<Self, Rejection> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self),
        }
    }
}
