//! Reconciling jobs whose outcome is unknown: ask the adapter what happened and settle the job.
//! Nothing is ever re-executed here.

use bridle_core::job::{Job, JobStatus};
use bridle_core::ports::{AdapterError, Outcome};
use bridle_core::{Code, Rejection};
use serde::Serialize;
use serde_json::Value;

use crate::gate::output::Guarded;
use crate::gate::{CallOutcome, Gate, GateError, OutputReport, Verdict};

/// What reconciliation did to one job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settled {
    /// Job id.
    pub job_id: String,
    /// Status before.
    pub from: JobStatus,
    /// Status after (unchanged when the adapter still cannot tell).
    pub to: JobStatus,
}

impl Gate {
    /// Settles every job left `unknown`, asking the adapter for each outcome.
    pub async fn reconcile(&self) -> Result<Vec<Settled>, GateError> {
        let mut out = Vec::new();
        for job in self.stores.jobs.unsettled().await? {
            if job.status != JobStatus::Unknown {
                continue;
            }
            let to = match self.adapter.outcome(&job).await {
                Ok(Outcome::Applied(result)) => {
                    let (verdict, output) = self.guard_settled(&job, result);
                    self.settle(&job, JobStatus::Succeeded, verdict, output).await?
                }
                Ok(Outcome::NotApplied) => {
                    let r = Rejection::new(Code::AdapterFailed, "the adapter reports the change was not applied");
                    self.settle(&job, JobStatus::Failed, Verdict::Rejected { rejection: r }, None).await?
                }
                Ok(Outcome::Unknown) | Err(AdapterError::Timeout | AdapterError::Lost(_)) => JobStatus::Unknown,
                Err(e) => {
                    tracing::warn!(job_id = %job.id, error = %e, "outcome query failed");
                    JobStatus::Unknown
                }
            };
            out.push(Settled { job_id: job.id.clone(), from: job.status, to });
        }
        Ok(out)
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

    async fn settle(
        &self,
        job: &Job,
        to: JobStatus,
        verdict: Verdict,
        output: Option<OutputReport>,
    ) -> Result<JobStatus, GateError> {
        let mut outcome =
            job.outcome.as_ref().and_then(|o| serde_json::from_value::<CallOutcome>(o.clone()).ok()).unwrap_or_else(
                || CallOutcome {
                    call_id: String::new(),
                    tool: job.plan.tool.clone(),
                    verdict: verdict.clone(),
                    plan_hash: Some(job.plan_hash.clone()),
                    level: None,
                    approval_id: job.approval_id.clone(),
                    job_id: Some(job.id.clone()),
                    executor_identity: Some(job.executor.clone()),
                    idempotent_replay: false,
                    output: None,
                },
            );
        outcome.verdict = verdict;
        outcome.output = output;
        let stored = serde_json::to_value(&outcome).unwrap_or(Value::Null);
        let moved =
            self.stores.jobs.transition(&job.id, JobStatus::Unknown, to, Some(&stored), self.clock.now()).await?;
        Ok(if moved { to } else { job.status })
    }
}
