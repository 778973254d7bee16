//! The state-graph runtime: typed state with reducers, async nodes, static and conditional
//! edges, fan-out and joins, super-steps, streaming events, hooks, checkpoints and human pauses.
//!
//! A run proceeds in super-steps (Pregel style): the tasks of one step run concurrently on a
//! snapshot of the state, their updates are merged in task order through the fields' reducers,
//! then edges choose the next step's tasks. After each step a checkpoint is written (per the
//! run's [`Durability`]); a task that finishes inside a step of several tasks stores its writes
//! at once, so a failure, a pause or a crash re-runs only the tasks that did not finish. Every
//! task gets a stable idempotency key (thread, step, task) for the tools it calls.
//!
//! Files: `state.rs` (schema, reducers, updates), `node.rs` (the node trait, context, errors,
//! retry), `builder.rs` (assembly and whole-graph checks), `exec.rs` (the super-step loop),
//! `event.rs` (the stream), `hooks.rs` (lifecycle handlers), `observer.rs` (the task graph),
//! `tool.rs` (gate calls from nodes, with stable keys and the harness's hook events).

pub mod builder;
pub mod event;
mod exec;
pub mod hooks;
pub mod node;
pub mod observer;
pub mod state;
pub mod tool;

use std::sync::Arc;
use std::time::Duration;

use bridle_core::Rejection;
use bridle_core::ports::Checkpointer;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use builder::{END, GraphBuilder, GraphError, START, Target};
pub use event::{Event, RunOutcome};
pub use hooks::{HookError, HookHandler, Hooks};
pub use node::{Node, NodeContext, NodeError, NodeErrorKind, NodeOptions, RetryPolicy, node_fn};
pub use state::{Kind, ReduceError, Reducer, State, StateSchema, Update};

use crate::cancel::CancelToken;

pub use bridle_core::checkpoint::Durability;

/// How to run a thread.
#[derive(Clone)]
pub struct RunConfig {
    /// The thread (run) id.
    pub thread_id: String,
    /// Where checkpoints go; without one, pauses cannot be resumed.
    pub checkpointer: Option<Arc<dyn Checkpointer>>,
    /// When checkpoints are written.
    pub durability: Durability,
    /// Checkpoints kept per thread (older ones are deleted as new ones are written).
    pub keep: u32,
    /// Overrides the graph's recursion limit.
    pub recursion_limit: Option<u64>,
    /// Time allowed for the whole run (`deadline_exceeded` past it).
    pub deadline: Option<Duration>,
    /// Stops the run when cancelled.
    pub cancel: CancelToken,
    /// Lifecycle handlers.
    pub hooks: Option<Arc<Hooks>>,
}

impl RunConfig {
    /// A thread with default settings: no checkpointer, `sync` durability, 3 checkpoints kept.
    pub fn new(thread_id: &str) -> Self {
        Self {
            thread_id: thread_id.to_owned(),
            checkpointer: None,
            durability: Durability::Sync,
            keep: 3,
            recursion_limit: None,
            deadline: None,
            cancel: CancelToken::new(),
            hooks: None,
        }
    }

    /// Sets the checkpointer.
    #[must_use]
    pub fn checkpointer(mut self, checkpointer: Arc<dyn Checkpointer>) -> Self {
        self.checkpointer = Some(checkpointer);
        self
    }

    /// Sets the durability.
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets the deadline.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets the hooks.
    #[must_use]
    pub fn hooks(mut self, hooks: Arc<Hooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Sets the cancellation token.
    #[must_use]
    pub fn cancel(mut self, cancel: CancelToken) -> Self {
        self.cancel = cancel;
        self
    }
}

/// A built graph; clones share it.
#[derive(Clone)]
pub struct Graph(Arc<builder::Compiled>);

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("id", &self.0.id).field("nodes", &self.0.nodes.len()).finish()
    }
}

/// A graph's nodes and edges ([`Graph::shape`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GraphShape {
    /// Node names, in declaration order.
    pub nodes: Vec<String>,
    /// `(from, to)`; `__start__` and `__end__` stand for the graph's ends.
    pub edges: Vec<(String, String)>,
}

/// How a run begins.
pub(crate) enum Begin {
    /// A new thread with this input.
    Fresh(Value),
    /// A stored thread, after recording this answer to one of its interrupts.
    Resume(String, Value),
    /// A stored thread that stopped mid-way (a crash or a failure).
    Continue,
}

impl Graph {
    /// The graph's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// `name@hash`, as written into checkpoints.
    pub fn id(&self) -> &str {
        &self.0.id
    }

