//! Row mapping shared by the SQLite and PostgreSQL stores: both keep the same columns with the
//! same meaning (text, 64-bit integers, JSON as text, instants as unix nanoseconds), so one
//! function per record reads a row through [`Columns`], one conversion per value type writes it,
//! and a stored value that does not decode is `Corrupt` on both.

use std::fmt::Display;

use bridle_core::approval::{ApprovalRequest, ApprovalStatus, Grant};
use bridle_core::audit::{AuditEvent, AuditRecord, Decision, EventKind, Timings};
use bridle_core::contract::ApprovalLevel;
use bridle_core::decision::DecisionRecord;
use bridle_core::job::{Job, JobStatus, StoredOutcome};
use bridle_core::plan::PlanHash;
use bridle_core::ports::{StoreError, StoreResult};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sqlx::Row;
use sqlx::postgres::PgRow;
use time::{OffsetDateTime, UtcOffset};

use super::db_err;

/// An instant as unix nanoseconds; instants outside 1677–2262 cannot be stored.
pub(crate) fn to_nanos(what: impl Display, t: OffsetDateTime) -> StoreResult<i64> {
    i64::try_from(t.unix_timestamp_nanos())
        .map_err(|_| StoreError::Unavailable(format!("{what} `{t}` is outside the storable range")))
}

/// Unix nanoseconds back to an instant (UTC).
pub(crate) fn from_nanos(what: impl Display, n: i64) -> StoreResult<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(n))
        .map_err(|e| StoreError::Corrupt(format!("{what} {n} is not a valid instant: {e}")))
}

/// A count for an integer column; values above `i64::MAX` are refused, never wrapped.
pub(crate) fn to_i64(what: impl Display, v: u64) -> StoreResult<i64> {
    i64::try_from(v).map_err(|_| StoreError::Unavailable(format!("{what} {v} exceeds the largest storable integer")))
}

/// An integer column back to a count.
pub(crate) fn to_u64(what: impl Display, v: i64) -> StoreResult<u64> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("{what} is negative ({v})")))
}

/// JSON text of a value for a TEXT column.
pub(crate) fn to_json<T: Serialize + ?Sized>(what: &str, value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Unavailable(format!("cannot encode {what}: {e}")))
}

/// A value from a JSON TEXT column.
pub(crate) fn from_json<T: DeserializeOwned>(what: &str, text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// The stable name of a serde unit-variant enum (`"tool_call"`), for a TEXT column.
pub(crate) fn enum_name<T: Serialize>(what: &str, value: T) -> StoreResult<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        _ => Err(StoreError::Unavailable(format!("{what} has no stable name"))),
    }
}

/// A serde unit-variant enum back from its stable name.
pub(crate) fn parse_enum<T: DeserializeOwned>(what: &str, name: &str) -> StoreResult<T> {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .map_err(|_| StoreError::Corrupt(format!("unknown {what} `{name}`")))
}

/// Typed access to a row's columns by name.
pub trait Columns {
    /// A text column.
    fn text(&self, column: &str) -> StoreResult<String>;
    /// A nullable text column.
    fn opt_text(&self, column: &str) -> StoreResult<Option<String>>;
    /// A 64-bit integer column.
    fn int(&self, column: &str) -> StoreResult<i64>;
    /// A nullable 64-bit integer column.
    fn opt_int(&self, column: &str) -> StoreResult<Option<i64>>;
}

macro_rules! columns_for {
    ($row:ty) => {
        impl Columns for $row {
            fn text(&self, column: &str) -> StoreResult<String> {
                self.try_get(column).map_err(db_err)
            }
            fn opt_text(&self, column: &str) -> StoreResult<Option<String>> {
                self.try_get(column).map_err(db_err)
            }
            fn int(&self, column: &str) -> StoreResult<i64> {
                self.try_get(column).map_err(db_err)
            }
            fn opt_int(&self, column: &str) -> StoreResult<Option<i64>> {
                self.try_get(column).map_err(db_err)
            }
        }
    };
}

