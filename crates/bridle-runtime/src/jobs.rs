//! Reconciling jobs whose outcome is unknown: ask the adapter what happened and settle the job.
//! Nothing is ever re-executed here.
//!
//! A job left `dispatched` or `reserved` by a process that died (kill -9, power loss) is
//! treated as abandoned once it is older than its tool's timeout plus a grace period: a live
//! gate always records the adapter's answer (or `unknown`) within the tool's timeout. An
//! abandoned `dispatched` job becomes `unknown` and is asked about like any other; an abandoned
//! `reserved` job was never sent (dispatch is stored before the adapter is called), so it fails.
//! Every job whose status moves is audited as a `job_settled` event of its tenant's chain, in the
//! same transaction as the move.

use std::sync::Arc;
use std::time::Duration;

use bridle_core::audit::{AuditRecord, Decision, EventKind, Timings};
use bridle_core::config::Config;
use bridle_core::job::{Job, JobStatus, StoredOutcome};
use bridle_core::ports::{Adapter, AdapterError, Clock, Outcome};
use bridle_core::{Code, Rejection};
use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;

use crate::gate::output::{Guarded, OutputGuard};
use crate::gate::{CallOutcome, GateError, OutputReport, Verdict};
use crate::store::Stores;

/// Default time past a tool's timeout after which a `dispatched` or `reserved` job is
/// considered abandoned by its process.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(60);

/// What reconciliation did to one job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settled {
    /// Job id.
    pub job_id: String,
    /// The job's tool.
    pub tool: String,
    /// Tenant.
    pub tenant: String,
    /// Status before.
    pub from: JobStatus,
    /// Status after (`unknown` when the adapter still cannot tell).
    pub to: JobStatus,
}

/// The report line of `job` moving to `to`.
fn settled(job: &Job, to: JobStatus) -> Settled {
    Settled { job_id: job.id.clone(), tool: job.plan.tool.clone(), tenant: job.tenant.clone(), from: job.status, to }
}

/// The reconciler over what it needs: the configuration (tool timeouts, versions), the stores,
/// the clock, the adapter it asks and the gate's step 11 for the results it learns. Built beside
/// the gate by [`crate::engine::Engine::builder`].
#[derive(Clone)]
pub struct Reconciler {
    config: Arc<Config>,
    stores: Stores,
    clock: Arc<dyn Clock>,
    adapter: Arc<dyn Adapter>,
    output: Arc<OutputGuard>,
}

impl Reconciler {
    /// A reconciler over these parts (the engine builder's).
    pub(crate) fn new(
        config: Arc<Config>,
        stores: Stores,
        clock: Arc<dyn Clock>,
        adapter: Arc<dyn Adapter>,
        output: Arc<OutputGuard>,
    ) -> Self {
        Self { config, stores, clock, adapter, output }
    }

    /// Settles every job left `unknown`, asking the adapter for each outcome; jobs abandoned
    /// by a dead process are taken up after [`DEFAULT_GRACE`].
    pub async fn reconcile(&self) -> Result<Vec<Settled>, GateError> {
        self.reconcile_with(DEFAULT_GRACE).await
    }

    /// [`Reconciler::reconcile`], taking up `dispatched` and `reserved` jobs older than their tool's
    /// timeout plus `grace` (zero: every such job at once, which is only right when no gate is
    /// running on the store).
    pub async fn reconcile_with(&self, grace: Duration) -> Result<Vec<Settled>, GateError> {
        let mut out = Vec::new();
        for job in self.stores.jobs.unsettled().await? {
            let abandoned = self.abandoned(&job, grace, self.clock.now());
            let (to, verdict, output) = match job.status {
                JobStatus::Unknown => match self.ask(&job).await {
                    Some(answer) => answer,
                    None => {
                        // Still unknown: reported, nothing moves (so nothing is audited).
                        out.push(settled(&job, JobStatus::Unknown));
                        continue;
                    }
                },
                // An abandoned dispatch is asked about as an unknown job; whatever it becomes
                // (`unknown` included) is one move from `dispatched`, conditional on it still
                // being there (its gate may have answered meanwhile).
                JobStatus::Dispatched if abandoned => self.ask(&job).await.unwrap_or((JobStatus::Unknown, None, None)),
                JobStatus::Reserved if abandoned => {
                    let r = Rejection::new(
                        Code::AdapterFailed,
                        "never dispatched: the process stopped after reserving the job, and nothing was sent",
                    );
                    (JobStatus::Failed, Some(Verdict::Rejected { rejection: r }), None)
                }
                _ => continue,
            };
            if !self.settle(&job, to, verdict, output).await? {
                continue; // moved by someone else meanwhile
            }
            out.push(settled(&job, to));
        }
        Ok(out)
    }

