//! Hooks: handlers called on a run's lifecycle events, by name, in priority order.
//!
//! Event names are DESIGN.md's stable list: `pipeline_start`, `pipeline_end`, `pipeline_error`,
//! `node_bootstrap` (a node's first entry in a run), `node_enter`, `node_exit`, `node_error`,
//! and every custom event a node emits under its own name (`analyst_complete`,
//! `verification_fail`, `drift_detected`, `tool_call_decided`, …). Handlers are synchronous
//! and should be quick; one that needs I/O hands the work to a task of its own. A handler that
//! fails or panics is logged and reported as a `hook_failed` event; the others still run and the
//! run goes on. Nodes never see hooks: the runtime wraps every node. [`EventSink`] carries each
//! event to the hooks, then to the run's stream.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedSender;

use bridle_core::checkpoint::ThreadStatus;

use super::event::Event;
pub use crate::hook::HookError;

/// Names of the hook events the runtime itself fires.
pub mod names {
    /// A run started or resumed.
    pub const PIPELINE_START: &str = "pipeline_start";
    /// A run finished or paused for a human.
    pub const PIPELINE_END: &str = "pipeline_end";
    /// A run failed or was cancelled.
    pub const PIPELINE_ERROR: &str = "pipeline_error";
    /// A node runs for the first time in a run.
    pub const NODE_BOOTSTRAP: &str = "node_bootstrap";
    /// A node starts.
    pub const NODE_ENTER: &str = "node_enter";
    /// A node finished.
    pub const NODE_EXIT: &str = "node_exit";
    /// An attempt of a node failed.
    pub const NODE_ERROR: &str = "node_error";
}

/// A hook handler.
pub trait HookHandler: Send + Sync {
    /// Name used in logs and `hook_failed` events.
    fn name(&self) -> &str;
    /// Handles one event; an error is logged and reported, never fatal.
    fn handle(&self, hook: &str, thread_id: &str, event: &Event) -> Result<(), HookError>;
}

struct Registration {
    /// Event name, or `None` for every event.
    event: Option<String>,
    priority: i32,
    handler: Arc<dyn HookHandler>,
}

/// Registered handlers.
#[derive(Default)]
pub struct Hooks {
    handlers: Vec<Registration>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.handlers.iter().map(|r| (r.event.as_deref(), r.priority, r.handler.name())))
            .finish()
    }
}

impl Hooks {
    /// No handlers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `handler` for the event `name`; higher priorities run first, equal ones in
    /// registration order.
    #[must_use]
    pub fn on(self, name: &str, priority: i32, handler: Arc<dyn HookHandler>) -> Self {
        self.register(Some(name.to_owned()), priority, handler)
    }

    /// Calls `handler` for every event.
    #[must_use]
    pub fn on_all(self, priority: i32, handler: Arc<dyn HookHandler>) -> Self {
        self.register(None, priority, handler)
    }

    fn register(mut self, event: Option<String>, priority: i32, handler: Arc<dyn HookHandler>) -> Self {
        let at = self.handlers.iter().position(|r| r.priority < priority).unwrap_or(self.handlers.len());
        self.handlers.insert(at, Registration { event, priority, handler });
        self
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.handlers.is_empty()
    }

    /// Calls the handlers of the hook the event maps to; returns `hook_failed` events.
    pub(crate) fn dispatch(&self, thread_id: &str, event: &Event) -> Vec<Event> {
        match hook_name(event) {
            Some(name) => self.dispatch_named(name, thread_id, event),
            None => Vec::new(),
        }
    }

    /// Calls the handlers registered for `name` with `event`.
    pub(crate) fn dispatch_named(&self, name: &str, thread_id: &str, event: &Event) -> Vec<Event> {
        let mut failures = Vec::new();
        for r in self.handlers.iter().filter(|r| r.event.as_deref().is_none_or(|e| e == name)) {
            let result = catch_unwind(AssertUnwindSafe(|| r.handler.handle(name, thread_id, event)))
                .unwrap_or_else(|_| Err(HookError::from("the handler panicked")));
            if let Err(message) = result.map_err(|e| e.to_string()) {
                tracing::warn!(hook = name, handler = r.handler.name(), thread_id, %message, "hook handler failed");
                failures.push(Event::HookFailed {
                    hook: name.to_owned(),
                    handler: r.handler.name().to_owned(),
                    message,
                });
            }
        }
        failures
    }
}

/// The hook an event fires, if any.
fn hook_name(event: &Event) -> Option<&str> {
    Some(match event {
        Event::RunStarted { .. } => names::PIPELINE_START,
        Event::NodeEnter { .. } => names::NODE_ENTER,
        Event::NodeExit { .. } => names::NODE_EXIT,
        Event::NodeError { .. } => names::NODE_ERROR,
        Event::Custom { name, .. } => name,
        Event::Finished { outcome } => match outcome.status {
            ThreadStatus::Failed | ThreadStatus::Cancelled => names::PIPELINE_ERROR,
            _ => names::PIPELINE_END,
        },
        Event::Update { .. } | Event::Interrupted { .. } | Event::StepDone { .. } | Event::HookFailed { .. } => {
            return None;
        }
    })
}

/// Carries events to the stream (if anyone listens) and the hooks (if any are registered).
#[derive(Clone, Default)]
pub(crate) struct EventSink {
    pub stream: Option<UnboundedSender<Event>>,
    pub hooks: Option<Arc<Hooks>>,
    pub thread_id: Arc<str>,
}

impl EventSink {
    /// Delivers an event: hooks first (in priority order), then the stream.
    pub fn send(&self, event: Event) {
        if let Some(hooks) = &self.hooks {
            for failure in hooks.dispatch(&self.thread_id, &event) {
                self.forward(failure);
            }
        }
        self.forward(event);
    }

    fn forward(&self, event: Event) {
        if let Some(stream) = &self.stream {
            // A dropped receiver means nobody listens any more; the run goes on.
            let _ = stream.send(event);
        }
    }

    /// Whether anything consumes events (so callers can skip building them).
    pub fn is_active(&self) -> bool {
        self.stream.is_some() || self.hooks.is_some()
    }
}
