//! In-memory store: every port behind one mutex. For tests, the demo and `sqlite::memory:`-like
//! throwaway runs; nothing survives the process.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard};

mod conversations;
mod governance;
mod runs;

use async_trait::async_trait;
use bridle_core::approval::{self, ApprovalRequest, ApprovalStatus, Grant};
use bridle_core::audit::{AuditEvent, AuditRecord};
use bridle_core::decision::DecisionRecord;
use bridle_core::feedback::{Feedback, FeedbackStore};
use bridle_core::job::{Job, JobStatus};
use bridle_core::models::{ModelEntry, ModelRegistry, Stage};
use bridle_core::plan::PlanHash;
use bridle_core::ports::{
    ActionLedger, ApprovalLedger, Audit, AuditLog, BudgetKind, BudgetStore, Consume, Created, Debit, DecisionLog,
    JobStore, Reserved, StoreError, StoreHealth, StoreResult,
};
use time::OffsetDateTime;

#[derive(Default)]
struct Inner {
    approvals: BTreeMap<(String, String), ApprovalRequest>,
    jobs: BTreeMap<String, Job>,
    keys: HashMap<(String, String, String), String>,
    budgets: HashMap<(String, String, BudgetKind), u64>,
    audit: BTreeMap<String, Vec<AuditEvent>>,
    decisions: Vec<DecisionRecord>,
    taints: HashMap<(String, String), String>,
    actor_taints: HashMap<(String, String), (OffsetDateTime, String)>,
    runs: HashMap<(String, String), runs::MemoryRun>,
    auto_actions: HashMap<(String, String), Vec<OffsetDateTime>>,
    feedback: Vec<Feedback>,
    models: BTreeMap<(String, String), ModelEntry>,
    kills: BTreeMap<bridle_core::kill::KillScope, bridle_core::kill::KillSwitch>,
    actions: BTreeMap<(String, String), bridle_core::history::ActionRecord>,
    conversations: BTreeMap<(String, String), bridle_core::conversation::Conversation>,
    /// The injectable fault: every audit append fails while set.
    fail_audit: bool,
    /// Ids of operator-prepared requests, which never hold their plan's pending slot.
    prepared: std::collections::HashSet<String>,
}

impl Inner {
    /// Seals `records` after their tenants' heads (`crate::audit::seal`: masked, then chained).
    /// Fails before writing anything (a record that cannot be masked, or the injected fault),
    /// so a caller that appends first and changes its state after, under the same lock, changes
    /// both or neither.
    ///
    /// INVARIANT: every state change of this store that carries audit records calls this under
    /// the store's one lock BEFORE it mutates, and mutates only when it succeeded.
    fn append(&mut self, records: Vec<AuditRecord>) -> StoreResult<()> {
        self.append_keeping(records, false).map(drop)
    }

    /// [`Self::append`], returning a copy of the events when `keep` (the audit port's answer;
    /// a state change needs none).
    fn append_keeping(&mut self, records: Vec<AuditRecord>, keep: bool) -> StoreResult<Vec<AuditEvent>> {
        if self.fail_audit && !records.is_empty() {
            return Err(StoreError::Unavailable("audit append failed (injected fault)".to_owned()));
        }
        let mut heads = crate::audit::Heads::new();
        for r in &records {
            if !heads.contains_key(&r.tenant) {
                let last = self.audit.get(&r.tenant).and_then(|chain| chain.last());
                heads.insert(r.tenant.clone(), last.map(|e| (e.seq, e.hash.clone())));
            }
        }
        let events = crate::audit::seal(records, &mut heads)?;
        let mut kept = Vec::with_capacity(if keep { events.len() } else { 0 });
        for event in events {
            if keep {
                kept.push(event.clone());
            }
            match self.audit.get_mut(&event.record.tenant) {
                Some(chain) => chain.push(event),
                None => {
                    self.audit.insert(event.record.tenant.clone(), vec![event]);
                }
            }
        }
        Ok(kept)
    }
}

