//! Cancellation of runs and calls, telling "asked to stop" (`cancel_requested`) from "stopped"
//! (`cancelled`).
//!
//! Whoever wants a run to stop calls [`CancelToken::cancel`]; the work notices at its next
//! await point (a graph run between and during super-steps, an LLM call while waiting), stops,
//! and calls [`CancelToken::mark_cancelled`]. Clones share one state.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;
use tokio::sync::Notify;

/// Where a cancellation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelState {
    /// Nobody asked.
    Running,
    /// Asked; the work has not stopped yet.
    CancelRequested,
    /// The work observed the request and stopped.
    Cancelled,
}

const RUNNING: u8 = 0;
const REQUESTED: u8 = 1;
const CANCELLED: u8 = 2;

#[derive(Debug, Default)]
struct Inner {
    state: AtomicU8,
    notify: Notify,
}

/// A shared cancellation flag with a wake-up for waiters.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<Inner>);

impl CancelToken {
    /// A token nobody has cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the work to stop (`cancel_requested`); a no-op once cancelled.
    pub fn cancel(&self) {
        let _ = self.0.state.compare_exchange(RUNNING, REQUESTED, Ordering::AcqRel, Ordering::Acquire);
        self.0.notify.notify_waiters();
    }

    /// Records that the work stopped (`cancelled`).
    pub fn mark_cancelled(&self) {
        self.0.state.store(CANCELLED, Ordering::Release);
        self.0.notify.notify_waiters();
    }

    /// Whether a stop was asked for (or has happened).
    pub fn is_requested(&self) -> bool {
        self.0.state.load(Ordering::Acquire) != RUNNING
    }

    /// The current state.
    pub fn state(&self) -> CancelState {
        match self.0.state.load(Ordering::Acquire) {
            RUNNING => CancelState::Running,
            REQUESTED => CancelState::CancelRequested,
            _ => CancelState::Cancelled,
        }
    }

    /// A handle that does not keep the work's token alive (for registries of live runs).
    pub fn downgrade(&self) -> WeakCancelToken {
        WeakCancelToken(Arc::downgrade(&self.0))
    }

    /// Resolves once a stop is asked for; immediately if it already was.
    pub async fn requested(&self) {
        loop {
            let notified = self.0.notify.notified();
            if self.is_requested() {
                return;
            }
            notified.await;
        }
    }
}

/// A [`CancelToken`] that does not keep it alive: upgrades while the work still holds it.
#[derive(Debug, Clone)]
pub struct WeakCancelToken(std::sync::Weak<Inner>);

impl WeakCancelToken {
    /// The token, while anyone still holds it.
    pub fn upgrade(&self) -> Option<CancelToken> {
        self.0.upgrade().map(CancelToken)
    }
}
