//! Audit events and their per-tenant hash chain.
//!
//! Every tool call appends one `tool_call` event, accepted or not; approval requests, grants and
//! rejections are events of their own kinds. Each event's hash covers its body and the previous
//! event's hash, so any edit, insertion or deletion breaks the chain at a nameable link.
//!
//! Raw evidence (today the free-text `reason`) is kept apart from the chained metadata: an event
//! with evidence carries `evidence_digest`, the SHA-256 of the evidence's canonical JSON, and its
//! hash covers the metadata and that digest instead of the text. Retention can then drop the
//! evidence ([`AuditEvent::prune_evidence`]) and the chain still verifies; evidence that is
//! present must match its digest. Events without a digest (written before evidence was split,
//! or with no evidence at all) hash their whole body as before.

mod canonical;
pub mod head;
pub mod siem;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

pub use crate::agents::Versions;

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
    /// A change is about to reach its adapter: written before the side effect, so a change
    /// whose process dies right after it still has its event (call id: the job id).
    JobDispatched,
    /// Reconciliation moved a job whose outcome was unknown (`bridle jobs reconcile`; call id:
    /// the job id).
    JobSettled,
    /// A chat turn was blocked by the guard: its input before any model call, or its answer.
    ChatBlocked,
    /// A chat turn was stopped by a limit (tool calls, deadline, budget, circuit, model error).
    ChatStopped,
    /// An operator chat turn was stored in its conversation (call id: the turn id; run: the
    /// conversation's; reason: the turn's number, status and tool calls, never the text).
    ChatTurn,
    /// A registered model moved forward one stage after a passing validation (call id: a fresh
    /// id; tool: the model's name; plan hash: the model file's SHA-256; reason: stages and
    /// agreement).
    ModelPromoted,
    /// A kill switch was turned on (call id: the scope in words; reason: why).
    KillSwitchSet,
    /// A kill switch was lifted.
    KillSwitchLifted,
    /// An executed action got its outcome (an operator's rating or an observation; call id:
    /// the job id).
    ActionOutcome,
    /// Feedback on a decision was stored (call id: the feedback id; reason: the rating, score
    /// and source; the comment itself is not repeated).
    FeedbackCollected,
    /// An operator pinned an upstream MCP tool's definition as reviewed (`bridle gateway pin`;
    /// call id: `pin:UPSTREAM/TOOL`; tool: the Bridle tool; plan hash: the new pin; reason: the
    /// pin it replaces).
    GatewayPinned,
}

impl EventKind {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ToolCall => "tool_call",
            Self::ApprovalRequested => "approval_requested",
            Self::ApprovalGranted => "approval_granted",
            Self::ApprovalRejected => "approval_rejected",
            Self::JobDispatched => "job_dispatched",
            Self::JobSettled => "job_settled",
            Self::ChatBlocked => "chat_blocked",
            Self::ChatStopped => "chat_stopped",
            Self::ChatTurn => "chat_turn",
            Self::ModelPromoted => "model_promoted",
            Self::KillSwitchSet => "kill_switch_set",
            Self::KillSwitchLifted => "kill_switch_lifted",
            Self::ActionOutcome => "action_outcome",
            Self::FeedbackCollected => "feedback_collected",
            Self::GatewayPinned => "gateway_pinned",
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

impl Decision {
    /// Stable name (as serialized).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Executed => "executed",
            Self::Rejected => "rejected",
            Self::DryRun => "dry_run",
            Self::Replayed => "replayed",
        }
    }
}

/// How the operator behind an approval event authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperatorAuth {
    /// A verified bearer token (the API, the console, `bridle approvals --token`): the subject
    /// is the token's.
    Token,
    /// `bridle approvals --as P`: a principal of the configuration named on an embedded
    /// (SQLite or in-memory) store, with no credential.
    As,
}

impl OperatorAuth {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Token => "token",
            Self::As => "as",
        }
    }
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
    /// How the operator of an approval grant or rejection authenticated (absent on every other
    /// event, and on events written before it existed, which therefore hash as they did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<OperatorAuth>,
    /// Agent, model, prompt and tool-schema versions (absent on events written before they
    /// existed, which therefore hash as they did).
    #[serde(flatten, default)]
    pub versions: Versions,
}

