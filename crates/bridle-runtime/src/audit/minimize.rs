//! Audit minimization: evidence is masked before any store keeps it, dropped entirely under
//! `[audit] evidence = "metadata_only"`, and pruned by retention once it is old.
//!
//! Masking is not optional: every store turns records into events through [`prepare`] and
//! [`chain`] (the SQL store's `append_in` and the writer's half of `AuditLog::append`, the memory
//! store's `Inner::append` through [`seal`]); only [`prepare`] makes what [`chain`] takes, and it
//! runs [`mask_record`] on each, so a secret or PII in a reason (a rejected argument quoted back,
//! an adapter's error text) is never written in clear, whichever path built the store or
//! appended the records (a plain append or a state change's own). `metadata_only` is dropped by
//! one function too, [`drop_evidence`], for plain appends ([`MetadataOnlyAuditLog`]) and for the
//! records of state changes (`Stores::evidence`). The mask uses the guard's masker (`bridle-core`'s
//! `guard/mask.rs`: built-in secret rules, e-mail, phone numbers, 주민등록번호), not the
//! configured sensitive terms, which are about what reaches a model.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use bridle_core::audit::{AuditEvent, AuditRecord, Unchained};
use bridle_core::config::{AuditSettings, EvidenceMode};
use bridle_core::guard::mask::Masker;
use bridle_core::ports::{AuditLog, StoreError, StoreResult};
use time::OffsetDateTime;

/// How often a running Bridle applies `[audit] retention_days`.
pub const RETENTION_PERIOD: Duration = Duration::from_secs(3600);

/// Built once per process; `None` only if a built-in pattern failed to compile.
static MASKER: LazyLock<Option<Masker>> = LazyLock::new(|| Masker::new().ok());

/// Makes the record's fields bounded (`bridle_core::bounds::bound_record`) and masks its
/// evidence in place. Fails closed (nothing is stored) if the masker could
/// not be built.
pub fn mask_record(record: &mut AuditRecord) -> StoreResult<()> {
    bridle_core::bounds::bound_record(record);
    let Some(reason) = &record.reason else { return Ok(()) };
    let masker =
        MASKER.as_ref().ok_or_else(|| StoreError::Unavailable("the audit evidence masker did not build".to_owned()))?;
    let masked = masker.mask(reason);
    if !masked.findings.is_empty() {
        record.reason = Some(masked.masked);
    }
    Ok(())
}

/// The head of each tenant's chain a batch is appended after: its last (seq, hash), `None`
/// for an empty chain.
pub(crate) type Heads = HashMap<String, Option<(u64, String)>>;

/// Records masked ([`mask_record`]) and prepared for chaining ([`Unchained`]); made only by
/// [`prepare`], so whatever a store chains from it was masked.
pub(crate) struct Prepared(Vec<Unchained>);