columns_for!(PgRow);

/// An approval request from the columns `id, tenant, plan, plan_hash, requester, level, status,
/// grants, grant_count, rejection_reason, created_at, expires_at, consumed_by`.
pub(crate) fn approval(row: &impl Columns) -> StoreResult<ApprovalRequest> {
    let id = row.text("id")?;
    let what = |field: &str| format!("approval `{id}` {field}");
    let level = row.text("level")?;
    let status = row.text("status")?;
    let grants: Vec<Grant> = from_json(&what("grants"), &row.text("grants")?)?;
    let count = to_u64(what("grant_count"), row.int("grant_count")?)?;
    if u64::try_from(grants.len()).ok() != Some(count) {
        return Err(StoreError::Corrupt(format!("{} {count} does not match its grants", what("grant_count"))));
    }
    Ok(ApprovalRequest {
        tenant: row.text("tenant")?,
        plan: from_json(&what("plan"), &row.text("plan")?)?,
        plan_hash: PlanHash(row.text("plan_hash")?),
        requester: row.text("requester")?,
        level: ApprovalLevel::parse(&level)
            .ok_or_else(|| StoreError::Corrupt(format!("{} `{level}` is unknown", what("level"))))?,
        status: ApprovalStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("{} `{status}` is unknown", what("status"))))?,
        grants,
        rejection_reason: row.opt_text("rejection_reason")?,
        created_at: from_nanos(what("created_at"), row.int("created_at")?)?,
        expires_at: from_nanos(what("expires_at"), row.int("expires_at")?)?,
        consumed_by: row.opt_text("consumed_by")?,
        context: row.opt_text("context")?.map(|c| from_json::<Value>(&what("context"), &c)).transpose()?,
        id,
    })
}

/// A job from the columns `id, tenant, subject, idempotency_key, plan, plan_hash, executor,
/// approval_id, status, outcome, created_at, updated_at`.
pub(crate) fn job(row: &impl Columns) -> StoreResult<Job> {
    let id = row.text("id")?;
    let what = |field: &str| format!("job `{id}` {field}");
    let status = row.text("status")?;
    Ok(Job {
        tenant: row.text("tenant")?,
        subject: row.text("subject")?,
        idempotency_key: row.opt_text("idempotency_key")?,
        plan: from_json(&what("plan"), &row.text("plan")?)?,
        plan_hash: PlanHash(row.text("plan_hash")?),
        executor: row.text("executor")?,
        approval_id: row.opt_text("approval_id")?,
        status: JobStatus::parse(&status)
            .ok_or_else(|| StoreError::Corrupt(format!("{} `{status}` is unknown", what("status"))))?,
        outcome: row
            .opt_text("outcome")?
            .map(|o| StoredOutcome::from_text(o).map_err(|e| StoreError::Corrupt(format!("{}: {e}", what("outcome")))))
            .transpose()?,
        created_at: from_nanos(what("created_at"), row.int("created_at")?)?,
        updated_at: from_nanos(what("updated_at"), row.int("updated_at")?)?,
        id,
    })
}

/// A decision record from its columns.
pub(crate) fn decision(row: &impl Columns) -> StoreResult<DecisionRecord> {
    let id = row.text("decision_id")?;
    let what = |field: &str| format!("decision `{id}` {field}");
    let json = |field: &str| -> StoreResult<Value> { from_json(&what(field), &row.text(field)?) };
    let count = |field: &str| -> StoreResult<u64> { to_u64(what(field), row.int(field)?) };
    Ok(DecisionRecord {
        pipeline_run_id: row.text("pipeline_run_id")?,
        tenant: row.text("tenant")?,
        agent: row.text("agent")?,
        model: row.text("model")?,
        input: json("input")?,
        output: json("output")?,
        prompt_tokens: count("prompt_tokens")?,
        completion_tokens: count("completion_tokens")?,
        latency_ms: count("latency_ms")?,
        harness_checks: json("harness_checks")?,
        final_verdict: row.text("final_verdict")?,
        created_at: from_nanos(what("created_at"), row.int("created_at")?)?,
        prompt_hash: row.opt_text("prompt_hash")?,
        tool_schema_hash: row.opt_text("tool_schema_hash")?,
        policy_version: row.opt_text("policy_version")?,
        decision_id: id,
    })
}