impl AuditRecord {
    /// What the event means to an operator, in a few words: `"executed"`, `"waiting for
    /// approval"` (a call that needs one: its `decision` stays `rejected`, its `code`
    /// `approval_required`), `"refused: policy_denied"`, `"approved"` … The API adds it to every
    /// event as `display`; `decision` and `code` stay what they are.
    pub fn display(&self) -> String {
        let code = self.code.as_deref();
        let refused = || format!("refused: {}", code.unwrap_or("unknown"));
        match self.kind {
            EventKind::ToolCall => match (self.decision, code) {
                (Some(Decision::Executed), _) => "executed".to_owned(),
                (Some(Decision::Replayed), _) => "replayed (an earlier answer)".to_owned(),
                (Some(Decision::DryRun), None) => "dry run: would run".to_owned(),
                (Some(Decision::DryRun), Some(c)) => format!("dry run: would be refused ({c})"),
                (_, Some("approval_required")) => "waiting for approval".to_owned(),
                (_, Some("human_choice_required")) => "waiting for a human choice".to_owned(),
                (_, Some("in_progress")) => "in progress".to_owned(),
                _ => refused(),
            },
            EventKind::ApprovalRequested => "approval requested".to_owned(),
            EventKind::ApprovalGranted => "approved".to_owned(),
            EventKind::ApprovalRejected => "rejected by an approver".to_owned(),
            EventKind::JobDispatched => "change dispatched".to_owned(),
            EventKind::JobSettled => match (self.decision, code) {
                (Some(Decision::Executed), _) => "change settled: applied".to_owned(),
                (_, Some(c)) => format!("change settled: {c}"),
                _ => "change settled".to_owned(),
            },
            EventKind::ChatBlocked => "chat message blocked".to_owned(),
            EventKind::ChatStopped => "chat turn stopped".to_owned(),
            EventKind::ChatTurn => "chat turn".to_owned(),
            EventKind::ModelPromoted => "model promoted".to_owned(),
            EventKind::KillSwitchSet => "kill switch set".to_owned(),
            EventKind::KillSwitchLifted => "kill switch lifted".to_owned(),
            EventKind::ActionOutcome => "action outcome recorded".to_owned(),
            EventKind::FeedbackCollected => "feedback recorded".to_owned(),
            EventKind::GatewayPinned => "gateway tool pinned".to_owned(),
        }
    }
}

/// A stored event: its body, its place in the tenant's chain and its hash.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    /// Position in the tenant's chain, from 1.
    pub seq: u64,
    /// Body.
    #[serde(flatten)]
    pub record: AuditRecord,
    /// SHA-256 of the event's evidence when it had any (see the module docs); the hash covers
    /// this digest, not the evidence, so the evidence can be pruned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_digest: Option<String>,
    /// Hash of the previous event of the tenant (or [`GENESIS`]).
    pub prev_hash: String,
    /// Hash of this event.
    pub hash: String,
}

/// The SHA-256 of a record's evidence, or `None` when it has none: the evidence is the fields
/// retention may drop, and the digest is over `{"reason": …}` in RFC 8785 form; a field added
/// later joins that object only when present, so digests of older events stay valid.
pub fn evidence_digest(record: &AuditRecord) -> Option<String> {
    let reason = record.reason.as_deref()?;
    let mut bytes = Vec::with_capacity(reason.len() + 16);
    canonical::evidence(reason, &mut bytes);
    Some(sha256_hex(&bytes))
}

fn sha256_hex(bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(bytes);
    hex_digest(h)
}

/// The lowercase hex of a finished SHA-256.
fn hex_digest(h: Sha256) -> String {
    let mut out = [0u8; 64];
    // 32 bytes always fit 64 hex digits, which are ASCII.
    let _ = hex::encode_to_slice(h.finalize(), &mut out);
    out.iter().map(|&b| char::from(b)).collect()
}

