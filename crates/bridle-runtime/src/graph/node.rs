//! Nodes: the async functions a graph runs, what they may see while running (their
//! [`NodeContext`]), how they fail, and their per-node options (timeout, retry, loop bound,
//! error handler).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use bridle_core::{Code, Rejection};
use serde_json::Value;

use super::event::Event;
use super::hooks::EventSink;
use super::state::{State, Update};
use crate::cancel::CancelToken;

/// A step of a graph.
#[async_trait]
pub trait Node: Send + Sync {
    /// Runs on `state` (the shared state, or a fan-out branch's own input) and returns the
    /// fields it writes.
    async fn run(&self, state: State, ctx: NodeContext) -> Result<Update, NodeError>;
}

/// A node from an async closure.
pub fn node_fn<F, Fut>(f: F) -> Arc<dyn Node>
where
    F: Fn(State, NodeContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Update, NodeError>> + Send + 'static,
{
    Arc::new(FnNode(f))
}

struct FnNode<F>(F);

#[async_trait]
impl<F, Fut> Node for FnNode<F>
where
    F: Fn(State, NodeContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Update, NodeError>> + Send + 'static,
{
    async fn run(&self, state: State, ctx: NodeContext) -> Result<Update, NodeError> {
        (self.0)(state, ctx).await
    }
}

/// How a node failed, which decides whether it is retried.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeErrorKind {
    /// Worth another attempt (a timeout, an unavailable service).
    Transient,
    /// A refusal by validation or policy: never retried.
    Rejected,
    /// A bug or an impossible request: not retried.
    Fatal,
    /// The node paused for a human (raised by [`NodeContext::interrupt`]).
    Interrupt(Box<Pause>),
}

/// An interrupt a node raised.
#[derive(Debug, Clone, PartialEq)]
pub struct Pause {
    /// The interrupt's id.
    pub id: String,
    /// What the human must decide.
    pub payload: Value,
}

/// A node's failure.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeError {
    /// Whether to retry.
    pub kind: NodeErrorKind,
    /// The rejection it carries (stable code and message).
    pub rejection: Rejection,
}

impl NodeError {
    /// A failure worth retrying.
    pub fn transient(code: Code, message: impl Into<String>) -> Self {
        Self { kind: NodeErrorKind::Transient, rejection: Rejection::new(code, message) }
    }

    /// A refusal (validation, policy, a gate rejection): never retried.
    pub fn rejected(rejection: Rejection) -> Self {
        Self { kind: NodeErrorKind::Rejected, rejection }
    }

    /// A failure that another attempt would not fix.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self { kind: NodeErrorKind::Fatal, rejection: Rejection::new(Code::NodeFailed, message) }
    }

    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self.kind, NodeErrorKind::Transient)
    }
}

impl std::fmt::Display for NodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.rejection.fmt(f)
    }
}

impl std::error::Error for NodeError {}

impl From<Rejection> for NodeError {
    fn from(rejection: Rejection) -> Self {
        Self::rejected(rejection)
    }
}

/// Retries with exponential backoff and jitter. Only transient errors are retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all (1 = no retry).
    pub max_attempts: u32,
    /// Wait before the second attempt.
    pub initial_backoff: Duration,
    /// Growth per attempt.
    pub factor: f64,
    /// Upper bound on one wait.
    pub max_backoff: Duration,
    /// Fraction of each wait drawn at random (0 = none, 1 = anywhere in [0, wait]).
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(200),
            factor: 2.0,
            max_backoff: Duration::from_secs(10),
            jitter: 0.5,
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self { max_attempts: 1, ..Self::default() }
    }

    /// The wait after failed attempt `attempt` (1-based), with `seed` choosing the jitter.
    pub fn backoff(&self, attempt: u32, seed: u64) -> Duration {
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let base =
            (self.initial_backoff.as_secs_f64() * self.factor.powi(exponent)).min(self.max_backoff.as_secs_f64());
        let jitter = self.jitter.clamp(0.0, 1.0);
        // splitmix64 → [0, 1)
        let mut z = seed.wrapping_add(u64::from(attempt).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        #[allow(clippy::cast_precision_loss)]
        let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
        Duration::from_secs_f64((base * (1.0 - jitter) + base * jitter * unit).max(0.0))
    }
}

/// Turns a node's error into a degraded update, or `None` to let the error stand.
pub type ErrorHandler = Arc<dyn Fn(&NodeError, &State) -> Option<Update> + Send + Sync>;

