//! The task-graph observer: a progress DAG of a run built only from hook events, so it can be
//! added or removed without changing how the run executes.
//!
//! Each task becomes a vertex (node, step, status, duration); each `triggers` entry of a
//! `node_enter` event becomes an edge from the task that led there.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde::Serialize;

use super::event::Event;
use super::hooks::{HookHandler, names};

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Entered, not finished.
    Running,
    /// Finished.
    Done,
    /// Finished with a degraded update.
    Degraded,
    /// Its last attempt failed.
    Failed,
}

/// A vertex of the progress DAG.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskVertex {
    /// Node name.
    pub node: String,
    /// Super-step.
    pub step: u64,
    /// Status.
    pub status: TaskStatus,
    /// Time spent once finished.
    pub duration_us: Option<u64>,
}

/// The progress DAG of one or more runs, by thread.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Task id → vertex.
    pub tasks: BTreeMap<String, TaskVertex>,
    /// (from task, to task).
    pub edges: Vec<(String, String)>,
}

/// A hook handler that keeps a [`Progress`] per thread.
#[derive(Debug, Default)]
pub struct TaskGraph {
    threads: Mutex<BTreeMap<String, Progress>>,
}

impl TaskGraph {
    /// An empty observer.
    pub fn new() -> Self {
        Self::default()
    }

    /// The DAG of a thread so far.
    pub fn progress(&self, thread_id: &str) -> Progress {
        self.threads.lock().map(|t| t.get(thread_id).cloned().unwrap_or_default()).unwrap_or_default()
    }
}

impl HookHandler for TaskGraph {
    fn name(&self) -> &str {
        "task_graph"
    }

    fn handle(&self, hook: &str, thread_id: &str, event: &Event) -> Result<(), crate::hook::HookError> {
        if hook == names::NODE_BOOTSTRAP {
            return Ok(());
        }
        let mut threads = self.threads.lock().map_err(|_| crate::hook::HookError::Poisoned("task graph"))?;
        let progress = threads.entry(thread_id.to_owned()).or_default();
        match event {
            Event::NodeEnter { step, task_id, node, triggers } => {
                progress.tasks.insert(
                    task_id.clone(),
                    TaskVertex { node: node.clone(), step: *step, status: TaskStatus::Running, duration_us: None },
                );
                progress.edges.extend(triggers.iter().map(|from| (from.clone(), task_id.clone())));
            }
            Event::NodeExit { task_id, duration_us, degraded, .. } => {
                if let Some(v) = progress.tasks.get_mut(task_id) {
                    v.status = if *degraded { TaskStatus::Degraded } else { TaskStatus::Done };
                    v.duration_us = Some(*duration_us);
                }
            }
            Event::NodeError { task_id, retrying: false, .. } => {
                if let Some(v) = progress.tasks.get_mut(task_id) {
                    v.status = TaskStatus::Failed;
                }
            }
            _ => {}
        }
        Ok(())
    }
}
