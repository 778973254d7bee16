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
    pub outcome: Option<StoredOutcome>,
    /// Created at.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last transition.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A job's stored answer: a call outcome as JSON text, written once when the job settles and
/// parsed only when a keyed retry or the reconciler reads it back. It serializes as the JSON
/// value it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOutcome(String);

impl StoredOutcome {
    /// `value` as JSON text (`null` if serde cannot write it as JSON).
    pub fn of<T: Serialize + ?Sized>(value: &T) -> Self {
        Self(serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned()))
    }

    /// Text read back from a store, checked to be one JSON value.
    pub fn from_text(text: String) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<serde::de::IgnoredAny>(&text)?;
        Ok(Self(text))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The answer read back as `T`.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(&self.0)
    }

    /// The answer as a JSON value (`null` for text that is not one, which no constructor makes).
    pub fn value(&self) -> Value {
        self.parse().unwrap_or(Value::Null)
    }
}

impl Serialize for StoredOutcome {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StoredOutcome {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(|v| Self::of(&v))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_stored_outcome_is_the_json_value_it_holds() {
        let answer = json!({"status": "ok", "result": {"replicas": 3, "note": "a \"quoted\" word"}, "job_id": null});
        let stored = StoredOutcome::of(&answer);
        assert_eq!(stored.value(), answer);
        assert_eq!(serde_json::to_value(&stored).ok(), Some(answer.clone()));
        let back: Result<StoredOutcome, _> = serde_json::from_value(answer.clone());
        assert_eq!(back.ok().map(|b| b.value()), Some(answer));
        assert_eq!(StoredOutcome::from_text(stored.as_str().to_owned()).ok(), Some(stored));
        for bad in ["", "{", "1 2", "{\"a\":}"] {
            assert!(StoredOutcome::from_text(bad.to_owned()).is_err(), "{bad:?}");
        }
    }
}