/// An audit event from its columns; every field the hash covers is its own column.
pub(crate) fn audit_event(row: &impl Columns) -> StoreResult<AuditEvent> {
    let tenant = row.text("tenant")?;
    let seq = to_u64(format!("audit seq of `{tenant}`"), row.int("seq")?)?;
    let what = |field: &str| format!("audit event {seq} of `{tenant}` {field}");
    let count = |field: &str| -> StoreResult<u64> { to_u64(what(field), row.int(field)?) };
    let offset = row.int("at_offset")?;
    let offset = i32::try_from(offset)
        .ok()
        .and_then(|s| UtcOffset::from_whole_seconds(s).ok())
        .ok_or_else(|| StoreError::Corrupt(format!("{} {offset} is not an offset", what("at_offset"))))?;
    let at = from_nanos(what("at"), row.int("at")?)?
        .checked_to_offset(offset)
        .ok_or_else(|| StoreError::Corrupt(format!("{} is out of range", what("at"))))?;
    let kind: EventKind = parse_enum("audit event kind", &row.text("kind")?)?;
    let decision: Option<Decision> = row.opt_text("decision")?.map(|d| parse_enum("audit decision", &d)).transpose()?;
    let record = AuditRecord {
        kind,
        call_id: row.text("call_id")?,
        at,
        subject: row.text("subject")?,
        run_id: row.text("run_id")?,
        incident: row.text("incident")?,
        tool: row.text("tool")?,
        policy_version: row.text("policy_version")?,
        plan_hash: row.opt_text("plan_hash")?,
        executor_identity: row.opt_text("executor_identity")?,
        approval_id: row.opt_text("approval_id")?,
        approver: row.opt_text("approver")?,
        decision,
        code: row.opt_text("code")?,
        reason: row.opt_text("reason")?,
        timings: Timings {
            total_us: count("total_us")?,
            policy_us: count("policy_us")?,
            adapter_us: count("adapter_us")?,
        },
        auth: row.opt_text("auth")?.map(|a| parse_enum("audit auth", &a)).transpose()?,
        versions: bridle_core::audit::Versions {
            agent_id: row.opt_text("agent_id")?,
            model: row.opt_text("model")?,
            prompt_hash: row.opt_text("prompt_hash")?,
            tool_schema_hash: row.opt_text("tool_schema_hash")?,
            agent_source: row.opt_text("agent_source")?.map(|s| parse_enum("audit agent source", &s)).transpose()?,
        },
        tenant: tenant.clone(),
    };
    Ok(AuditEvent {
        seq,
        record,
        evidence_digest: row.opt_text("evidence_digest")?,
        prev_hash: row.text("prev_hash")?,
        hash: row.text("hash")?,
    })
}

/// A run from the columns `tenant, run_id, subject, agent, opened_at, last_call_at, calls, state`.
pub(crate) fn run(row: &impl Columns) -> StoreResult<bridle_core::runs::RunRecord> {
    let run_id = row.text("run_id")?;
    // Messages are formatted only on failure: this runs at every admission.
    let state = row.text("state")?;
    Ok(bridle_core::runs::RunRecord {
        tenant: row.text("tenant")?,
        subject: row.text("subject")?,
        agent: row.opt_text("agent")?,
        opened_at: from_nanos(format_args!("run `{run_id}` opened_at"), row.int("opened_at")?)?,
        last_call_at: from_nanos(format_args!("run `{run_id}` last_call_at"), row.int("last_call_at")?)?,
        calls: to_u64(format_args!("run `{run_id}` calls"), row.int("calls")?)?,
        state: bridle_core::runs::RunState::parse(&state)
            .ok_or_else(|| StoreError::Corrupt(format!("run `{run_id}` state `{state}` is unknown")))?,
        run_id,
    })
}