    /// Its nodes in declaration order and its edges (static edges, every target a conditional
    /// edge may choose, joins), `__start__` and `__end__` included as ends: what a drawing needs.
    pub fn shape(&self) -> GraphShape {
        let nodes: Vec<String> = self.0.nodes.iter().map(|n| n.name.to_string()).collect();
        let name = |i: &Option<usize>| match i {
            Some(i) => nodes.get(*i).cloned().unwrap_or_default(),
            None => builder::END.to_owned(),
        };
        let mut edges: Vec<(String, String)> = Vec::new();
        let mut add = |from: &str, to: String| {
            if !edges.iter().any(|(f, t)| f == from && *t == to) {
                edges.push((from.to_owned(), to));
            }
        };
        for start in &self.0.start {
            add(builder::START, name(start));
        }
        if let Some((_, targets)) = &self.0.start_router {
            let mut targets: Vec<&String> = targets.iter().collect();
            targets.sort();
            for t in targets {
                add(builder::START, t.clone());
            }
        }
        for entry in &self.0.nodes {
            for next in &entry.next {
                add(&entry.name, name(next));
            }
            if let Some((_, targets)) = &entry.router {
                let mut targets: Vec<&String> = targets.iter().collect();
                targets.sort();
                for t in targets {
                    add(&entry.name, t.clone());
                }
            }
            for j in entry.joins.iter().filter_map(|j| self.0.joins.get(*j)) {
                add(&entry.name, name(&Some(j.target)));
            }
        }
        GraphShape { nodes, edges }
    }

    /// Starts a new thread and streams its events.
    pub fn stream(&self, config: RunConfig, input: Value) -> RunStream {
        self.spawn(config, Begin::Fresh(input))
    }

    /// Runs a new thread to its end (or pause) and returns how it ended.
    pub async fn invoke(&self, config: RunConfig, input: Value) -> Result<RunOutcome, Rejection> {
        self.run_here(config, Begin::Fresh(input)).await.into_result()
    }

    /// Answers a pending interrupt of a stored thread and streams the rest of the run.
    pub fn resume(&self, config: RunConfig, interrupt_id: &str, value: Value) -> RunStream {
        self.spawn(config, Begin::Resume(interrupt_id.to_owned(), value))
    }

    /// Answers a pending interrupt and runs to the end (or the next pause).
    pub async fn resume_invoke(
        &self,
        config: RunConfig,
        interrupt_id: &str,
        value: Value,
    ) -> Result<RunOutcome, Rejection> {
        self.run_here(config, Begin::Resume(interrupt_id.to_owned(), value)).await.into_result()
    }

    /// Continues a stored thread that stopped mid-way (process crash or failure); tasks whose
    /// writes were stored are not run again.
    pub async fn continue_invoke(&self, config: RunConfig) -> Result<RunOutcome, Rejection> {
        self.run_here(config, Begin::Continue).await.into_result()
    }

    /// The run in the caller's task, keeping only its outcome: the same executor as
    /// [`Graph::stream`], with events delivered to the hooks alone (none are built when there
    /// are no hooks).
    async fn run_here(&self, config: RunConfig, begin: Begin) -> RunOutcome {
        exec::run(self.0.clone(), config, begin, None).await
    }

    fn spawn(&self, config: RunConfig, begin: Begin) -> RunStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let graph = self.0.clone();
        let thread_id = config.thread_id.clone();
        let handle = tokio::spawn(async move {
            exec::run(graph, config, begin, Some(tx)).await;
        });
        RunStream { rx, handle, thread_id }
    }
}

/// The events of one run, ending with [`Event::Finished`].
#[derive(Debug)]
pub struct RunStream {
    rx: mpsc::UnboundedReceiver<Event>,
    handle: JoinHandle<()>,
    thread_id: String,
}

impl RunStream {
    /// The next event; `None` after the last.
    pub async fn next(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    /// Stops the run where it is, as a crash would: nothing more is written.
    pub fn abort(&self) {
        self.handle.abort();
    }

    /// Drains the stream and returns how the run ended.
    pub async fn outcome(mut self) -> RunOutcome {
        let mut last = None;
        while let Some(event) = self.rx.recv().await {
            if let Event::Finished { outcome } = event {
                last = Some(outcome);
            }
        }
        let crashed = self.handle.await.err().map(|e| e.to_string());
        last.unwrap_or_else(|| lost(&self.thread_id, crashed.as_deref().unwrap_or("no reason")))
    }
}

/// The outcome of a run that ended without reporting one (it panicked or was aborted).
fn lost(thread_id: &str, why: &str) -> RunOutcome {
    RunOutcome {
        thread_id: thread_id.to_owned(),
        status: bridle_core::checkpoint::ThreadStatus::Failed,
        state: Value::Null,
        steps: 0,
        interrupts: Vec::new(),
        error: Some(Rejection::new(
            bridle_core::Code::NodeFailed,
            format!("the run stopped without an outcome: {why}"),
        )),
    }
}
