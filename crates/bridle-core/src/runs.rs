//! Runs as the server keeps them: a run id is bound to its tenant and the subject that opened it,
//! and every call is counted against the run's limits (`[limits]`). Pure rules and records; the
//! stores apply [`judge`] inside one atomic step per call (the `RunLedger` port).
//!
//! A run opens at its first call; from then on only its subject may call in it (another
//! subject's call naming it is refused with `run_not_owned`, never merged). Its deadline counts
//! from that first call; its call count includes refused calls (a model looping on invalid calls
//! is stopped too); its concurrency counts calls in flight, each holding a lease that expires on
//! its own if the process holding it dies.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;
use time::OffsetDateTime;

use crate::budget::BudgetKind;
use crate::code::Code;
use crate::kill::KillSwitch;
use crate::verdict::Rejection;

/// The limits one call's run is held to; `None`: unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunLimits {
    /// Calls per run (`run_calls`).
    pub calls: Option<u64>,
    /// Time from the run's first call (`run_deadline_ms`).
    pub deadline: Option<Duration>,
    /// Calls of one run in flight at once (`run_concurrency`).
    pub concurrency: Option<u32>,
}

impl RunLimits {
    /// Each limit of `over` that is set replaces this one's.
    #[must_use]
    pub fn overridden_by(self, over: &RunLimits) -> Self {
        Self {
            calls: over.calls.or(self.calls),
            deadline: over.deadline.or(self.deadline),
            concurrency: over.concurrency.or(self.concurrency),
        }
    }
}

/// `[limits]`: the defaults, then per-tenant and per-agent overrides, key by key (an agent's
/// table wins over its tenant's, which wins over the defaults).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitSettings {
    /// Keys directly under `[limits]`.
    pub defaults: RunLimits,
    /// `[limits.tenants.NAME]`.
    pub tenants: BTreeMap<String, RunLimits>,
    /// `[limits.agents.NAME]`.
    pub agents: BTreeMap<String, RunLimits>,
}

impl LimitSettings {
    /// The limits of a call of `tenant` made for `agent`.
    pub fn for_call(&self, tenant: &str, agent: Option<&str>) -> RunLimits {
        let mut limits = self.defaults;
        if let Some(over) = self.tenants.get(tenant) {
            limits = limits.overridden_by(over);
        }
        if let Some(over) = agent.and_then(|a| self.agents.get(a)) {
            limits = limits.overridden_by(over);
        }
        limits
    }

    /// Whether any limit is configured anywhere.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Where a run stands. A run is `open` until a call is refused for its deadline (`expired`) or
/// its spent call budget (`exhausted`); the record keeps that, the refusal itself is decided by
/// the counters and the limits in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Calls are accepted.
    Open,
    /// A call was refused: the run's calls are spent.
    Exhausted,
    /// A call was refused: the run's deadline passed.
    Expired,
}

impl RunState {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Exhausted => "exhausted",
            Self::Expired => "expired",
        }
    }

    /// Parses a stable name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "open" => Some(Self::Open),
            "exhausted" => Some(Self::Exhausted),
            "expired" => Some(Self::Expired),
            _ => None,
        }
    }
}

/// A run's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Tenant.
    pub tenant: String,
    /// Run id.
    pub run_id: String,
    /// The subject that opened it; the only one who may call in it.
    pub subject: String,
    /// The agent of its first call, if any.
    pub agent: Option<String>,
    /// Its first call.
    #[serde(with = "time::serde::rfc3339")]
    pub opened_at: OffsetDateTime,
    /// Its latest admitted call.
    #[serde(with = "time::serde::rfc3339")]
    pub last_call_at: OffsetDateTime,
    /// Calls admitted so far.
    pub calls: u64,
    /// Where it stands.
    pub state: RunState,
}

impl RunRecord {
    /// The record a first call opens (its own call not counted yet).
    pub fn open(tenant: &str, run_id: &str, subject: &str, agent: Option<&str>, now: OffsetDateTime) -> Self {
        Self {
            tenant: tenant.to_owned(),
            run_id: run_id.to_owned(),
            subject: subject.to_owned(),
            agent: agent.map(str::to_owned),
            opened_at: now,
            last_call_at: now,
            calls: 0,
            state: RunState::Open,
        }
    }