/// The hash of an event at `seq` after `prev_hash` whose whole body is hashed (no evidence
/// digest).
pub fn link_hash(seq: u64, prev_hash: &str, record: &AuditRecord) -> String {
    event_hash(seq, prev_hash, record, None)
}

/// The hash of an event at `seq` after `prev_hash`: over the whole body when `digest` is
/// `None`, else over the metadata (the body without its evidence) and `evidence_digest`.
pub fn event_hash(seq: u64, prev_hash: &str, record: &AuditRecord, digest: Option<&str>) -> String {
    let mut bytes = Vec::with_capacity(1024);
    canonical::hashed(seq, prev_hash, record, digest, &mut bytes);
    sha256_hex(&bytes)
}

/// A record made ready to be chained: its evidence digest and the canonical bytes of its body
/// computed before the chain's head is known, so that appending it only links and hashes (the
/// SQLite writer chains every caller's events on one thread; this work stays with the callers).
#[derive(Debug, Clone)]
pub struct Unchained {
    record: AuditRecord,
    evidence_digest: Option<String>,
    body: Vec<u8>,
}

impl Unchained {
    /// Prepares `record` as it is, so mask it first.
    pub fn new(record: AuditRecord) -> Self {
        let evidence_digest = evidence_digest(&record);
        let mut body = Vec::with_capacity(1024);
        canonical::body(&record, evidence_digest.as_deref(), &mut body);
        Self { record, evidence_digest, body }
    }

    /// The record.
    pub fn record(&self) -> &AuditRecord {
        &self.record
    }

    /// Chains the record after the event with `prev` (seq, hash), or at the start: the bytes
    /// [`event_hash`] covers, hashed without writing the body again.
    pub fn chain(self, prev: Option<(u64, &str)>) -> AuditEvent {
        let (seq, prev_hash) = match prev {
            Some((s, h)) => (s + 1, h.to_owned()),
            None => (1, GENESIS.to_owned()),
        };
        let mut edge = Vec::with_capacity(128);
        canonical::head(&prev_hash, &mut edge);
        let mut h = Sha256::new();
        h.update(&edge);
        h.update(&self.body);
        edge.clear();
        canonical::tail(seq, &mut edge);
        h.update(&edge);
        AuditEvent { seq, record: self.record, evidence_digest: self.evidence_digest, prev_hash, hash: hex_digest(h) }
    }
}

impl AuditEvent {
    /// Chains `record` after the event with `prev` (seq, hash), or at the start.
    pub fn chain(record: AuditRecord, prev: Option<(u64, &str)>) -> Self {
        Unchained::new(record).chain(prev)
    }

    /// Drops the event's evidence if its hash does not cover it (it has a digest); returns
    /// whether anything was dropped. The chain still verifies afterwards.
    pub fn prune_evidence(&mut self) -> bool {
        if self.evidence_digest.is_none() || self.record.reason.is_none() {
            return false;
        }
        self.record.reason = None;
        true
    }

