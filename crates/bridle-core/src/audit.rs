//! Audit events and their per-tenant hash chain.
//!
//! Every tool call appends one `tool_call` event, accepted or not; approval requests, grants and
//! rejections are events of their own kinds. Each event's hash covers its body and the previous
//! event's hash, so any edit, insertion or deletion breaks the chain at a nameable link.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::plan::canonical_value_bytes;

/// The hash before a tenant's first event.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What an event records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// One tool call and its verdict.
    ToolCall,
    /// A pending approval request was created.
    ApprovalRequested,
    /// An approver granted a request.
    ApprovalGranted,
    /// An approver rejected a request.
    ApprovalRejected,
}

impl EventKind {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ToolCall => "tool_call",
            Self::ApprovalRequested => "approval_requested",
            Self::ApprovalGranted => "approval_granted",
            Self::ApprovalRejected => "approval_rejected",
        }
    }
}

/// How a tool call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The adapter ran it and it succeeded.
    Executed,
    /// Refused (or failed) with a code.
    Rejected,
    /// Dry run: decided, nothing executed.
    DryRun,
    /// Answered from the idempotency store without running anything.
    Replayed,
}

/// Microsecond timings of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Timings {
    /// Whole gate.
    pub total_us: u64,
    /// Policy evaluation.
    pub policy_us: u64,
    /// Adapter calls (state reads and the execution).
    pub adapter_us: u64,
}

/// The body of an audit event (everything the hash covers except the link itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Kind of event.
    pub kind: EventKind,
    /// Call id (also the tracing span's), or the approval id for approval events.
    pub call_id: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Tenant (chain key).
    pub tenant: String,
    /// Subject acting (requester, or approver for grants).
    pub subject: String,
    /// Run id.
    pub run_id: String,
    /// Incident id.
    pub incident: String,
    /// Tool named by the call.
    pub tool: String,
    /// Policy version that decided.
    pub policy_version: String,
    /// Plan hash, when the call got that far.
    pub plan_hash: Option<String>,
    /// Executor identity used, when it ran.
    pub executor_identity: Option<String>,
    /// Approval involved.
    pub approval_id: Option<String>,
    /// Approver(s) of that approval.
    pub approver: Option<String>,
    /// Verdict (tool calls).
    pub decision: Option<Decision>,
    /// Reject code, when rejected.
    pub code: Option<String>,
    /// Reason in words.
    pub reason: Option<String>,
    /// Timings.
    pub timings: Timings,
}

/// A stored event: its body, its place in the tenant's chain and its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// Position in the tenant's chain, from 1.
    pub seq: u64,
    /// Body.
    #[serde(flatten)]
    pub record: AuditRecord,
    /// Hash of the previous event of the tenant (or [`GENESIS`]).
    pub prev_hash: String,
    /// Hash of this event.
    pub hash: String,
}

#[derive(Serialize)]
struct Hashed<'a> {
    seq: u64,
    prev_hash: &'a str,
    record: &'a AuditRecord,
}

/// The hash of an event at `seq` after `prev_hash`.
pub fn link_hash(seq: u64, prev_hash: &str, record: &AuditRecord) -> String {
    // INVARIANT: the canonical form of a plain struct of strings and integers always exists.
    // AuditRecord holds strings, integers and unit enums only, so its JSON value is lossless.
    let bytes = serde_json::to_value(Hashed { seq, prev_hash, record })
        .ok()
        .and_then(|v| canonical_value_bytes(&v).ok())
        .unwrap_or_default();
    let mut h = Sha256::new();
    h.update(&bytes);
    hex::encode(h.finalize())
}

impl AuditEvent {
    /// Chains `record` after the event with `prev` (seq, hash), or at the start.
    pub fn chain(record: AuditRecord, prev: Option<(u64, &str)>) -> Self {
        let (seq, prev_hash) = match prev {
            Some((s, h)) => (s + 1, h.to_owned()),
            None => (1, GENESIS.to_owned()),
        };
        let hash = link_hash(seq, &prev_hash, &record);
        Self { seq, record, prev_hash, hash }
    }
}