    /// When the run's deadline passes under `limits`, if it has one.
    pub fn deadline(&self, limits: &RunLimits) -> Option<OffsetDateTime> {
        let d = limits.deadline?;
        let d = time::Duration::try_from(d).unwrap_or(time::Duration::MAX);
        Some(self.opened_at.checked_add(d).unwrap_or(OffsetDateTime::new_utc(time::Date::MAX, time::Time::MIDNIGHT)))
    }
}

/// Why a run refused a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRefusal {
    /// The run belongs to another subject.
    NotOwner,
    /// The run's calls are spent.
    CallsSpent {
        /// Calls used.
        used: u64,
        /// The limit.
        limit: u64,
    },
    /// The run's deadline has passed.
    DeadlinePassed {
        /// When it passed.
        deadline: OffsetDateTime,
    },
    /// As many calls of the run as allowed are in flight.
    Busy {
        /// Calls in flight.
        in_flight: u64,
        /// The limit.
        limit: u32,
    },
    /// A kill switch covers the call ([`RunAdmit::kill_check`]); nothing was counted.
    Killed(KillSwitch),
}

impl RunRefusal {
    /// The state a refusal leaves the run in, when it changes it.
    pub const fn state(&self) -> Option<RunState> {
        match self {
            Self::CallsSpent { .. } => Some(RunState::Exhausted),
            Self::DeadlinePassed { .. } => Some(RunState::Expired),
            Self::NotOwner | Self::Busy { .. } | Self::Killed(_) => None,
        }
    }

    /// The call's rejection. A refusal for another subject's run names neither that subject nor
    /// anything else of the run: the id is all the caller gave.
    pub fn rejection(&self, run_id: &str) -> Rejection {
        match self {
            Self::NotOwner => Rejection::new(
                Code::RunNotOwned,
                format!("run `{run_id}` belongs to another subject: use a run id of your own, or send none to get one"),
            ),
            Self::CallsSpent { used, limit } => {
                Rejection::new(Code::BudgetExhausted, format!("run `{run_id}` used all {limit} of its tool calls"))
                    .with_detail(json!({"budget": BudgetKind::Calls.as_str(), "used": used, "limit": limit}))
            }
            Self::DeadlinePassed { deadline } => {
                let at = deadline.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
                Rejection::new(Code::DeadlineExceeded, format!("run `{run_id}` passed its deadline ({at})"))
                    .with_detail(json!({"deadline": at}))
            }
            Self::Busy { in_flight, limit } => Rejection::new(
                Code::TooManyConcurrentCalls,
                format!(
                    "run `{run_id}` already has {in_flight} calls in flight (at most {limit}); retry when one ends"
                ),
            )
            .with_detail(json!({"in_flight": in_flight, "limit": limit})),
            Self::Killed(switch) => switch.rejection(),
        }
    }
}

/// The rule applied before a call is counted: the caller owns the run, its deadline has not
/// passed and it has calls left. Concurrency is the store's to count (its leases).
pub fn judge(record: &RunRecord, subject: &str, limits: &RunLimits, now: OffsetDateTime) -> Result<(), RunRefusal> {
    if record.subject != subject {
        return Err(RunRefusal::NotOwner);
    }
    if let Some(deadline) = record.deadline(limits)
        && now >= deadline
    {
        return Err(RunRefusal::DeadlinePassed { deadline });
    }
    if let Some(limit) = limits.calls
        && record.calls >= limit
    {
        return Err(RunRefusal::CallsSpent { used: record.calls, limit });
    }
    Ok(())
}

/// One call asking its run to admit it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAdmit<'a> {
    /// Tenant.
    pub tenant: &'a str,
    /// Run id.
    pub run_id: &'a str,
    /// The caller's subject.
    pub subject: &'a str,
    /// The call's agent (recorded when the call opens the run).
    pub agent: Option<&'a str>,
    /// The gate's clock.
    pub now: OffsetDateTime,
    /// The limits in force for this call.
    pub limits: RunLimits,
    /// With a concurrency limit: the lease this call takes while it is in flight.
    pub lease: Option<Lease<'a>>,
    /// Whether the admission also checks the kill switches covering the call (`tenant`,
    /// `agent`), in the same statement or step, and refuses a covered call
    /// ([`RunRefusal::Killed`]) with nothing counted: the gate's per-call kill check and the
    /// run's admission in one round trip to the store.
    pub kill_check: bool,
    /// With a check: the admission also reads the taint of the run, or of its actor within a
    /// window, and answers it with the admitted call ([`Admitted::taint`]), so a call that can
    /// escalate on taint reads it in the same round trip.
    pub taint_check: Option<TaintCheck>,
}

