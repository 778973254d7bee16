//! The documented shapes of the stored records the API hands out: approval requests, audit
//! events, decision records and kill switches, mirrored field for field from `bridle-core`
//! (which knows nothing of OpenAPI); never serialized. The suite's `openapi` tests hold them to
//! the real answers.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::outcomes::ApprovalLevel;

/// The exact call an approval binds.
#[derive(Serialize, ToSchema)]
pub struct Plan {
    /// Tool.
    tool: String,
    /// Arguments (any JSON, an object for every call through the API).
    arguments: Value,
    /// Tenant.
    tenant: String,
    /// Requester (the token's subject).
    subject: String,
    /// Incident id (empty when none).
    incident: String,
    /// Run id.
    run_id: String,
}

/// Where an approval request stands.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStatus {
    /// Waiting for grants.
    Pending,
    /// Enough grants; usable once.
    Granted,
    /// Refused by a human.
    Rejected,
    /// Used by a job; never usable again.
    Consumed,
}

/// A tool's risk tier.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RiskTier {
    /// Reads only.
    Read,
    /// Drafts, nothing applied.
    Draft,
    /// A bounded change.
    LimitedChange,
    /// A change that cannot be undone.
    Destructive,
}

/// One approver's grant.
#[derive(Serialize, ToSchema)]
pub struct Grant {
    /// Approver subject.
    approver: String,
    /// Whether the approver held `approval:sign_off` when granting.
    sign_off: bool,
    /// When it was given (RFC 3339).
    #[schema(format = DateTime)]
    at: String,
}

/// An approval request and, once granted, the approval itself.
#[derive(Serialize, ToSchema)]
pub struct ApprovalRequest {
    /// Id.
    id: String,
    /// Tenant.
    tenant: String,
    /// The exact call it binds.
    plan: Plan,
    /// Hex SHA-256 of the plan's canonical form.
    plan_hash: String,
    /// Requester (the plan's subject).
    requester: String,
    /// Level needed.
    level: ApprovalLevel,
    /// Where it stands.
    status: ApprovalStatus,
    /// Grants so far.
    grants: Vec<Grant>,
    /// Why it was rejected.
    #[schema(required = true)]
    rejection_reason: Option<String>,
    /// When it was asked for (RFC 3339).
    #[schema(format = DateTime)]
    created_at: String,
    /// When it expires unanswered (RFC 3339).
    #[schema(format = DateTime)]
    expires_at: String,
    /// The job that used it.
    #[schema(required = true)]
    consumed_by: Option<String>,
    /// Why it was asked for and who proposed it; absent on requests made before it was kept.
    #[schema(required = false, nullable = false)]
    context: Option<ApprovalContext>,
    /// The tool's risk tier, what the approver weighs (the list, the stream and one request;
    /// absent after an approve or reject, or for a tool no longer registered).
    #[schema(nullable = false)]
    risk: Option<RiskTier>,
    /// The tool's title and description (absent like `risk`).
    #[schema(nullable = false)]
    tool_info: Option<ToolInfo>,
    /// Hex SHA-256 of the canonical `{tenant, tool, arguments}`: the same change, whoever asks in
    /// whichever run (the list, the stream and one request).
    #[schema(nullable = false)]
    change_hash: Option<String>,
    /// The other pending requests with the same `change_hash` (the list, the stream and one
    /// request; empty when none).
    #[schema(nullable = false)]
    same_change: Option<Vec<SameChange>>,
}

/// What an approval's context says (`ApprovalRequest.context`; more keys may follow).
#[derive(Serialize, ToSchema)]
pub struct ApprovalContext {
    /// Why approval is needed: each escalation rule that fired, else the tool's default level
    /// (English sentences).
    reasons: Vec<String>,
    /// The same reasons as codes with their values, one per sentence of `reasons`, in order (for
    /// wording them in the reader's language).
    why: Vec<Why>,
    /// Who proposed the call.
    #[schema(nullable = false)]
    agent: Option<ProposingAgent>,
    /// What a pipeline attached (`{pipeline, anomaly, diagnosis, candidates: [{cause,
    /// confidence, evidence}], advice}` for the fab pipeline).
    #[schema(value_type = Object, required = false, nullable = false)]
    evidence: Option<Value>,
    /// The action-history rows that escalated it: `{tool, diagnosis, equipment_class,
    /// failures: [...], successes}`.
    #[schema(value_type = Object, required = false, nullable = false)]
    history: Option<Value>,
}

