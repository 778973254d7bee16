//! Deadlines: how long an LLM call, a pipeline, a workflow and a chat turn may take.
//!
//! Values only: [`Deadlines`] holds the configured durations and [`Deadline`] a point in time
//! checked against an explicit `now`; the runtime owns the clocks and the timers. Defaults:
//! LLM call 30 s, pipeline 5 min, chat turn 60 s, workflow 5 min base + 30 s per node
//! (a 10-node workflow gets 10 min, a 20-node one 15 min). A passed deadline is `deadline_exceeded`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;

use crate::code::Code;
use crate::verdict::Rejection;

/// The configured time limits. In configuration every field is in milliseconds (`llm_call_ms`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Deadlines {
    /// One LLM call, retries included (default 30 s).
    #[serde(with = "millis", rename = "llm_call_ms")]
    pub llm_call: Duration,
    /// One pipeline run (default 5 min).
    #[serde(with = "millis", rename = "pipeline_ms")]
    pub pipeline: Duration,
    /// A workflow's base allowance (default 5 min).
    #[serde(with = "millis", rename = "workflow_base_ms")]
    pub workflow_base: Duration,
    /// Added to a workflow's allowance per node (default 30 s).
    #[serde(with = "millis", rename = "workflow_per_node_ms")]
    pub workflow_per_node: Duration,
    /// One chat turn (default 60 s).
    #[serde(with = "millis", rename = "chat_turn_ms")]
    pub chat_turn: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Self {
            llm_call: Duration::from_secs(30),
            pipeline: Duration::from_secs(5 * 60),
            workflow_base: Duration::from_secs(5 * 60),
            workflow_per_node: Duration::from_secs(30),
            chat_turn: Duration::from_secs(60),
        }
    }
}

impl Deadlines {
    /// The allowance of a workflow of `nodes` nodes: base + per node × nodes (saturating).
    pub fn workflow(&self, nodes: usize) -> Duration {
        let per_node = self.workflow_per_node.saturating_mul(u32::try_from(nodes).unwrap_or(u32::MAX));
        self.workflow_base.saturating_add(per_node)
    }
}

/// A point in time by which some work must be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Deadline {
    at: OffsetDateTime,
}

impl Deadline {
    /// The deadline `budget` after `now`.
    pub fn after(now: OffsetDateTime, budget: Duration) -> Self {
        Self { at: later(now, budget) }
    }

    /// A deadline at a given instant.
    pub fn at(at: OffsetDateTime) -> Self {
        Self { at }
    }

    /// When it falls.
    pub fn instant(&self) -> OffsetDateTime {
        self.at
    }

    /// The earlier of two deadlines (an inner limit never outlives the outer one).
    #[must_use]
    pub fn min(self, other: Self) -> Self {
        if other.at < self.at { other } else { self }
    }

    /// Time left at `now` (zero once passed).
    pub fn remaining(&self, now: OffsetDateTime) -> Duration {
        Duration::try_from(self.at - now).unwrap_or(Duration::ZERO)
    }

    /// Whether the deadline has passed at `now`.
    pub fn is_past(&self, now: OffsetDateTime) -> bool {
        now >= self.at
    }

    /// `deadline_exceeded` naming `what` once the deadline has passed.
    pub fn check(&self, now: OffsetDateTime, what: &str) -> Result<(), Rejection> {
        if !self.is_past(now) {
            return Ok(());
        }
        let late = Duration::try_from(now - self.at).unwrap_or(Duration::ZERO);
        Err(Rejection::new(Code::DeadlineExceeded, format!("the deadline of `{what}` has passed"))
            .with_detail(json!({"deadline": what, "late_ms": u64::try_from(late.as_millis()).unwrap_or(u64::MAX)})))
    }
}

/// The latest instant the arithmetic saturates to.
fn far_future() -> OffsetDateTime {
    time::Date::MAX.midnight().assume_utc()
}

/// `at + d`, saturating far in the future instead of overflowing.
pub fn later(at: OffsetDateTime, d: Duration) -> OffsetDateTime {
    time::Duration::try_from(d).ok().and_then(|d| at.checked_add(d)).unwrap_or_else(far_future)
}

/// `at - d`, saturating far in the past instead of overflowing.
pub fn earlier(at: OffsetDateTime, d: Duration) -> OffsetDateTime {
    time::Duration::try_from(d)
        .ok()
        .and_then(|d| at.checked_sub(d))
        .unwrap_or_else(|| time::Date::MIN.midnight().assume_utc())
}

/// Serde for a [`Duration`] written as whole milliseconds.
pub mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes whole milliseconds.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    /// Reads whole milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}