    /// Whether this event's evidence was dropped by retention.
    pub fn evidence_pruned(&self) -> bool {
        self.evidence_digest.is_some() && self.record.reason.is_none()
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
        if let Some(digest) = &e.evidence_digest
            && let Some(actual) = evidence_digest(&e.record)
            && actual != *digest
        {
            return Err(broken(e.seq, "evidence does not match its digest".to_owned()));
        }
        if event_hash(e.seq, &e.prev_hash, &e.record, e.evidence_digest.as_deref()) != e.hash {
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
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
pub(crate) mod tests {
    use super::*;
    use time::macros::datetime;

    /// A rejected `scale_replicas` call of `tenant-a` (also the SIEM tests' fixture).
    pub(crate) fn record(i: u64) -> AuditRecord {
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
            auth: None,
            versions: Versions::default(),
        }
    }

    #[test]
    fn display_says_what_a_call_came_to() {
        let with = |decision, code: Option<&str>| AuditRecord { decision, code: code.map(str::to_owned), ..record(1) };
        assert_eq!(record(1).display(), "refused: policy_denied");
        assert_eq!(with(Some(Decision::Rejected), Some("approval_required")).display(), "waiting for approval");
        assert_eq!(with(Some(Decision::Executed), None).display(), "executed");
        assert_eq!(
            with(Some(Decision::DryRun), Some("schema_rejected")).display(),
            "dry run: would be refused (schema_rejected)"
        );
        assert_eq!(with(None, None).display(), "refused: unknown");
        let granted = AuditRecord { kind: EventKind::ApprovalGranted, ..with(None, None) };
        assert_eq!(granted.display(), "approved");
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

    fn with_reasons(n: u64) -> Vec<AuditEvent> {
        let mut out: Vec<AuditEvent> = Vec::new();
        for i in 0..n {
            let mut r = record(i);
            r.reason = Some(format!("`replicas` {i} is above the maximum"));
            let prev = out.last().map(|e| (e.seq, e.hash.as_str()));
            out.push(AuditEvent::chain(r, prev));
        }
        out
    }

    #[test]
    fn versions_are_hashed_only_when_present() {
        let old = chain(1);
        let mut r = record(0);
        r.versions = Versions::default();
        assert_eq!(AuditEvent::chain(r.clone(), None).hash, old[0].hash);
        r.versions.prompt_hash = Some("abc".into());
        let new = AuditEvent::chain(r, None);
        assert_ne!(new.hash, old[0].hash);
        let mut edited = new.clone();
        edited.record.versions.prompt_hash = Some("abd".into());
        assert_eq!(verify_chain("tenant-a", [&new]), Ok(1));
        assert!(verify_chain("tenant-a", [&edited]).is_err());
    }

    #[test]
    fn operator_auth_is_hashed_only_when_present() {
        let old = chain(1);
        let mut r = record(0);
        r.auth = None;
        assert_eq!(AuditEvent::chain(r.clone(), None).hash, old[0].hash, "older events hash as before");
        r.auth = Some(OperatorAuth::As);
        let new = AuditEvent::chain(r, None);
        assert_ne!(new.hash, old[0].hash);
        assert!(serde_json::to_string(&new).unwrap().contains(r#""auth":"as""#));
        assert!(!serde_json::to_string(&old[0]).unwrap().contains("auth"));
        let mut edited = new.clone();
        edited.record.auth = Some(OperatorAuth::Token);
        assert_eq!(verify_chain("tenant-a", [&new]), Ok(1));
        assert!(verify_chain("tenant-a", [&edited]).is_err(), "`as` cannot be relabelled `token`");
    }

    #[test]
    fn pruned_evidence_keeps_the_chain_valid() {
        let mut c = with_reasons(4);
        assert!(c.iter().all(|e| e.evidence_digest.is_some()));
        for e in c.iter_mut().take(2) {
            assert!(e.prune_evidence());
            assert!(e.evidence_pruned());
        }
        assert_eq!(verify_chain("tenant-a", &c), Ok(4));
        // Events without evidence hash as before and have nothing to prune.
        let mut plain = chain(2);
        assert!(plain.iter().all(|e| e.evidence_digest.is_none()));
        assert!(plain.iter_mut().all(|e| !e.prune_evidence()));
        assert_eq!(plain[0].hash, link_hash(1, GENESIS, &plain[0].record));
    }

    #[test]
    fn edited_evidence_or_digest_is_named() {
        let mut c = with_reasons(3);
        c[1].record.reason = Some("nothing to see".into());
        let b = verify_chain("tenant-a", &c).unwrap_err();
        assert_eq!((b.seq, b.problem.as_str()), (2, "evidence does not match its digest"));
        let mut c = with_reasons(3);
        c[2].evidence_digest = None;
        assert_eq!(verify_chain("tenant-a", &c).map_err(|b| b.seq), Err(3));
        let mut c = with_reasons(3);
        c[0].record.reason = None;
        c[0].evidence_digest = Some(GENESIS.into());
        assert_eq!(verify_chain("tenant-a", &c).map_err(|b| b.seq), Err(1));
    }
}