/// One reason a call needs a human (`bridle_core::level::Reason`).
#[derive(Serialize, ToSchema)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Why {
    /// A parameter is above its `requires_approval_above`.
    AboveLimit { param: String, value: f64, limit: f64 },
    /// The caller said the arguments derive from untrusted content.
    TaintedArguments,
    /// Confidence below `[levels] low_confidence`.
    LowConfidence { confidence: f64, threshold: f64 },
    /// A rule produced the proposal after the model failed.
    Degraded,
    /// Several near-equal candidates: a human must choose.
    Candidates { count: u32 },
    /// A change in a run that has taken in untrusted content (`source` empty when unknown).
    TaintedRun { source: String },
    /// The limit on automatic changes per resource is reached.
    AutoLimit { resource: String, max: u32, window_s: u64 },
    /// The action failed before for the same diagnosis on the same equipment class.
    HistoryFailures { tool: String, failures: u64, diagnosis: String, equipment_class: String, hours: i64 },
    /// Enough successes and no failure.
    HistoryAuto { tool: String, successes: u64, diagnosis: String, equipment_class: String },
    /// No rule fired: the tool's default level.
    ToolDefault { tool: String, level: ApprovalLevel },
    /// An operator prepared the call for review.
    Prepared { subject: String, tool: String, level: ApprovalLevel },
}

/// The agent a call was made for, and where that came from.
#[derive(Serialize, ToSchema)]
pub struct ProposingAgent {
    /// Agent id; null when no credential or pipeline named one.
    #[schema(required = true)]
    id: Option<String>,
    /// `claim` (the token's `agent` claim), `principal` (the subject bound in `[[agents]]`),
    /// `pipeline` (the in-process pipeline that made the call), `request` (only the call named
    /// one, not taken as the agent), `none`.
    source: AgentSourceName,
    /// The pipeline, for `pipeline`.
    #[schema(nullable = false)]
    pipeline: Option<String>,
    /// The agent the call named, for `request`.
    #[schema(nullable = false)]
    named_by_request: Option<String>,
}

/// Where a proposing agent's identity came from.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentSourceName {
    /// The verified token's `agent` claim.
    Claim,
    /// The subject is bound to the agent by `[[agents]] principals`.
    Principal,
    /// The in-process pipeline that made the call.
    Pipeline,
    /// Only the call named it.
    Request,
    /// Nobody named one.
    None,
}

/// A tool as an approver reads it.
#[derive(Serialize, ToSchema)]
pub struct ToolInfo {
    /// Title.
    title: String,
    /// Description.
    description: String,
    /// Title in Korean, when the contract has one.
    #[schema(nullable = false)]
    title_ko: Option<String>,
    /// Description in Korean, when the contract has one.
    #[schema(nullable = false)]
    description_ko: Option<String>,
}

/// Another pending request for the same change.
#[derive(Serialize, ToSchema)]
pub struct SameChange {
    /// Its id.
    id: String,
    /// Its run.
    run_id: String,
    /// Who asked.
    requester: String,
}

/// Time spent on a call, in microseconds.
#[derive(Serialize, ToSchema)]
pub struct Timings {
    /// Whole call.
    total_us: u64,
    /// Policy evaluation.
    policy_us: u64,
    /// The adapter.
    adapter_us: u64,
}

/// One event of a tenant's hash-chained audit log.
#[derive(Serialize, ToSchema)]
pub struct AuditEvent {
    /// Position in the tenant's chain, from 1.
    #[schema(minimum = 1)]
    seq: u64,
    /// What happened (`tool_call`, `approval_requested`, `approval_granted`, `job_settled`,
    /// `kill_switch_set` …).
    kind: String,
    /// The call (or job, approval, run) it is about.
    call_id: String,
    /// When (RFC 3339).
    #[schema(format = DateTime)]
    at: String,
    /// Tenant.
    tenant: String,
    /// Who acted.
    subject: String,
    /// Run id.
    run_id: String,
    /// Incident id.
    incident: String,
    /// Tool.
    tool: String,
    /// The policy set's version.
    policy_version: String,
    /// Plan hash.
    #[schema(required = true)]
    plan_hash: Option<String>,
    /// Executor identity used.
    #[schema(required = true)]
    executor_identity: Option<String>,
    /// Approval concerned.
    #[schema(required = true)]
    approval_id: Option<String>,
    /// Approver.
    #[schema(required = true)]
    approver: Option<String>,
    /// `executed`, `rejected`, `dry_run` or `replayed`.
    #[schema(required = true)]
    decision: Option<String>,
    /// Reject code.
    #[schema(required = true)]
    code: Option<String>,
    /// Why, in words.
    #[schema(required = true)]
    reason: Option<String>,
    /// Time spent.
    timings: Timings,
    /// How an operator acted from a terminal: `token` or `as`; absent otherwise.
    #[schema(nullable = false)]
    auth: Option<String>,
    /// The registered agent; absent without one.
    #[schema(nullable = false)]
    agent_id: Option<String>,
    /// The agent's model; absent without one.
    #[schema(nullable = false)]
    model: Option<String>,
    /// The agent's prompt hash; absent without one.
    #[schema(nullable = false)]
    prompt_hash: Option<String>,
    /// Hash of the tool's contract schema; absent without one.
    #[schema(nullable = false)]
    tool_schema_hash: Option<String>,
    /// Where the agent's identity came from; absent without one.
    #[schema(nullable = false)]
    agent_source: Option<String>,
    /// Hash of the event's evidence (its reason), chained in place of the text.
    #[schema(nullable = false)]
    evidence_digest: Option<String>,
    /// The previous event's hash (64 zeros for the first).
    prev_hash: String,
    /// This event's hash.
    hash: String,
    /// What the event means to an operator (`executed`, `waiting for approval`, `refused:
    /// policy_denied` …).
    display: String,
}