/// All ports in memory.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The injectable fault: while `fail` is set, every audit append fails, the plain ones and
    /// those of state changes (which then change nothing), as a real store's append can.
    pub fn fail_audit_appends(&self, fail: bool) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.fail_audit = fail;
        }
    }

    fn lock(&self) -> StoreResult<MutexGuard<'_, Inner>> {
        self.inner.lock().map_err(|_| StoreError::Unavailable("memory store lock poisoned".to_owned()))
    }
}

fn key(tenant: &str, id: &str) -> (String, String) {
    (tenant.to_owned(), id.to_owned())
}

#[async_trait]
impl ApprovalLedger for MemoryStore {
    async fn create_request(&self, request: &ApprovalRequest, audit: Audit) -> StoreResult<Created> {
        let mut inner = self.lock()?;
        // INVARIANT: one live pending request per (tenant, plan hash), checked and inserted
        // under the one lock; an expired pending request does not hold the plan.
        let holder = inner.approvals.values().find(|r| {
            r.tenant == request.tenant
                && r.plan_hash == request.plan_hash
                && r.status == ApprovalStatus::Pending
                && r.expires_at > request.created_at
                && !inner.prepared.contains(&r.id)
        });
        if let Some(existing) = holder {
            return Ok(Created::Existing(Box::new(existing.clone())));
        }
        if inner.approvals.keys().any(|(_, id)| id == &request.id) {
            return Err(StoreError::Duplicate(format!("approval `{}`", request.id)));
        }
        inner.append(audit)?;
        inner.approvals.insert(key(&request.tenant, &request.id), request.clone());
        Ok(Created::New)
    }

    async fn create_prepared_request(&self, request: &ApprovalRequest, audit: Audit) -> StoreResult<()> {
        let mut inner = self.lock()?;
        if inner.approvals.keys().any(|(_, id)| id == &request.id) {
            return Err(StoreError::Duplicate(format!("approval `{}`", request.id)));
        }
        inner.append(audit)?;
        inner.prepared.insert(request.id.clone());
        inner.approvals.insert(key(&request.tenant, &request.id), request.clone());
        Ok(())
    }

    async fn get_request(&self, tenant: &str, id: &str) -> StoreResult<Option<ApprovalRequest>> {
        Ok(self.lock()?.approvals.get(&key(tenant, id)).cloned())
    }

    async fn find_for_plan(
        &self,
        tenant: &str,
        plan_hash: &PlanHash,
        now: OffsetDateTime,
    ) -> StoreResult<Option<ApprovalRequest>> {
        let inner = self.lock()?;
        let live = |status| {
            inner
                .approvals
                .values()
                .filter(|r| r.tenant == tenant && &r.plan_hash == plan_hash && r.status == status && r.expires_at > now)
                .min_by_key(|r| r.created_at)
                .cloned()
        };
        Ok(live(ApprovalStatus::Granted).or_else(|| live(ApprovalStatus::Pending)))
    }

    async fn add_grant(
        &self,
        tenant: &str,
        id: &str,
        expected_grants: usize,
        grant: &Grant,
        granted: bool,
        audit: Audit,
    ) -> StoreResult<()> {
        let mut inner = self.lock()?;
        let r =
            inner.approvals.get(&key(tenant, id)).ok_or_else(|| StoreError::NotFound(format!("approval `{id}`")))?;
        if r.status != ApprovalStatus::Pending || r.grants.len() != expected_grants {
            return Err(StoreError::Contention(format!("approval `{id}`")));
        }
        inner.append(audit)?;
        let r = inner
            .approvals
            .get_mut(&key(tenant, id))
            .ok_or_else(|| StoreError::NotFound(format!("approval `{id}`")))?;
        r.grants.push(grant.clone());
        if granted {
            r.status = ApprovalStatus::Granted;
        }
        Ok(())
    }

