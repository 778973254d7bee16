//! What one gate call collects on its way through the steps, turned into its outcome and its
//! audit record at the end.

use std::time::Instant;

use bridle_core::audit::{AuditRecord, Decision, EventKind, Timings, Versions};
use bridle_core::contract::ApprovalLevel;
use bridle_core::plan::PlanHash;
use bridle_core::{Principal, RunContext};
use time::OffsetDateTime;

use super::output::OutputReport;
use super::{CallOutcome, Verdict, elapsed_us};

pub(crate) struct Trace {
    pub call_id: String,
    pub tool: String,
    pub now: OffsetDateTime,
    started: Instant,
    pub plan_hash: Option<PlanHash>,
    pub level: Option<ApprovalLevel>,
    pub executor: Option<String>,
    pub approval_id: Option<String>,
    pub approver: Option<String>,
    pub job_id: Option<String>,
    pub policy_us: u64,
    pub adapter_us: u64,
    pub idempotent_replay: bool,
    /// What step 11 did to the result.
    pub output: Option<OutputReport>,
    /// Agent, model, prompt and tool-schema versions of the call.
    pub versions: Versions,
    /// What an approval request created for this call shows the approver (the action history).
    pub approval_context: Option<serde_json::Value>,
    /// The executed job's settling move, stored with this call's audit event.
    pub settle: Option<super::execute::Settle>,
    /// The run the call was made in (minted by the gate when the caller sent none).
    pub run_id: String,
    /// Whether the call holds a lease on its run's concurrency (released when it ends).
    pub leased: bool,
}

impl Trace {
    pub fn start(now: OffsetDateTime, tool: &str, run_id: &str, versions: Versions) -> Self {
        Self {
            call_id: uuid::Uuid::now_v7().to_string(),
            // Registered names are at most 64 characters; anything longer is unknown anyway.
            tool: bridle_core::verdict::clip(tool, 64),
            now,
            started: Instant::now(),
            plan_hash: None,
            level: None,
            executor: None,
            approval_id: None,
            approver: None,
            job_id: None,
            policy_us: 0,
            adapter_us: 0,
            idempotent_replay: false,
            output: None,
            versions,
            approval_context: None,
            settle: None,
            run_id: run_id.to_owned(),
            leased: false,
        }
    }

    /// Time since the call started.
    pub fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    pub fn outcome(&self, verdict: Verdict) -> CallOutcome {
        CallOutcome {
            tool_call_id: None,
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            run_id: self.run_id.clone(),
            verdict,
            plan_hash: self.plan_hash.clone(),
            level: self.level,
            approval_id: self.approval_id.clone(),
            job_id: self.job_id.clone(),
            executor_identity: self.executor.clone(),
            idempotent_replay: self.idempotent_replay,
            output: self.output.clone(),
        }
    }

    /// The call's timings, also recorded in `bridle_gate_step_seconds{step}`: `policy` (Cedar),
    /// `adapter` (state reads and the execution) and `rest` (parsing, schema, guard, store).
    fn timings(&self) -> Timings {
        let t = Timings { total_us: elapsed_us(self.started), policy_us: self.policy_us, adapter_us: self.adapter_us };
        let rest = t.total_us.saturating_sub(t.policy_us).saturating_sub(t.adapter_us);
        for (step, us) in [("policy", t.policy_us), ("adapter", t.adapter_us), ("rest", rest)] {
            #[allow(clippy::cast_precision_loss)] // microseconds of one call: far below 2^52
            metrics::histogram!("bridle_gate_step_seconds", "step" => step).record(us as f64 / 1e6);
        }
        t
    }

    pub fn record(
        &self,
        principal: &Principal,
        run: &RunContext,
        policy_version: &str,
        decision: Decision,
        outcome: &CallOutcome,
    ) -> AuditRecord {
        let rejection = match &outcome.verdict {
            Verdict::Rejected { rejection } => Some(rejection),
            Verdict::DryRun { would_reject } => would_reject.as_ref(),
            Verdict::Ok { .. } => None,
        };
        AuditRecord {
            kind: EventKind::ToolCall,
            call_id: self.call_id.clone(),
            at: self.now,
            tenant: principal.tenant.clone(),
            subject: principal.subject.clone(),
            run_id: run.run_id.clone(),
            incident: run.incident.clone(),
            tool: self.tool.clone(),
            policy_version: policy_version.to_owned(),
            plan_hash: self.plan_hash.as_ref().map(|h| h.0.clone()),
            executor_identity: self.executor.clone(),
            approval_id: self.approval_id.clone(),
            approver: self.approver.clone(),
            decision: Some(decision),
            code: rejection.map(|r| r.code.as_str().to_owned()),
            // An executed call's reason says what step 11 masked (kinds and counts, never text).
            reason: rejection.map_or_else(
                || outcome.output.as_ref().and_then(OutputReport::audit_note),
                |r| Some(r.message.clone()),
            ),
            timings: self.timings(),
            auth: None,
            versions: self.versions.clone(),
        }
    }
}
