//! Checkpoint I/O of a run: loading and restoring a stored thread, task writes, snapshots,
//! and writing checkpoints as the run's durability says.

use bridle_core::checkpoint::{Checkpoint, InterruptRecord, TaskWrites, ThreadStatus};
use bridle_core::{Code, Rejection};
use serde_json::{Value, json};

use super::{Runner, Task, node_name, store_error};
use crate::graph::builder::Compiled;
use crate::graph::hooks::EventSink;
use crate::graph::state::State;
use crate::graph::{Durability, RunConfig};

impl<'a> Runner<'a> {
    /// The thread's newest checkpoint (`None` when the thread has none), refused when another
    /// graph wrote it.
    pub(super) async fn load(
        graph: &Compiled,
        config: &RunConfig,
        what: &str,
    ) -> Result<Option<Checkpoint>, Rejection> {
        let Some(store) = config.checkpointer.as_ref() else {
            return Err(Rejection::new(Code::StaleCheckpoint, format!("cannot {what} without a checkpointer")));
        };
        let Some(cp) = store.latest(&config.thread_id).await.map_err(store_error)? else { return Ok(None) };
        if cp.graph != graph.id {
            return Err(Rejection::new(
                Code::StaleCheckpoint,
                format!("thread `{}` was written by graph `{}`, not `{}`", config.thread_id, cp.graph, graph.id),
            ));
        }
        Ok(Some(cp))
    }

    /// A runner positioned at a stored checkpoint.
    pub(super) fn restore(
        graph: &'a Compiled,
        config: &'a RunConfig,
        sink: &'a EventSink,
        cp: Checkpoint,
    ) -> Result<Self, Rejection> {
        let state = match cp.state {
            Value::Object(map) => State::from_map(map),
            _ => return Err(Rejection::new(Code::StaleCheckpoint, "the checkpoint's state is not an object")),
        };
        let mut runner = Self::new(graph, config, sink, state);
        runner.step = cp.step;
        runner.resumes = cp.resumes;
        for (name, count) in cp.visits {
            if let Some(slot) = graph.index.get(&name).and_then(|i| runner.visits.get_mut(*i)) {
                *slot = count;
            }
        }
        for (key, sources) in cp.barriers {
            let Some(j) = key.rsplit_once('#').and_then(|(_, j)| j.parse::<usize>().ok()) else { continue };
            if let Some(slot) = runner.barriers.get_mut(j) {
                *slot = sources.iter().filter_map(|s| graph.index.get(s).copied()).collect();
            }
        }
        for spec in cp.tasks {
            let node = graph.index.get(&spec.node).copied().ok_or_else(|| {
                Rejection::new(
                    Code::StaleCheckpoint,
                    format!("the checkpoint names node `{}`, unknown here", spec.node),
                )
            })?;
            runner.tasks.push(Task { spec, node, triggers: Vec::new() });
        }
        Ok(runner)
    }

    /// Loads the writes stored for the current step (after a resume or a crash).
    pub(super) async fn load_stored(&mut self) -> Result<(), Rejection> {
        if let Some(store) = self.config.checkpointer.as_ref() {
            for w in store.writes(&self.config.thread_id, self.step).await.map_err(store_error)? {
                self.stored.insert(w.task_id, w.update);
            }
        }
        Ok(())
    }

    /// Stores one finished task's writes under the current step.
    pub(super) async fn store_writes(&self, task: &Task, update: &Value) -> Result<(), Rejection> {
        let Some(store) = self.config.checkpointer.as_ref() else { return Ok(()) };
        let writes = TaskWrites { task_id: task.spec.id.clone(), node: task.spec.node.clone(), update: update.clone() };
        store.put_writes(&self.config.thread_id, self.step, &writes).await.map_err(store_error)
    }

    /// The checkpoint of the run as it stands.
    pub(super) fn snapshot(
        &self,
        status: ThreadStatus,
        error: Option<&Rejection>,
        interrupts: Vec<InterruptRecord>,
    ) -> Checkpoint {
        let graph = self.graph;
        Checkpoint {
            thread_id: self.config.thread_id.clone(),
            step: self.step,
            graph: graph.id.clone(),
            status,
            state: self.state.to_value(),
            tasks: self.tasks.iter().map(|t| t.spec.clone()).collect(),
            visits: graph
                .nodes
                .iter()
                .zip(&self.visits)
                .filter(|(_, v)| **v > 0)
                .map(|(e, v)| (e.name.to_string(), *v))
                .collect(),
            barriers: graph
                .joins
                .iter()
                .zip(&self.barriers)
                .enumerate()
                .filter(|(_, (_, seen))| !seen.is_empty())
                .map(|(j, (join, seen))| {
                    (
                        format!("{}#{j}", node_name(graph, join.target)),
                        seen.iter().map(|s| node_name(graph, *s)).collect(),
                    )
                })
                .collect(),
            interrupts,
            resumes: self.resumes.clone(),
            error: error.map(|e| json!({ "code": e.code, "message": &e.message })),
        }
    }

    /// Writes the checkpoint after a step as the durability says.
    pub(super) async fn checkpoint(
        &mut self,
        status: ThreadStatus,
        error: Option<&Rejection>,
        interrupts: Vec<InterruptRecord>,
    ) -> Result<(), Rejection> {
        let Some(store) = self.config.checkpointer.clone() else { return Ok(()) };
        match self.config.durability {
            Durability::Sync => self.put_now(status, error, interrupts).await,
            Durability::Exit => Ok(()),
            Durability::Async => {
                self.await_pending().await?;
                let cp = self.snapshot(status, error, interrupts);
                let keep = self.config.keep;
                self.pending_put =
                    Some(tokio::spawn(async move { store.put(&cp, keep).await.map_err(|e| e.to_string()) }));
                Ok(())
            }
        }
    }

    /// Writes a checkpoint now, after any pending one.
    pub(super) async fn put_now(
        &mut self,
        status: ThreadStatus,
        error: Option<&Rejection>,
        interrupts: Vec<InterruptRecord>,
    ) -> Result<(), Rejection> {
        self.await_pending().await?;
        let Some(store) = self.config.checkpointer.as_ref() else { return Ok(()) };
        store.put(&self.snapshot(status, error, interrupts), self.config.keep).await.map_err(store_error)
    }

    /// Waits for an `async` checkpoint write still under way.
    pub(super) async fn await_pending(&mut self) -> Result<(), Rejection> {
        match self.pending_put.take() {
            Some(handle) => match handle.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(Rejection::new(Code::NodeFailed, format!("checkpoint store: {e}"))),
                Err(e) => Err(Rejection::new(Code::NodeFailed, format!("checkpoint write stopped: {e}"))),
            },
            None => Ok(()),
        }
    }
}