/// The first broken link of a chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokenLink {
    /// Tenant whose chain broke.
    pub tenant: String,
    /// Sequence number where it broke.
    pub seq: u64,
    /// What is wrong.
    pub problem: String,
}

/// Checks a tenant's chain one event at a time (so long chains can be read in pages).
#[derive(Debug, Clone)]
pub struct ChainVerifier {
    tenant: String,
    next_seq: u64,
    prev: String,
}

impl ChainVerifier {
    /// A verifier expecting the tenant's first event.
    pub fn new(tenant: &str) -> Self {
        Self { tenant: tenant.to_owned(), next_seq: 1, prev: GENESIS.to_owned() }
    }

    /// Checks the next event.
    pub fn push(&mut self, e: &AuditEvent) -> Result<(), BrokenLink> {
        let broken = |seq: u64, problem: String| BrokenLink { tenant: self.tenant.clone(), seq, problem };
        if e.seq != self.next_seq {
            return Err(broken(self.next_seq, format!("event missing (next stored seq is {})", e.seq)));
        }
        if e.record.tenant != self.tenant {
            return Err(broken(e.seq, "event belongs to another tenant".to_owned()));
        }
        if e.prev_hash != self.prev {
            return Err(broken(e.seq, "prev_hash does not match the previous event's hash".to_owned()));
        }
        if link_hash(e.seq, &e.prev_hash, &e.record) != e.hash {
            return Err(broken(e.seq, "hash does not match the event's content".to_owned()));
        }
        self.prev.clone_from(&e.hash);
        self.next_seq += 1;
        Ok(())
    }

    /// Events verified so far.
    pub fn verified(&self) -> u64 {
        self.next_seq - 1
    }
}

/// Verifies one tenant's events, given in `seq` order; returns the number checked.
pub fn verify_chain<'a>(tenant: &str, events: impl IntoIterator<Item = &'a AuditEvent>) -> Result<u64, BrokenLink> {
    let mut v = ChainVerifier::new(tenant);
    for e in events {
        v.push(e)?;
    }
    Ok(v.verified())
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn record(i: u64) -> AuditRecord {
        AuditRecord {
            kind: EventKind::ToolCall,
            call_id: format!("c-{i}"),
            at: datetime!(2026-01-01 00:00 UTC),
            tenant: "tenant-a".into(),
            subject: "requester-1".into(),
            run_id: "run-101".into(),
            incident: "inc-42".into(),
            tool: "scale_replicas".into(),
            policy_version: "v1".into(),
            plan_hash: None,
            executor_identity: None,
            approval_id: None,
            approver: None,
            decision: Some(Decision::Rejected),
            code: Some("policy_denied".into()),
            reason: None,
            timings: Timings::default(),
        }
    }

    fn chain(n: u64) -> Vec<AuditEvent> {
        let mut out: Vec<AuditEvent> = Vec::new();
        for i in 0..n {
            let prev = out.last().map(|e| (e.seq, e.hash.as_str()));
            let next = AuditEvent::chain(record(i), prev);
            out.push(next);
        }
        out
    }

    #[test]
    fn intact_chain_verifies() {
        assert_eq!(verify_chain("tenant-a", &chain(5)), Ok(5));
    }

    #[test]
    fn edit_delete_and_reorder_are_named() {
        let mut c = chain(5);
        if let Some(e) = c.get_mut(2) {
            e.record.code = Some("ok".into());
        }
        assert_eq!(verify_chain("tenant-a", &c).map_err(|b| b.seq), Err(3));
        let mut c = chain(5);
        c.remove(1);
        assert_eq!(verify_chain("tenant-a", &c).map_err(|b| b.seq), Err(2));
        let mut c = chain(5);
        c.swap(3, 4);
        assert_eq!(verify_chain("tenant-a", &c).map_err(|b| b.seq), Err(4));
    }
}