/// Per-node options.
#[derive(Clone, Default)]
pub struct NodeOptions {
    /// Longest one attempt may take (`node_timeout` past it).
    pub timeout: Option<Duration>,
    /// Retry policy (default: none).
    pub retry: Option<RetryPolicy>,
    /// How often the node may run in one thread (`max_iterations_exceeded` past it); a cycle
    /// needs at least one node with a bound.
    pub max_iterations: Option<u32>,
    /// Turns a failure into a degraded update.
    pub on_error: Option<ErrorHandler>,
}

impl std::fmt::Debug for NodeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeOptions")
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("max_iterations", &self.max_iterations)
            .field("on_error", &self.on_error.is_some())
            .finish()
    }
}

impl NodeOptions {
    /// Sets the timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the retry policy.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Bounds how often the node runs.
    #[must_use]
    pub fn max_iterations(mut self, bound: u32) -> Self {
        self.max_iterations = Some(bound);
        self
    }

    /// Sets the error handler.
    #[must_use]
    pub fn on_error(mut self, handler: impl Fn(&NodeError, &State) -> Option<Update> + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(handler));
        self
    }
}

/// What a running node may use: its identity, events, interrupts and cancellation. Nodes never
/// see hooks; the runtime turns their events into hook calls.
#[derive(Clone)]
pub struct NodeContext(pub(crate) Arc<TaskCtx>);

pub(crate) struct TaskCtx {
    pub thread_id: Arc<str>,
    pub task_id: String,
    pub node: Arc<str>,
    pub step: u64,
    pub sink: EventSink,
    pub cancel: CancelToken,
    /// Answers to this task's interrupts, by interrupt number (`u32::MAX` = the pause before).
    pub resumes: Vec<(u32, Value)>,
    pub raised: AtomicU32,
    /// Tool calls made by this attempt (numbers their idempotency keys).
    pub calls: AtomicU32,
}

/// The interrupt number of a pause before a node.
pub(crate) const BEFORE: u32 = u32::MAX;

impl NodeContext {
    /// The thread (run) id.
    pub fn thread_id(&self) -> &str {
        &self.0.thread_id
    }

    /// The node's name.
    pub fn node(&self) -> &str {
        &self.0.node
    }

    /// The super-step.
    pub fn step(&self) -> u64 {
        self.0.step
    }

    /// A key stable across retries and resumes of this task (thread, step, task): pass it as
    /// the idempotency key of tool calls so a resumed run never repeats a side effect.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}", self.0.thread_id, self.0.task_id)
    }

    /// The idempotency key of this attempt's next tool call: the task's key and the call's
    /// number, so a re-run after a pause or a crash repeats the same keys in the same order.
    pub fn next_call_key(&self) -> String {
        let n = self.0.calls.fetch_add(1, Ordering::Relaxed);
        format!("{}/{}/call-{n}", self.0.thread_id, self.0.task_id)
    }

    /// Emits a custom event (e.g. `analyst_complete`) to the stream and the hooks.
    pub fn emit(&self, name: &str, payload: Value) {
        self.0.sink.send(Event::Custom {
            step: self.0.step,
            node: self.0.node.to_string(),
            name: name.to_owned(),
            payload,
        });
    }

    /// Pauses for a human: the first time, the run stops with an interrupt carrying `payload`
    /// (return the error with `?`); once resumed, returns the value the human gave. Each call
    /// in a node is a separate interrupt, numbered in call order.
    pub fn interrupt(&self, payload: Value) -> Result<Value, NodeError> {
        let n = self.0.raised.fetch_add(1, Ordering::Relaxed);
        if let Some((_, value)) = self.0.resumes.iter().find(|(k, _)| *k == n) {
            return Ok(value.clone());
        }
        let id = interrupt_id(&self.0.thread_id, &self.0.task_id, n);
        Err(NodeError {
            kind: NodeErrorKind::Interrupt(Box::new(Pause { id, payload })),
            rejection: Rejection::new(Code::ApprovalRequired, "waiting for a human"),
        })
    }

    /// The value given when resuming a pause before this node, if there was one.
    pub fn resume_value(&self) -> Option<&Value> {
        self.0.resumes.iter().find(|(k, _)| *k == BEFORE).map(|(_, v)| v)
    }

    /// Whether the run was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancel.is_requested()
    }
}

/// The id of interrupt `n` of a task.
pub(crate) fn interrupt_id(thread: &str, task: &str, n: u32) -> String {
    if n == BEFORE { format!("{thread}/{task}/before") } else { format!("{thread}/{task}/{n}") }
}

/// Splits an interrupt id into (thread, task, n).
pub(crate) fn parse_interrupt_id(id: &str) -> Option<(&str, &str, u32)> {
    let (rest, n) = id.rsplit_once('/')?;
    let (thread, task) = rest.rsplit_once('/')?;
    let n = if n == "before" { BEFORE } else { n.parse().ok()? };
    Some((thread, task, n))
}
