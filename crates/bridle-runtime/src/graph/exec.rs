//! The super-step loop: starts or resumes a thread, runs each step's tasks concurrently with
//! their timeouts, retries and error handlers, merges their updates, follows the edges, writes
//! checkpoints, and stops on completion, a pause, a failure, cancellation or the deadline.
//! Checkpoint I/O is in `exec/persist.rs`.

mod persist;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use bridle_core::checkpoint::{InterruptRecord, TaskSpec, ThreadStatus};
use bridle_core::{Code, Rejection};
use futures_util::future::join_all;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::builder::{Compiled, Target};
use super::event::{Event, RunOutcome};
use super::hooks::EventSink;
use super::hooks::names;
use super::node::{
    BEFORE, NodeContext, NodeError, NodeErrorKind, RetryPolicy, TaskCtx, interrupt_id, parse_interrupt_id,
};
use super::state::{State, Update};
use super::{Begin, Durability, RunConfig};

/// Runs one thread and reports its events, ending with `Finished`.
pub(crate) async fn run(
    graph: Arc<Compiled>,
    config: RunConfig,
    begin: Begin,
    tx: Option<UnboundedSender<Event>>,
) -> RunOutcome {
    let sink = EventSink { stream: tx, hooks: config.hooks.clone(), thread_id: config.thread_id.as_str().into() };
    let deadline = config.deadline.map(|d| tokio::time::Instant::now() + d);
    let outcome = match Runner::begin(&graph, &config, &sink, begin).await {
        Ok(Started::Run(mut runner)) => {
            runner.deadline = deadline;
            runner.drive().await
        }
        Ok(Started::Stopped(outcome)) => *outcome,
        Err(error) => RunOutcome {
            thread_id: config.thread_id.clone(),
            status: ThreadStatus::Failed,
            state: Value::Null,
            steps: 0,
            interrupts: Vec::new(),
            error: Some(error),
        },
    };
    if sink.is_active() {
        sink.send(Event::Finished { outcome: outcome.clone() });
    }
    outcome
}

/// A task of the current step.
struct Task {
    spec: TaskSpec,
    node: usize,
    /// Indexes of the previous step's tasks whose edges led here (empty after a resume).
    triggers: Vec<usize>,
}

/// Where an edge leads, resolved to a node index; the `usize` beside it is the index of the
/// task that chose it (`usize::MAX` for the start).
enum Next {
    Node(usize),
    Send(usize, Value),
}

enum Started<'a> {
    Run(Box<Runner<'a>>),
    Stopped(Box<RunOutcome>),
}

struct Runner<'a> {
    graph: &'a Compiled,
    config: &'a RunConfig,
    sink: &'a EventSink,
    state: State,
    step: u64,
    tasks: Vec<Task>,
    visits: Vec<u32>,
    /// Per join: which of its sources have finished.
    barriers: Vec<Vec<usize>>,
    resumes: BTreeMap<String, Value>,
    /// Writes stored for the current step (after a resume or a crash), by task id.
    stored: HashMap<String, Value>,
    pending_put: Option<JoinHandle<Result<(), String>>>,
    deadline: Option<tokio::time::Instant>,
}

/// What one task came to.
type TaskResult = Result<Value, NodeError>;

impl<'a> Runner<'a> {
    fn new(graph: &'a Compiled, config: &'a RunConfig, sink: &'a EventSink, state: State) -> Self {
        Self {
            graph,
            config,
            sink,
            state,
            step: 0,
            tasks: Vec::new(),
            visits: vec![0; graph.nodes.len()],
            barriers: vec![Vec::new(); graph.joins.len()],
            resumes: BTreeMap::new(),
            stored: HashMap::new(),
            pending_put: None,
            deadline: None,
        }
    }