    async fn reject_request(
        &self,
        tenant: &str,
        id: &str,
        _approver: &str,
        reason: &str,
        audit: Audit,
    ) -> StoreResult<()> {
        let mut inner = self.lock()?;
        let r =
            inner.approvals.get(&key(tenant, id)).ok_or_else(|| StoreError::NotFound(format!("approval `{id}`")))?;
        if r.status != ApprovalStatus::Pending {
            return Err(StoreError::Contention(format!("approval `{id}`")));
        }
        inner.append(audit)?;
        let r = inner
            .approvals
            .get_mut(&key(tenant, id))
            .ok_or_else(|| StoreError::NotFound(format!("approval `{id}`")))?;
        r.status = ApprovalStatus::Rejected;
        r.rejection_reason = Some(reason.to_owned());
        Ok(())
    }

    async fn list_pending(&self, tenant: &str, now: OffsetDateTime) -> StoreResult<Vec<ApprovalRequest>> {
        let inner = self.lock()?;
        let mut out: Vec<_> = inner
            .approvals
            .values()
            .filter(|r| r.tenant == tenant && r.status == ApprovalStatus::Pending && r.expires_at > now)
            .cloned()
            .collect();
        out.sort_by_key(|r| r.created_at);
        Ok(out)
    }

    async fn count_pending(&self, now: OffsetDateTime) -> StoreResult<Vec<(String, u64)>> {
        let inner = self.lock()?;
        let mut counts = std::collections::BTreeMap::<String, u64>::new();
        for r in inner.approvals.values().filter(|r| r.status == ApprovalStatus::Pending && r.expires_at > now) {
            *counts.entry(r.tenant.clone()).or_default() += 1;
        }
        Ok(counts.into_iter().collect())
    }
}

#[async_trait]
impl JobStore for MemoryStore {
    async fn find_by_key(&self, tenant: &str, subject: &str, k: &str) -> StoreResult<Option<Job>> {
        let inner = self.lock()?;
        let id = inner.keys.get(&(tenant.to_owned(), subject.to_owned(), k.to_owned()));
        Ok(id.and_then(|id| inner.jobs.get(id)).cloned())
    }

    async fn reserve(&self, job: &Job, consume: Option<&Consume>, audit: Audit) -> StoreResult<Reserved> {
        let mut inner = self.lock()?;
        let idem = job.idempotency_key.as_ref().map(|k| (job.tenant.clone(), job.subject.clone(), k.clone()));
        if let Some(existing) = idem.as_ref().and_then(|k| inner.keys.get(k)).and_then(|id| inner.jobs.get(id)) {
            return Ok(Reserved::KeyTaken(Box::new(existing.clone())));
        }
        if inner.jobs.contains_key(&job.id) {
            return Err(StoreError::Duplicate(format!("job `{}`", job.id)));
        }
        if let Some(c) = consume {
            let current = inner.approvals.get(&key(&job.tenant, &c.approval_id));
            let usable = current.is_some_and(|r| {
                r.status == ApprovalStatus::Granted && r.plan_hash == c.plan_hash && r.expires_at > c.now
            });
            if !usable {
                let why = approval::bind(&c.approval_id, current, &c.plan_hash, job_level(current), c.now)
                    .err()
                    .unwrap_or_else(|| replayed(&c.approval_id));
                return Ok(Reserved::ApprovalRefused(why));
            }
        }
        inner.append(audit)?;
        if let Some(r) = consume.and_then(|c| inner.approvals.get_mut(&key(&job.tenant, &c.approval_id))) {
            r.status = ApprovalStatus::Consumed;
            r.consumed_by = Some(job.id.clone());
        }
        if let Some(k) = idem {
            inner.keys.insert(k, job.id.clone());
        }
        inner.jobs.insert(job.id.clone(), job.clone());
        Ok(Reserved::Reserved)
    }