/// One model call of a pipeline run, as the decision log keeps it.
#[derive(Serialize, ToSchema)]
pub struct DecisionRecord {
    /// Id.
    decision_id: String,
    /// The run.
    pipeline_run_id: String,
    /// Tenant.
    tenant: String,
    /// The agent (node) that called the model.
    agent: String,
    /// The model.
    model: String,
    /// What the model was given (any JSON).
    input: Value,
    /// What it answered (any JSON).
    output: Value,
    /// Prompt tokens.
    prompt_tokens: u64,
    /// Completion tokens.
    completion_tokens: u64,
    /// Latency.
    latency_ms: u64,
    /// The harness's checks on the answer (any JSON).
    harness_checks: Value,
    /// The harness's verdict.
    final_verdict: String,
    /// When (RFC 3339).
    #[schema(format = DateTime)]
    created_at: String,
    /// Hash of the prompt; absent when unknown.
    #[schema(nullable = false)]
    prompt_hash: Option<String>,
    /// Hash of the tool schemas offered; absent when unknown.
    #[schema(nullable = false)]
    tool_schema_hash: Option<String>,
    /// The policy set's version; absent when unknown.
    #[schema(nullable = false)]
    policy_version: Option<String>,
}

/// A kill switch: every gate call in its scope is refused with `killed`.
#[derive(Serialize, ToSchema)]
pub struct KillSwitch {
    /// The tenant it covers; absent for a global switch.
    #[schema(nullable = false)]
    tenant: Option<String>,
    /// The agent it covers; absent for every agent.
    #[schema(nullable = false)]
    agent: Option<String>,
    /// Why.
    reason: String,
    /// Who set it.
    set_by: String,
    /// When (RFC 3339).
    #[schema(format = DateTime)]
    set_at: String,
}

/// The unfinished work in a switch's scope when it was set.
#[derive(Serialize, ToSchema)]
pub struct Unfinished {
    /// Pending approvals.
    pending_approvals: Vec<ApprovalRequest>,
    /// Jobs not final.
    jobs: Vec<Job>,
    /// Paused or interrupted runs.
    paused_runs: Vec<ThreadSummary>,
    /// Runs asked to stop.
    cancelled_runs: Vec<String>,
}

/// Where a job stands.
#[derive(Serialize, ToSchema)]
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

/// One execution of a plan: the unit of exactly-once.
#[derive(Serialize, ToSchema)]
pub struct Job {
    /// Job id.
    id: String,
    /// Tenant.
    tenant: String,
    /// Requester (the token's subject).
    subject: String,
    /// Client-chosen idempotency key, unique per tenant and subject.
    #[schema(required = true)]
    idempotency_key: Option<String>,
    /// The plan executed.
    plan: Plan,
    /// Hex SHA-256 of the plan's canonical form.
    plan_hash: String,
    /// The executor identity used.
    executor: String,
    /// The approval consumed for it.
    #[schema(required = true)]
    approval_id: Option<String>,
    /// Where it stands.
    status: JobStatus,
    /// The gate's stored answer (a CallOutcome) once final.
    #[schema(required = true, value_type = Option<Object>)]
    outcome: Option<Value>,
    /// Created at (RFC 3339).
    #[schema(format = DateTime)]
    created_at: String,
    /// Last transition (RFC 3339).
    #[schema(format = DateTime)]
    updated_at: String,
}

/// Where a run's thread stands.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// Steps remain.
    Running,
    /// Paused for a human; resumed by interrupt id.
    Interrupted,
    /// Finished.
    Done,
    /// Stopped by an error.
    Failed,
    /// Stopped by cancellation.
    Cancelled,
}

/// A run's thread: the head of its newest checkpoint.
#[derive(Serialize, ToSchema)]
pub struct ThreadSummary {
    /// The thread (run) id.
    thread_id: String,
    /// The graph that wrote the newest checkpoint.
    graph: String,
    /// Where it stands.
    status: ThreadStatus,
    /// Its step.
    step: u64,
}

/// What a set or a lift did.
#[derive(Serialize, ToSchema)]
pub struct KillReport {
    /// The switch.
    switch: KillSwitch,
    /// Whether anything changed (false: already set, or nothing to lift).
    changed: bool,
    /// The unfinished work in scope (empty lists on a lift).
    unfinished: Unfinished,
}