    /// Whether `job`'s last transition is older than its tool's timeout plus `grace`; a zero
    /// grace says no gate is running on the store, so every such job is abandoned.
    fn abandoned(&self, job: &Job, grace: Duration, now: OffsetDateTime) -> bool {
        let timeout = self.config.registry.get(&job.plan.tool).map_or(Duration::ZERO, |t| t.timeout);
        let age = now - job.updated_at;
        grace.is_zero() || (age.is_positive() && age.unsigned_abs() >= timeout.saturating_add(grace))
    }

    /// Asks the adapter what became of `job`: the status and answer to settle it with, or
    /// `None` while the adapter cannot tell.
    async fn ask(&self, job: &Job) -> Option<(JobStatus, Option<Verdict>, Option<OutputReport>)> {
        match self.adapter.outcome(&Job { status: JobStatus::Unknown, ..job.clone() }).await {
            Ok(Outcome::Applied(result)) => {
                let (verdict, output) = self.guard_settled(job, result);
                Some((JobStatus::Succeeded, Some(verdict), output))
            }
            Ok(Outcome::NotApplied) => {
                let r = Rejection::new(Code::AdapterFailed, "the adapter reports the change was not applied");
                Some((JobStatus::Failed, Some(Verdict::Rejected { rejection: r }), None))
            }
            Ok(Outcome::Unknown) | Err(AdapterError::Timeout | AdapterError::Lost(_)) => None,
            Err(e) => {
                tracing::warn!(job_id = %job.id, error = %e, "outcome query failed");
                None
            }
        }
    }

    /// Gate step 11 for a result learned by reconciliation (no canary is known here; the run was
    /// tainted before the job was reserved).
    fn guard_settled(&self, job: &Job, result: Value) -> (Verdict, Option<OutputReport>) {
        let untrusted = self.config.registry.get(&job.plan.tool).is_some_and(|t| t.untrusted_output);
        let scope = (job.tenant.as_str(), job.plan.run_id.as_str());
        match self.output.guard(&job.plan.tool, untrusted, scope, None, result) {
            Guarded::Pass(result, report) => (Verdict::Ok { result }, report),
            Guarded::Withheld(rejection) => (Verdict::Rejected { rejection }, None),
        }
    }

    /// Moves `job` from its current status to `to` with the answer a retry will get (`None`:
    /// keep the stored one) and its `job_settled` event, in one transaction; whether it moved.
    async fn settle(
        &self,
        job: &Job,
        to: JobStatus,
        verdict: Option<Verdict>,
        output: Option<OutputReport>,
    ) -> Result<bool, GateError> {
        let stored = verdict.map(|verdict| {
            let mut outcome =
                job.outcome.as_ref().and_then(|o| o.parse::<CallOutcome>().ok()).unwrap_or_else(|| CallOutcome {
                    tool_call_id: None,
                    call_id: String::new(),
                    tool: job.plan.tool.clone(),
                    run_id: job.plan.run_id.clone(),
                    verdict: verdict.clone(),
                    plan_hash: Some(job.plan_hash.clone()),
                    level: None,
                    approval_id: job.approval_id.clone(),
                    job_id: Some(job.id.clone()),
                    executor_identity: Some(job.executor.clone()),
                    idempotent_replay: false,
                    output: None,
                });
            outcome.verdict = verdict;
            outcome.output = output;
            StoredOutcome::of(&outcome)
        });
        // INVARIANT: a job moves with its `job_settled` event, or not at all.
        let event = self.stores.evidence(vec![self.settled_event(job, to)]);
        let now = self.clock.now();
        Ok(self.stores.jobs.transition(&job.id, job.status, to, stored, now, event).await?)
    }

    /// One `job_settled` event in the job's tenant's chain: the job id as call id, the plan, its
    /// approval and executor, and the move in words.
    fn settled_event(&self, job: &Job, to: JobStatus) -> AuditRecord {
        let (decision, code) = match to {
            JobStatus::Succeeded => (Some(Decision::Executed), None),
            JobStatus::Failed => (Some(Decision::Rejected), Some(Code::AdapterFailed)),
            _ => (None, Some(Code::OutcomeUnknown)),
        };
        AuditRecord {
            kind: EventKind::JobSettled,
            call_id: job.id.clone(),
            at: self.clock.now(),
            tenant: job.tenant.clone(),
            subject: job.subject.clone(),
            run_id: job.plan.run_id.clone(),
            incident: job.plan.incident.clone(),
            tool: job.plan.tool.clone(),
            policy_version: self.config.policy.version().to_owned(),
            plan_hash: Some(job.plan_hash.0.clone()),
            executor_identity: Some(job.executor.clone()),
            approval_id: job.approval_id.clone(),
            approver: None,
            decision,
            code: code.map(|c| c.as_str().to_owned()),
            reason: Some(format!("reconciled: {} → {}", job.status.as_str(), to.as_str())),
            timings: Timings::default(),
            auth: None,
            versions: bridle_core::audit::Versions::tools_only(self.config.registry.schema_hash()),
        }
    }
}