/// The taint an admission reads for its call: the run's, else the actor's recorded at or after
/// `since` (as [`crate::ports::RunFlags::tainted`] reads them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaintCheck {
    /// `agent:NAME` or `subject:SUB` (see [`crate::ports::TaintMark::actor`]); `None`: the run's
    /// taint only.
    pub actor: Option<String>,
    /// The start of the actor's taint window.
    pub since: OffsetDateTime,
}

/// An admitted call: the run's record with the call counted, and the taint its admission read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Admitted {
    /// The run after the call was counted.
    pub record: RunRecord,
    /// With [`RunAdmit::taint_check`]: the run's or actor's taint, if any; else `None`.
    pub taint: Option<crate::ports::Taint>,
}

/// A call's hold on one of its run's concurrency slots, released when the call ends and void
/// after `until` (so a process that dies mid-call frees its slot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease<'a> {
    /// The call's id.
    pub call_id: &'a str,
    /// When the lease lapses on its own.
    pub until: OffsetDateTime,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn t(s: i64) -> OffsetDateTime {
        OffsetDateTime::from_unix_timestamp(1_700_000_000 + s).unwrap()
    }

    #[test]
    fn overrides_go_key_by_key_agent_over_tenant_over_defaults() {
        let settings = LimitSettings {
            defaults: RunLimits { calls: Some(100), deadline: Some(Duration::from_secs(60)), concurrency: None },
            tenants: BTreeMap::from([(
                "t".to_owned(),
                RunLimits { calls: Some(50), concurrency: Some(4), ..RunLimits::default() },
            )]),
            agents: BTreeMap::from([("a".to_owned(), RunLimits { calls: Some(5), ..RunLimits::default() })]),
        };
        assert_eq!(settings.for_call("other", None).calls, Some(100));
        let tenant = settings.for_call("t", None);
        assert_eq!(
            (tenant.calls, tenant.concurrency, tenant.deadline),
            (Some(50), Some(4), Some(Duration::from_secs(60)))
        );
        let agent = settings.for_call("t", Some("a"));
        assert_eq!((agent.calls, agent.concurrency), (Some(5), Some(4)));
        assert!(LimitSettings::default().is_empty() && !settings.is_empty());
    }

    #[test]
    fn judge_refuses_another_subject_then_a_passed_deadline_then_spent_calls() {
        let limits = RunLimits { calls: Some(2), deadline: Some(Duration::from_secs(10)), concurrency: None };
        let mut r = RunRecord::open("t", "r", "alice", None, t(0));
        assert_eq!(judge(&r, "alice", &limits, t(1)), Ok(()));
        assert_eq!(judge(&r, "bob", &limits, t(1)), Err(RunRefusal::NotOwner));
        r.calls = 2;
        assert_eq!(judge(&r, "alice", &limits, t(1)), Err(RunRefusal::CallsSpent { used: 2, limit: 2 }));
        assert_eq!(judge(&r, "alice", &limits, t(10)), Err(RunRefusal::DeadlinePassed { deadline: t(10) }));
        // Without limits only ownership counts.
        assert_eq!(judge(&r, "alice", &RunLimits::default(), t(1_000_000)), Ok(()));
    }

    #[test]
    fn refusals_have_their_codes_and_a_foreign_run_names_nothing_of_its_owner() {
        let r = RunRefusal::NotOwner.rejection("run-9");
        assert_eq!(r.code, Code::RunNotOwned);
        assert!(!r.message.contains("alice"));
        assert_eq!(RunRefusal::CallsSpent { used: 3, limit: 3 }.rejection("r").detail["budget"], "calls");
        assert_eq!(RunRefusal::Busy { in_flight: 2, limit: 2 }.rejection("r").code, Code::TooManyConcurrentCalls);
        assert_eq!(RunState::parse(RunState::Expired.as_str()), Some(RunState::Expired));
    }
}