impl Prepared {
    /// The tenants of the records, each once, sorted.
    pub(crate) fn tenants(&self) -> BTreeSet<&str> {
        self.0.iter().map(|u| u.record().tenant.as_str()).collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Masks every record and writes what its hash covers, before any chain's lock is taken (the
/// expensive half of [`seal`]); fails on the first record that cannot be masked.
pub(crate) fn prepare(records: Vec<AuditRecord>) -> StoreResult<Prepared> {
    let mut prepared = Vec::with_capacity(records.len());
    for mut record in records {
        mask_record(&mut record)?;
        prepared.push(Unchained::new(record));
    }
    Ok(Prepared(prepared))
}

/// Chains prepared records after their tenants' heads in `heads` (which move along). Every
/// store appends through this, under its write lock and with every tenant of the batch in `heads`.
pub(crate) fn chain(prepared: Prepared, heads: &mut Heads) -> Vec<AuditEvent> {
    let mut events = Vec::with_capacity(prepared.0.len());
    for unchained in prepared.0 {
        let prev =
            heads.get(&unchained.record().tenant).and_then(Option::as_ref).map(|(seq, hash)| (*seq, hash.as_str()));
        let event = unchained.chain(prev);
        heads.insert(event.record.tenant.clone(), Some((event.seq, event.hash.clone())));
        events.push(event);
    }
    events
}

/// Turns `records` into events: [`prepare`], then [`chain`]. It fails before chaining anything
/// (a record that cannot be masked), so a failed append changes nothing.
pub(crate) fn seal(records: Vec<AuditRecord>, heads: &mut Heads) -> StoreResult<Vec<AuditEvent>> {
    Ok(chain(prepare(records)?, heads))
}

/// `[audit] evidence = "metadata_only"`: drops every record's evidence (before it is hashed:
/// such events carry no evidence digest).
pub(crate) fn drop_evidence(records: &mut [AuditRecord]) {
    for r in records {
        r.reason = None;
    }
}

/// An [`AuditLog`] that stores metadata only: every record's evidence is dropped before it is
/// appended (and so before it is hashed: such events carry no evidence digest).
pub struct MetadataOnlyAuditLog {
    inner: Arc<dyn AuditLog>,
}

impl MetadataOnlyAuditLog {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn AuditLog>) -> Self {
        Self { inner }
    }
}

#[async_trait]
impl AuditLog for MetadataOnlyAuditLog {
    async fn append(&self, mut records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>> {
        drop_evidence(&mut records);
        self.inner.append(records).await
    }

    async fn tenants(&self) -> StoreResult<Vec<String>> {
        self.inner.tenants().await
    }

    async fn events(&self, tenant: &str, after: u64, limit: u32) -> StoreResult<Vec<AuditEvent>> {
        self.inner.events(tenant, after, limit).await
    }

    async fn prune_evidence(&self, before: OffsetDateTime) -> StoreResult<u64> {
        self.inner.prune_evidence(before).await
    }
    async fn heads(&self) -> StoreResult<Vec<bridle_core::audit::head::ChainHead>> {
        self.inner.heads().await
    }
}

/// `log` as `[audit] evidence` asks.
pub fn apply(log: Arc<dyn AuditLog>, settings: &AuditSettings) -> Arc<dyn AuditLog> {
    match settings.evidence {
        EvidenceMode::Full => log,
        EvidenceMode::MetadataOnly => Arc::new(MetadataOnlyAuditLog::new(log)),
    }
}

/// Drops the evidence of events older than `retention` before `now`; returns how many lost it.
pub async fn prune_older_than(log: &dyn AuditLog, retention: time::Duration, now: OffsetDateTime) -> StoreResult<u64> {
    log.prune_evidence(now - retention).await
}

/// Applies `[audit] retention_days` now and then every [`RETENTION_PERIOD`], on a task of the
/// current tokio runtime; nothing when no retention is set. A failed prune is logged and tried
/// again next period: retention never stops the gate.
pub fn spawn_retention(log: Arc<dyn AuditLog>, settings: &AuditSettings) -> Option<tokio::task::JoinHandle<()>> {
    let retention = settings.retention?;
    Some(tokio::spawn(async move {
        let mut every = tokio::time::interval(RETENTION_PERIOD);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            match prune_older_than(log.as_ref(), retention, OffsetDateTime::now_utc()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(pruned = n, "audit retention dropped old evidence"),
                Err(e) => tracing::warn!(error = %e, "audit retention failed; retrying next period"),
            }
        }
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use bridle_core::audit::{EventKind, Timings};

    fn record(reason: &str) -> AuditRecord {
        AuditRecord {
            kind: EventKind::ToolCall,
            call_id: "c-1".into(),
            at: OffsetDateTime::UNIX_EPOCH,
            tenant: "t".into(),
            subject: "s".into(),
            run_id: "r".into(),
            incident: String::new(),
            tool: "x".into(),
            policy_version: "v1".into(),
            plan_hash: None,
            executor_identity: None,
            approval_id: None,
            approver: None,
            decision: None,
            code: None,
            reason: Some(reason.into()),
            timings: Timings::default(),
            auth: None,
            versions: bridle_core::audit::Versions::default(),
        }
    }

    #[test]
    fn secrets_and_pii_in_evidence_are_masked() {
        let mut r = record("adapter said: key AKIAABCDEFGHIJKLMNOP for ops@example.com");
        mask_record(&mut r).unwrap();
        let reason = r.reason.unwrap();
        assert!(!reason.contains("AKIAABCDEFGHIJKLMNOP"), "{reason}");
        assert!(!reason.contains("ops@example.com"), "{reason}");
        let mut plain = record("`replicas` 50 is above the maximum 10");
        mask_record(&mut plain).unwrap();
        assert_eq!(plain.reason.as_deref(), Some("`replicas` 50 is above the maximum 10"));
    }
}