    async fn begin(
        graph: &'a Compiled,
        config: &'a RunConfig,
        sink: &'a EventSink,
        begin: Begin,
    ) -> Result<Started<'a>, Rejection> {
        match begin {
            Begin::Fresh(input) => {
                if let Some(cp) = config.checkpointer.as_ref()
                    && let Some(existing) = cp.latest(&config.thread_id).await.map_err(store_error)?
                {
                    return Err(Rejection::new(
                        Code::StaleCheckpoint,
                        format!(
                            "thread `{}` already exists (step {}, {}); resume it or start a new thread",
                            config.thread_id,
                            existing.step,
                            existing.status.as_str()
                        ),
                    ));
                }
                let state = graph.schema.initial(&input)?;
                let mut runner = Self::new(graph, config, sink, state);
                let mut next = Vec::new();
                for to in graph.start.iter().flatten() {
                    next.push((Next::Node(*to), usize::MAX));
                }
                if let Some((router, declared)) = &graph.start_router {
                    for t in router(&runner.state) {
                        if let Some(n) = resolve(graph, t, declared, super::START)? {
                            next.push((n, usize::MAX));
                        }
                    }
                }
                runner.tasks = runner.schedule(next)?;
                sink.send(Event::RunStarted { thread_id: config.thread_id.clone(), step: 0, resumed: false });
                // A run that pauses before its first step writes the paused checkpoint instead.
                if !runner.pauses_ahead() {
                    runner.checkpoint(ThreadStatus::Running, None, Vec::new()).await?;
                }
                Ok(Started::Run(Box::new(runner)))
            }
            Begin::Resume(id, value) => Self::resume(graph, config, sink, &id, value).await,
            Begin::Continue => {
                let cp = Self::load(graph, config, "continue").await?.ok_or_else(|| {
                    Rejection::new(Code::StaleCheckpoint, format!("no checkpoint for thread `{}`", config.thread_id))
                })?;
                let status = cp.status;
                let mut runner = Self::restore(graph, config, sink, cp)?;
                match status {
                    ThreadStatus::Running | ThreadStatus::Failed => {
                        runner.load_stored().await?;
                        sink.send(Event::RunStarted {
                            thread_id: config.thread_id.clone(),
                            step: runner.step,
                            resumed: true,
                        });
                        Ok(Started::Run(Box::new(runner)))
                    }
                    other => Ok(Started::Stopped(Box::new(runner.outcome(other, Vec::new(), None)))),
                }
            }
        }
    }

    async fn resume(
        graph: &'a Compiled,
        config: &'a RunConfig,
        sink: &'a EventSink,
        id: &str,
        value: Value,
    ) -> Result<Started<'a>, Rejection> {
        let unknown = || Rejection::new(Code::UnknownInterrupt, format!("no pending interrupt `{id}`"));
        let mut cp = Self::load(graph, config, "resume").await?.ok_or_else(unknown)?;
        if !cp.interrupts.iter().any(|i| i.id == id) {
            let answered = cp.resumes.contains_key(id);
            let older = parse_interrupt_id(id).is_some_and(|(thread, task, _)| {
                thread == config.thread_id
                    && task.split_once(':').and_then(|(s, _)| s.parse::<u64>().ok()).is_some_and(|s| s < cp.step)
            });
            if answered || older {
                return Err(Rejection::new(
                    Code::StaleCheckpoint,
                    format!("interrupt `{id}` was already answered or belongs to an earlier step"),
                ));
            }
            return Err(unknown());
        }
        cp.interrupts.retain(|i| i.id != id);
        cp.resumes.insert(id.to_owned(), value);
        let remaining = cp.interrupts.clone();
        cp.status = if remaining.is_empty() { ThreadStatus::Running } else { ThreadStatus::Interrupted };
        // The answer is durable before anything acts on it, whatever the durability.
        if let Some(store) = config.checkpointer.as_ref() {
            store.put(&cp, config.keep).await.map_err(store_error)?;
        }
        let mut runner = Self::restore(graph, config, sink, cp)?;
        if !remaining.is_empty() {
            return Ok(Started::Stopped(Box::new(runner.outcome(ThreadStatus::Interrupted, remaining, None))));
        }
        runner.load_stored().await?;
        sink.send(Event::RunStarted { thread_id: config.thread_id.clone(), step: runner.step, resumed: true });
        Ok(Started::Run(Box::new(runner)))
    }

    /// Runs steps until the thread stops.
    async fn drive(&mut self) -> RunOutcome {
        loop {
            if self.tasks.is_empty() {
                return self.stop(ThreadStatus::Done, None).await;
            }
            if let Err(e) = self.before_step() {
                return self.stop(ThreadStatus::Failed, Some(e)).await;
            }
            if self.config.cancel.is_requested() {
                return self.cancelled().await;
            }
            let pauses = self.pauses();
            if !pauses.is_empty() {
                return self.pause(pauses).await;
            }
            let results = match self.run_step().await {
                Ok(results) => results,
                Err(Interrupted::Cancel) => return self.cancelled().await,
                Err(Interrupted::Deadline) => {
                    let e = Rejection::new(Code::DeadlineExceeded, "the run's deadline passed during a step");
                    return self.stop(ThreadStatus::Failed, Some(e)).await;
                }
            };
            match self.settle(results).await {
                Ok(None) => {}
                Ok(Some(outcome)) | Err(outcome) => return outcome,
            }
        }
    }

    /// Limits checked before a step: recursion, deadline, loop bounds.
    fn before_step(&self) -> Result<(), Rejection> {
        let limit = self.config.recursion_limit.unwrap_or(self.graph.recursion_limit);
        if self.step >= limit {
            return Err(Rejection::new(
                Code::RecursionLimit,
                format!("the run reached its limit of {limit} super-steps without finishing"),
            ));
        }
        if self.deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            return Err(Rejection::new(Code::DeadlineExceeded, "the run's deadline passed"));
        }
        if !self.graph.bounded {
            return Ok(());
        }
        let mut planned = vec![0u32; self.graph.nodes.len()];
        for t in &self.tasks {
            if let Some(p) = planned.get_mut(t.node) {
                *p += 1;
            }
        }
        for ((entry, visits), planned) in self.graph.nodes.iter().zip(&self.visits).zip(planned) {
            if let Some(bound) = entry.options.max_iterations
                && visits + planned > bound
            {
                return Err(Rejection::new(
                    Code::MaxIterationsExceeded,
                    format!("node `{}` would run {} times; its bound is {bound}", entry.name, visits + planned),
                )
                .with_detail(json!({ "node": &*entry.name, "max_iterations": bound })));
            }
        }
        Ok(())
    }

    /// Whether the next step starts with a pause (cheaper than building the pauses).
    fn pauses_ahead(&self) -> bool {
        self.tasks.iter().any(|t| {
            self.graph.nodes.get(t.node).is_some_and(|e| e.pause_before.is_some())
                && !self.resumes.contains_key(&interrupt_id(&self.config.thread_id, &t.spec.id, BEFORE))
        })
    }

    /// Pauses before nodes that have not been answered yet.
    fn pauses(&self) -> Vec<InterruptRecord> {
        self.tasks
            .iter()
            .filter_map(|t| {
                let payload = self.graph.nodes.get(t.node)?.pause_before.as_ref()?;
                let id = interrupt_id(&self.config.thread_id, &t.spec.id, BEFORE);
                (!self.resumes.contains_key(&id)).then(|| InterruptRecord {
                    id,
                    task_id: t.spec.id.clone(),
                    node: t.spec.node.clone(),
                    payload: payload(&self.state),
                })
            })
            .collect()
    }

    async fn pause(&mut self, interrupts: Vec<InterruptRecord>) -> RunOutcome {
        self.sink.send(Event::Interrupted { interrupts: interrupts.clone() });
        let status = ThreadStatus::Interrupted;
        match self.put_now(status, None, interrupts.clone()).await {
            Ok(()) => self.outcome(status, interrupts, None),
            Err(e) => self.outcome(ThreadStatus::Failed, Vec::new(), Some(e)),
        }
    }

    async fn cancelled(&mut self) -> RunOutcome {
        let e = Rejection::new(Code::Cancelled, format!("run `{}` was cancelled", self.config.thread_id));
        let outcome = self.stop(ThreadStatus::Cancelled, Some(e)).await;
        self.config.cancel.mark_cancelled();
        outcome
    }

    /// Runs the tasks of the current step that have no stored writes.
    async fn run_step(&self) -> Result<Vec<Option<TaskResult>>, Interrupted> {
        let several = self.tasks.len() > 1;
        let work = async {
            match self.tasks.as_slice() {
                // One task (most steps): no fan-in machinery.
                [one] if self.stored.is_empty() => vec![Some(self.run_task(one, false).await)],
                tasks => {
                    join_all(tasks.iter().map(|t| async move {
                        if self.stored.contains_key(&t.spec.id) { None } else { Some(self.run_task(t, several).await) }
                    }))
                    .await
                }
            }
        };
        let cancel = self.config.cancel.requested();
        let deadline = async {
            match self.deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        // Biased: a step that finishes on its first poll never registers a waiter or a timer.
        tokio::select! {
            biased;
            results = work => Ok(results),
            () = cancel => Err(Interrupted::Cancel),
            () = deadline => Err(Interrupted::Deadline),
        }
    }

    /// One task: events, attempts with timeout and retry, the error handler, stored writes.
    async fn run_task(&self, task: &Task, several: bool) -> TaskResult {
        let Some(entry) = self.graph.nodes.get(task.node) else {
            return Err(NodeError::fatal(format!("task `{}` names no node", task.spec.id)));
        };
        let started = Instant::now();
        let active = self.sink.is_active();
        if active {
            let enter = Event::NodeEnter {
                step: self.step,
                task_id: task.spec.id.clone(),
                node: task.spec.node.clone(),
                triggers: task.triggers.iter().map(|i| format!("{}:{i}", self.step.saturating_sub(1))).collect(),
            };
            if self.visits.get(task.node) == Some(&0)
                && let Some(hooks) = &self.sink.hooks
            {
                for failure in hooks.dispatch_named(names::NODE_BOOTSTRAP, &self.config.thread_id, &enter) {
                    self.sink.send(failure);
                }
            }
            self.sink.send(enter);
        }
        let input = match &task.spec.input {
            None => self.state.clone(),
            Some(Value::Object(map)) => State::from_map(map.clone()),
            Some(other) => State::from_map(Map::from_iter([("input".to_owned(), other.clone())])),
        };
        let resumes = if self.resumes.is_empty() {
            Vec::new()
        } else {
            let prefix = format!("{}/{}/", self.config.thread_id, task.spec.id);
            self.resumes
                .range(prefix.clone()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
                .filter_map(|(k, v)| parse_interrupt_id(k).map(|(_, _, n)| (n, v.clone())))
                .collect()
        };
        let ctx = NodeContext(Arc::new(TaskCtx {
            thread_id: self.sink.thread_id.clone(),
            task_id: task.spec.id.clone(),
            node: entry.name.clone(),
            step: self.step,
            sink: self.sink.clone(),
            cancel: self.config.cancel.clone(),
            resumes,
            raised: AtomicU32::new(0),
            calls: AtomicU32::new(0),
        }));
        let span = node_span(&self.graph.name, &entry.name, &self.config.thread_id, self.step);
        let mut result = self.attempts(task, entry, &input, &ctx).instrument(span.clone()).await;
        let mut degraded = false;
        if let (Err(e), Some(handler)) = (&result, &entry.options.on_error)
            && !matches!(e.kind, NodeErrorKind::Interrupt(_))
            && let Some(update) = handler(e, &self.state)
        {
            degraded = true;
            result = self.graph.schema.check(&update.0).map(|()| update).map_err(NodeError::rejected);
        }
        record_node_outcome(&span, &result, degraded);
        let result = result.map(Update::into_value);
        if let Ok(update) = &result {
            if active {
                self.sink.send(Event::Update { step: self.step, node: task.spec.node.clone(), update: update.clone() });
            }
            if several
                && self.config.durability == Durability::Sync
                && let Err(e) = self.store_writes(task, update).await
            {
                return Err(NodeError::rejected(e));
            }
        }
        if active && result.is_ok() {
            self.sink.send(Event::NodeExit {
                step: self.step,
                task_id: task.spec.id.clone(),
                node: task.spec.node.clone(),
                duration_us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
                degraded,
            });
        }
        result
    }

    /// Attempts of one task under its timeout and retry policy.
    async fn attempts(
        &self,
        task: &Task,
        entry: &super::builder::NodeEntry,
        input: &State,
        ctx: &NodeContext,
    ) -> Result<Update, NodeError> {
        let policy = entry.options.retry.clone().unwrap_or_else(RetryPolicy::none);
        let mut attempt = 1;
        loop {
            ctx.0.raised.store(0, Ordering::Relaxed);
            ctx.0.calls.store(0, Ordering::Relaxed);
            let run = entry.node.run(input.clone(), ctx.clone());
            let result = match entry.options.timeout {
                Some(limit) => tokio::time::timeout(limit, run).await.unwrap_or_else(|_| {
                    Err(NodeError::transient(
                        Code::NodeTimeout,
                        format!("node `{}` took longer than {} ms", entry.name, limit.as_millis()),
                    ))
                }),
                None => run.await,
            };
            let error =
                match result.and_then(|u| self.graph.schema.check(&u.0).map(|()| u).map_err(NodeError::rejected)) {
                    Ok(update) => return Ok(update),
                    Err(e) if matches!(e.kind, NodeErrorKind::Interrupt(_)) => return Err(e),
                    Err(e) => e,
                };
            let retrying = error.is_retryable() && attempt < policy.max_attempts;
            self.sink.send(Event::NodeError {
                step: self.step,
                task_id: task.spec.id.clone(),
                node: task.spec.node.clone(),
                error: error.rejection.clone(),
                attempt,
                retrying,
            });
            if !retrying {
                return Err(error);
            }
            let seed = task.spec.id.bytes().fold(self.step, |h, b| h.rotate_left(5) ^ u64::from(b));
            tokio::time::sleep(policy.backoff(attempt, seed)).await;
            attempt += 1;
        }
    }

    /// After a step: stop on failure or interrupts, else merge, route and checkpoint.
    async fn settle(&mut self, results: Vec<Option<TaskResult>>) -> Result<Option<RunOutcome>, RunOutcome> {
        let mut failure: Option<Rejection> = None;
        let mut interrupts = Vec::new();
        for (task, result) in self.tasks.iter().zip(&results) {
            match result {
                Some(Err(NodeError { kind: NodeErrorKind::Interrupt(pause), .. })) => {
                    interrupts.push(InterruptRecord {
                        id: pause.id.clone(),
                        task_id: task.spec.id.clone(),
                        node: task.spec.node.clone(),
                        payload: pause.payload.clone(),
                    });
                }
                Some(Err(e)) if failure.is_none() => {
                    let mut rejection = e.rejection.clone();
                    rejection.message = format!("node `{}`: {}", task.spec.node, rejection.message);
                    rejection.detail = json!({ "node": &task.spec.node, "task_id": &task.spec.id, "step": self.step });
                    failure = Some(rejection);
                }
                _ => {}
            }
        }
        if failure.is_some() || !interrupts.is_empty() {
            // Keep what finished, so the resume runs only the rest.
            if self.tasks.len() > 1 && self.config.durability != Durability::Sync {
                for (task, result) in self.tasks.iter().zip(&results) {
                    if let Some(Ok(update)) = result
                        && let Err(e) = self.store_writes(task, update).await
                    {
                        return Err(self.stop(ThreadStatus::Failed, Some(e)).await);
                    }
                }
            }
            if let Some(e) = failure {
                return Err(self.stop(ThreadStatus::Failed, Some(e)).await);
            }
            return Err(self.pause(interrupts).await);
        }
        let updates: Vec<Value> = self
            .tasks
            .iter()
            .zip(results)
            .map(|(t, r)| match r {
                Some(Ok(update)) => update,
                _ => self.stored.get(&t.spec.id).cloned().unwrap_or(Value::Null),
            })
            .collect();
        let backup = self.graph.schema.has_custom().then(|| State::from_map(self.state.as_map().clone()));
        if let Err(e) = self.graph.schema.apply(&mut self.state, &updates) {
            if let Some(backup) = backup {
                self.state = backup;
            }
            return Err(self.stop(ThreadStatus::Failed, Some(e)).await);
        }
        let next = match self.route() {
            Ok(next) => next,
            Err(e) => return Err(self.stop(ThreadStatus::Failed, Some(e)).await),
        };
        for t in &self.tasks {
            if let Some(v) = self.visits.get_mut(t.node) {
                *v += 1;
            }
        }
        let done = self.step;
        self.step += 1;
        self.stored.clear();
        self.tasks = match self.schedule(next) {
            Ok(tasks) => tasks,
            Err(e) => return Err(self.stop(ThreadStatus::Failed, Some(e)).await),
        };
        let status = if self.tasks.is_empty() { ThreadStatus::Done } else { ThreadStatus::Running };
        // The next step pauses before it starts: the pause writes its own checkpoint.
        let skip = status == ThreadStatus::Running && self.pauses_ahead();
        if !skip && let Err(e) = self.checkpoint(status, None, Vec::new()).await {
            return Err(self.outcome(ThreadStatus::Failed, Vec::new(), Some(e)));
        }
        self.sink.send(Event::StepDone { step: done, checkpointed: self.config.checkpointer.is_some() });
        Ok(None)
    }

    /// The targets the finished tasks' edges choose, with the task that chose each.
    fn route(&mut self) -> Result<Vec<(Next, usize)>, Rejection> {
        let graph = self.graph;
        let mut next = Vec::new();
        for (i, task) in self.tasks.iter().enumerate() {
            let Some(entry) = graph.nodes.get(task.node) else { continue };
            for to in entry.next.iter().flatten() {
                next.push((Next::Node(*to), i));
            }
            if let Some((router, declared)) = &entry.router {
                for t in router(&self.state) {
                    if let Some(n) = resolve(graph, t, declared, &entry.name)? {
                        next.push((n, i));
                    }
                }
            }
            for j in &entry.joins {
                let (Some(join), Some(seen)) = (graph.joins.get(*j), self.barriers.get_mut(*j)) else { continue };
                if !seen.contains(&task.node) {
                    seen.push(task.node);
                }
                if join.sources.iter().all(|s| seen.contains(s)) {
                    seen.clear();
                    next.push((Next::Node(join.target), i));
                }
            }
        }
        Ok(next)
    }

    /// Tasks of the next step: a node reached by several edges runs once; every `Send` runs.
    fn schedule(&self, targets: Vec<(Next, usize)>) -> Result<Vec<Task>, Rejection> {
        let step = self.step;
        let mut tasks: Vec<Task> = Vec::new();
        for (target, trigger) in targets {
            let (node, input) = match target {
                Next::Node(node) => (node, None),
                Next::Send(node, input) => (node, Some(input)),
            };
            if input.is_none()
                && let Some(t) = tasks.iter_mut().find(|t| t.node == node && t.spec.input.is_none())
            {
                if trigger != usize::MAX {
                    t.triggers.push(trigger);
                }
                continue;
            }
            let id = format!("{step}:{}", tasks.len());
            let triggers = if trigger == usize::MAX { Vec::new() } else { vec![trigger] };
            tasks.push(Task { spec: TaskSpec { id, node: node_name(self.graph, node), input }, node, triggers });
        }
        Ok(tasks)
    }

    /// Ends the run: the final checkpoint (unless `sync` already wrote it) and the outcome.
    async fn stop(&mut self, status: ThreadStatus, error: Option<Rejection>) -> RunOutcome {
        let written = status == ThreadStatus::Done && self.config.durability == Durability::Sync;
        let stored =
            if written { self.await_pending().await } else { self.put_now(status, error.as_ref(), Vec::new()).await };
        match stored {
            Ok(()) => self.outcome(status, Vec::new(), error),
            Err(e) => self.outcome(ThreadStatus::Failed, Vec::new(), Some(error.unwrap_or(e))),
        }
    }

    fn outcome(&self, status: ThreadStatus, interrupts: Vec<InterruptRecord>, error: Option<Rejection>) -> RunOutcome {
        RunOutcome {
            thread_id: self.config.thread_id.clone(),
            status,
            state: self.state.to_value(),
            steps: self.step,
            interrupts,
            error,
        }
    }
}

/// Why a step stopped before its tasks finished.
enum Interrupted {
    Cancel,
    Deadline,
}

fn node_name(graph: &Compiled, index: usize) -> String {
    graph.nodes.get(index).map(|e| e.name.to_string()).unwrap_or_default()
}

/// A router's choice as a node index (`None` for END), refused when not among its declared
/// targets.
fn resolve(
    graph: &Compiled,
    target: Target,
    declared: &std::collections::HashSet<String>,
    from: &str,
) -> Result<Option<Next>, Rejection> {
    let (name, input) = match target {
        Target::End => (super::END.to_owned(), None),
        Target::Node(n) => (n, None),
        Target::Send(n, input) => (n, Some(input)),
    };
    if !declared.contains(&name) {
        return Err(Rejection::new(
            Code::NodeFailed,
            format!("the router of `{from}` chose `{name}`, which is not among its declared targets"),
        ));
    }
    if name == super::END {
        return Ok(None);
    }
    let node = graph.index.get(&name).copied().ok_or_else(|| {
        Rejection::new(Code::NodeFailed, format!("the router of `{from}` chose `{name}`, which is not a node"))
    })?;
    Ok(Some(match input {
        None => Next::Node(node),
        Some(input) => Next::Send(node, input),
    }))
}

fn store_error(e: bridle_core::ports::StoreError) -> Rejection {
    Rejection::new(Code::NodeFailed, format!("checkpoint store: {e}"))
}

/// The INTERNAL span of one node's task (what OpenTelemetry exports per graph node): the graph,
/// node, run and step, and the outcome once known.
fn node_span(graph: &str, node: &str, run_id: &str, step: u64) -> tracing::Span {
    tracing::info_span!(
        "graph_node",
        otel.name = %format!("node {node}"),
        otel.status_code = tracing::field::Empty,
        bridle.graph = %graph,
        bridle.node = %node,
        bridle.run_id = %run_id,
        bridle.step = step,
        bridle.outcome = tracing::field::Empty,
        error.r#type = tracing::field::Empty,
    )
}

/// `bridle.outcome` on a node's span: `ok`, `degraded` (its error handler answered), `paused`
/// (an interrupt for a human), or `failed` with the stable code as `error.type` and an ERROR
/// status.
fn record_node_outcome<T>(span: &tracing::Span, result: &Result<T, NodeError>, degraded: bool) {
    match result {
        Ok(_) => span.record("bridle.outcome", if degraded { "degraded" } else { "ok" }),
        Err(e) if matches!(e.kind, NodeErrorKind::Interrupt(_)) => span.record("bridle.outcome", "paused"),
        Err(e) => {
            span.record("bridle.outcome", "failed");
            span.record("error.type", e.rejection.code.as_str());
            span.record("otel.status_code", "ERROR")
        }
    };
}