    async fn transition(
        &self,
        id: &str,
        from: JobStatus,
        to: JobStatus,
        outcome: Option<bridle_core::job::StoredOutcome>,
        now: OffsetDateTime,
        audit: Audit,
    ) -> StoreResult<bool> {
        let mut inner = self.lock()?;
        if inner.jobs.get(id).is_none_or(|j| j.status != from) {
            return Ok(false);
        }
        inner.append(audit)?;
        match inner.jobs.get_mut(id) {
            Some(j) => {
                j.status = to;
                if outcome.is_some() {
                    j.outcome = outcome;
                }
                j.updated_at = now;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn get_job(&self, id: &str) -> StoreResult<Option<Job>> {
        Ok(self.lock()?.jobs.get(id).cloned())
    }

    async fn unsettled(&self) -> StoreResult<Vec<Job>> {
        let inner = self.lock()?;
        let mut out: Vec<_> = inner.jobs.values().filter(|j| !j.status.is_final()).cloned().collect();
        out.sort_by_key(|j| j.created_at);
        Ok(out)
    }
}

/// The level to re-check a refused consumption at: the request's own.
pub(crate) fn job_level(current: Option<&ApprovalRequest>) -> bridle_core::contract::ApprovalLevel {
    current.map_or(bridle_core::contract::ApprovalLevel::Approval, |r| r.level)
}

/// A consumption refused although the record looked usable: another consumer won.
pub(crate) fn replayed(id: &str) -> bridle_core::Rejection {
    bridle_core::Rejection::new(bridle_core::Code::ApprovalReplayed, format!("approval `{id}` was already used"))
}

#[async_trait]
impl BudgetStore for MemoryStore {
    async fn debit(&self, tenant: &str, run_id: &str, kind: BudgetKind, amount: u64, limit: u64) -> StoreResult<Debit> {
        let mut inner = self.lock()?;
        let used = inner.budgets.entry((tenant.to_owned(), run_id.to_owned(), kind)).or_insert(0);
        match used.checked_add(amount) {
            Some(next) if next <= limit => {
                *used = next;
                Ok(Debit::Accepted { used: next })
            }
            _ => Ok(Debit::Exhausted { used: *used }),
        }
    }

    async fn used(&self, tenant: &str, run_id: &str, kind: BudgetKind) -> StoreResult<u64> {
        Ok(self.lock()?.budgets.get(&(tenant.to_owned(), run_id.to_owned(), kind)).copied().unwrap_or(0))
    }
}

#[async_trait]
impl ActionLedger for MemoryStore {
    async fn admit_auto(
        &self,
        tenant: &str,
        resource: &str,
        at: OffsetDateTime,
        window: std::time::Duration,
        max: u32,
    ) -> StoreResult<bool> {
        let mut inner = self.lock()?;
        let times = inner.auto_actions.entry(key(tenant, resource)).or_default();
        let start = at - window;
        times.retain(|t| *t > start);
        if times.len() >= usize::try_from(max).unwrap_or(usize::MAX) {
            return Ok(false);
        }
        times.push(at);
        Ok(true)
    }

    async fn count_auto(
        &self,
        tenant: &str,
        resource: &str,
        at: OffsetDateTime,
        window: std::time::Duration,
    ) -> StoreResult<u64> {
        let inner = self.lock()?;
        let start = at - window;
        let n = inner
            .auto_actions
            .get(&key(tenant, resource))
            .map_or(0, |times| times.iter().filter(|t| **t > start && **t <= at).count());
        Ok(u64::try_from(n).unwrap_or(u64::MAX))
    }
}

#[async_trait]
impl AuditLog for MemoryStore {
    async fn append(&self, records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>> {
        self.lock()?.append_keeping(records, true)
    }

    async fn tenants(&self) -> StoreResult<Vec<String>> {
        Ok(self.lock()?.audit.keys().cloned().collect())
    }

    async fn events(&self, tenant: &str, after: u64, limit: u32) -> StoreResult<Vec<AuditEvent>> {
        let inner = self.lock()?;
        Ok(inner
            .audit
            .get(tenant)
            .map(|c| c.iter().filter(|e| e.seq > after).take(limit as usize).cloned().collect())
            .unwrap_or_default())
    }

    async fn prune_evidence(&self, before: time::OffsetDateTime) -> StoreResult<u64> {
        let mut inner = self.lock()?;
        let events = inner.audit.values_mut().flatten();
        let pruned = events.filter(|e| e.record.at < before).map(AuditEvent::prune_evidence).filter(|p| *p).count();
        Ok(u64::try_from(pruned).unwrap_or(u64::MAX))
    }
    async fn heads(&self) -> StoreResult<Vec<bridle_core::audit::head::ChainHead>> {
        let inner = self.lock()?;
        Ok(inner
            .audit
            .iter()
            .filter_map(|(tenant, chain)| {
                let last = chain.last()?;
                Some(bridle_core::audit::head::ChainHead {
                    tenant: tenant.clone(),
                    seq: last.seq,
                    hash: last.hash.clone(),
                })
            })
            .collect())
    }
}

/// Ready while its one lock is usable (a panic while holding it poisons it for good).
#[async_trait]
impl StoreHealth for MemoryStore {
    async fn ping(&self) -> StoreResult<()> {
        self.lock().map(|_| ())
    }
}

#[async_trait]
impl DecisionLog for MemoryStore {
    async fn record(&self, decision: &DecisionRecord) -> StoreResult<()> {
        let mut inner = self.lock()?;
        if inner.decisions.iter().any(|d| d.decision_id == decision.decision_id) {
            return Err(StoreError::Duplicate(format!("decision `{}`", decision.decision_id)));
        }
        inner.decisions.push(decision.clone());
        Ok(())
    }

    async fn recent(&self, tenant: &str, limit: u32) -> StoreResult<Vec<DecisionRecord>> {
        let inner = self.lock()?;
        let mut out: Vec<_> = inner.decisions.iter().filter(|d| d.tenant == tenant).cloned().collect();
        out.sort_by_key(|d| std::cmp::Reverse(d.created_at));
        out.truncate(limit as usize);
        Ok(out)
    }
}

#[async_trait]
impl FeedbackStore for MemoryStore {
    async fn add_feedback(&self, feedback: &Feedback, audit: Audit) -> StoreResult<()> {
        let mut inner = self.lock()?;
        if !inner.decisions.iter().any(|d| d.tenant == feedback.tenant && d.decision_id == feedback.decision_id) {
            return Err(StoreError::NotFound(format!("decision `{}`", feedback.decision_id)));
        }
        if inner.feedback.iter().any(|f| f.feedback_id == feedback.feedback_id) {
            return Err(StoreError::Duplicate(format!("feedback `{}`", feedback.feedback_id)));
        }
        inner.append(audit)?;
        inner.feedback.push(feedback.clone());
        Ok(())
    }

    async fn feedback(&self, tenant: &str, decision_id: Option<&str>, limit: u32) -> StoreResult<Vec<Feedback>> {
        let inner = self.lock()?;
        let mut out: Vec<Feedback> = inner
            .feedback
            .iter()
            .filter(|f| f.tenant == tenant && decision_id.is_none_or(|d| f.decision_id == d))
            .cloned()
            .collect();
        out.sort_by_key(|f| std::cmp::Reverse(f.created_at));
        out.truncate(limit as usize);
        Ok(out)
    }
}

#[async_trait]
impl ModelRegistry for MemoryStore {
    async fn register_model(&self, entry: &ModelEntry) -> StoreResult<()> {
        let mut inner = self.lock()?;
        let k = key(&entry.tenant, &entry.name);
        if inner.models.contains_key(&k) {
            return Err(StoreError::Duplicate(format!("model `{}`", entry.name)));
        }
        inner.models.insert(k, entry.clone());
        Ok(())
    }

    async fn model(&self, tenant: &str, name: &str) -> StoreResult<Option<ModelEntry>> {
        Ok(self.lock()?.models.get(&key(tenant, name)).cloned())
    }

    async fn models(&self, tenant: &str) -> StoreResult<Vec<ModelEntry>> {
        Ok(self.lock()?.models.values().filter(|m| m.tenant == tenant).cloned().collect())
    }

    async fn move_stage(&self, updated: &ModelEntry, from: Stage, audit: Audit) -> StoreResult<bool> {
        let mut inner = self.lock()?;
        let k = key(&updated.tenant, &updated.name);
        if inner.models.get(&k).is_none_or(|m| m.stage != from) {
            return Ok(false);
        }
        inner.append(audit)?;
        inner.models.insert(k, updated.clone());
        Ok(true)
    }
}
