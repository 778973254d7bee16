//! Jobs: the durable record of one change (or keyed call) moving through execution.
//!
//! `reserved → dispatched → succeeded | failed | unknown`; a job is reserved in the same
//! transaction that consumes its approval, and each transition is stored before the next step.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use crate::plan::{Plan, PlanHash};

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Approval consumed (if any); nothing sent yet.
    Reserved,
    /// Sent to the adapter; outcome not yet recorded.
    Dispatched,
    /// The adapter confirmed the effect.
    Succeeded,
    /// The adapter refused or failed; no effect.
    Failed,
    /// The effect may or may not have happened; reconcile before anything else.
    Unknown,
}

impl JobStatus {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Reserved => "reserved",
            Self::Dispatched => "dispatched",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Unknown => "unknown",
        }
    }

    /// Parses a stable name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "reserved" => Some(Self::Reserved),
            "dispatched" => Some(Self::Dispatched),
            "succeeded" => Some(Self::Succeeded),
            "failed" => Some(Self::Failed),
            "unknown" => Some(Self::Unknown),
            _ => None,
        }
    }

    /// Whether no further transition will happen.
    pub const fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }
}

/// A job record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Job id.
    pub id: String,
    /// Tenant.
    pub tenant: String,
    /// Requester.
    pub subject: String,
    /// Client-chosen idempotency key, unique per tenant and subject.
    pub idempotency_key: Option<String>,
    /// The plan executed.
    pub plan: Plan,
    /// Its hash.
    pub plan_hash: PlanHash,
    /// Executor identity used.
    pub executor: String,
    /// Approval consumed for it.
    pub approval_id: Option<String>,
    /// Status.
    pub status: JobStatus,
    /// The gate's stored answer (result or rejection) once final.
    pub outcome: Option<Value>,
    /// Created at.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last transition.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}