/// A kill switch from the columns `scope_tenant, scope_agent, reason, set_by, set_at` (`''`
/// stands for "every").
pub(crate) fn kill_switch(row: &impl Columns) -> StoreResult<bridle_core::kill::KillSwitch> {
    let any = |s: String| if s.is_empty() { None } else { Some(s) };
    let scope =
        bridle_core::kill::KillScope { tenant: any(row.text("scope_tenant")?), agent: any(row.text("scope_agent")?) };
    Ok(bridle_core::kill::KillSwitch {
        reason: row.text("reason")?,
        set_by: row.text("set_by")?,
        set_at: from_nanos(format!("kill switch {} set_at", scope.describe()), row.int("set_at")?)?,
        scope,
    })
}

/// The stored form of a kill scope's parts (`''` for "every").
pub(crate) fn scope_columns(scope: &bridle_core::kill::KillScope) -> (&str, &str) {
    (scope.tenant.as_deref().unwrap_or(""), scope.agent.as_deref().unwrap_or(""))
}

/// Columns of an action-history row, in select order.
pub(crate) const ACTION_COLUMNS: &str = "tenant, job_id, tool, diagnosis, equipment_class, equipment, executed_at, \
     outcome, outcome_source, rated_by, note, rated_at";

/// An executed action from [`ACTION_COLUMNS`].
pub(crate) fn action(row: &impl Columns) -> StoreResult<bridle_core::history::ActionRecord> {
    use bridle_core::history::{Outcome, OutcomeSource, Rating};
    let job_id = row.text("job_id")?;
    let what = |field: &str| format!("action of job `{job_id}` {field}");
    let rating = match (row.opt_text("outcome")?, row.opt_text("outcome_source")?, row.opt_int("rated_at")?) {
        (Some(outcome), Some(source), Some(at)) => Some(Rating {
            outcome: Outcome::parse(&outcome)
                .ok_or_else(|| StoreError::Corrupt(format!("{} `{outcome}` is unknown", what("outcome"))))?,
            source: OutcomeSource::parse(&source)
                .ok_or_else(|| StoreError::Corrupt(format!("{} `{source}` is unknown", what("outcome_source"))))?,
            rated_by: row.opt_text("rated_by")?.unwrap_or_default(),
            note: row.opt_text("note")?,
            rated_at: from_nanos(what("rated_at"), at)?,
        }),
        (None, None, None) => None,
        _ => return Err(StoreError::Corrupt(format!("{} is half-written", what("rating")))),
    };
    Ok(bridle_core::history::ActionRecord {
        tenant: row.text("tenant")?,
        tool: row.text("tool")?,
        diagnosis: row.text("diagnosis")?,
        equipment_class: row.text("equipment_class")?,
        equipment: row.text("equipment")?,
        executed_at: from_nanos(what("executed_at"), row.int("executed_at")?)?,
        rating,
        job_id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_round_trip_to_the_nanosecond() -> StoreResult<()> {
        let t = time::macros::datetime!(2026-03-04 05:06:07.123456789 +02:00);
        let back = from_nanos("t", to_nanos("t", t)?)?;
        assert_eq!(back, t);
        assert_eq!(back.offset(), time::UtcOffset::UTC);
        assert!(to_nanos("t", time::macros::datetime!(2300-01-01 00:00 UTC)).is_err());
        Ok(())
    }

    #[test]
    fn counts_never_wrap() {
        assert_eq!(to_i64("n", 5).ok(), Some(5));
        assert!(to_i64("n", u64::MAX).is_err());
        assert!(to_u64("n", -1).is_err());
    }
}
