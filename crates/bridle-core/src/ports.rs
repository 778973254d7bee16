//! Ports: the traits the engine drives (stores, adapters, clock), implemented by the runtime.
//!
//! Async methods use `async-trait` so implementations can be held as `Arc<dyn _>`. A store
//! error means "could not evaluate" and the gate turns it into an error, never into "allow".

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use crate::approval::{ApprovalRequest, Grant};
use crate::audit::{AuditEvent, AuditRecord};
use crate::checkpoint::{Checkpoint, TaskWrites, ThreadQuery, ThreadSummary};
use crate::decision::DecisionRecord;
use crate::history::{ActionRecord, Rating};
use crate::job::{Job, JobStatus};
use crate::kill::{KillScope, KillSwitch};
use crate::plan::PlanHash;
use crate::verdict::Rejection;

/// A store could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The backend failed or is unreachable.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// Stored data could not be read back.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// A record with this id already exists.
    #[error("already exists: {0}")]
    Duplicate(String),
    /// The record changed concurrently; re-read and retry.
    #[error("concurrent update of {0}")]
    Contention(String),
    /// No such record.
    #[error("not found: {0}")]
    NotFound(String),
}

/// Result of a store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// Time source; the demo and tests use a manual clock.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> OffsetDateTime;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> OffsetDateTime {
        OffsetDateTime::now_utc()
    }
}

/// Scans the text of arguments a contract marks `scan = true` (gate step 4). The guard
/// implements it; a gate without a scanner lets such text through unscanned.
pub trait ArgumentScanner: Send + Sync {
    /// `Err(injection_detected …)` if the text of `param` must not reach a model or operator.
    fn scan(&self, param: &str, text: &str) -> Result<(), Rejection>;
}

/// The audit records a state change appends in its own transaction (see [`ApprovalLedger`]).
///
/// INVARIANT: every port method that changes state and takes an `Audit` commits the change and
/// these records (chained, masked, exactly as [`AuditLog::append`] would write them) in ONE
/// transaction, or neither: when the records cannot be written, the change is rolled back and
/// the method fails with a [`StoreError`]. Records are appended only when the change happens
/// (a refused grant, a transition from another state, a lift of a switch that was off append
/// nothing). `[audit] evidence = "metadata_only"` is applied by the caller
/// (`Stores::evidence` in the runtime) before the records reach the store.
pub type Audit = Vec<AuditRecord>;

/// What `create_request` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Created {
    /// The request was stored (and its audit records appended).
    New,
    /// Another live pending request of the same tenant holds this plan; nothing was written.
    /// Every caller racing to create a request for one plan gets this one back.
    Existing(Box<ApprovalRequest>),
}

/// Approval requests, grants and rejections.
#[async_trait]
pub trait ApprovalLedger: Send + Sync {
    /// Stores a new pending request with its `audit` records, unless its tenant already has a
    /// pending, unexpired (at `request.created_at`) request for the same plan hash: then that
    /// one is returned and nothing is written.
    ///
    /// INVARIANT: at most one live pending request per (tenant, plan hash), guaranteed by the
    /// store itself (a unique index, or one lock), never by a read before the insert; a pending
    /// request that has expired is moved out of the way first. `Duplicate` if the id exists.
    async fn create_request(&self, request: &ApprovalRequest, audit: Audit) -> StoreResult<Created>;
    /// Stores a request an operator prepared with its own id (the desk's `request_approval`)
    /// with its `audit` records. It never holds its plan's one pending slot: a gate call for
    /// the plan still creates (or shares) its own. `Duplicate` if the id exists.
    async fn create_prepared_request(&self, request: &ApprovalRequest, audit: Audit) -> StoreResult<()>;
    /// A request of `tenant` by id.
    async fn get_request(&self, tenant: &str, id: &str) -> StoreResult<Option<ApprovalRequest>>;
    /// For a call without an approval id: a granted, unconsumed, unexpired request for exactly
    /// this plan if one exists, else a pending unexpired one.
    async fn find_for_plan(
        &self,
        tenant: &str,
        plan_hash: &PlanHash,
        now: OffsetDateTime,
    ) -> StoreResult<Option<ApprovalRequest>>;
    /// Adds a grant if the request still has exactly `expected_grants` grants and is pending;
    /// `granted` says whether the request becomes granted. `Contention` otherwise.
    async fn add_grant(
        &self,
        tenant: &str,
        id: &str,
        expected_grants: usize,
        grant: &Grant,
        granted: bool,
        audit: Audit,
    ) -> StoreResult<()>;
    /// Marks a pending request rejected with a reason; `Contention` if it is no longer pending.
    async fn reject_request(
        &self,
        tenant: &str,
        id: &str,
        approver: &str,
        reason: &str,
        audit: Audit,
    ) -> StoreResult<()>;
    /// Pending, unexpired requests of a tenant, oldest first.
    async fn list_pending(&self, tenant: &str, now: OffsetDateTime) -> StoreResult<Vec<ApprovalRequest>>;
    /// How many pending, unexpired requests each tenant has (tenants with none left out), by
    /// tenant: the pending-approvals gauge, the same on every replica.
    async fn count_pending(&self, now: OffsetDateTime) -> StoreResult<Vec<(String, u64)>>;
}

/// Approval consumption requested together with a job reservation.
#[derive(Debug, Clone, PartialEq)]
pub struct Consume {
    /// Approval id.
    pub approval_id: String,
    /// The plan hash it must be bound to.
    pub plan_hash: PlanHash,
    /// Now, for the expiry check.
    pub now: OffsetDateTime,
}

/// What `reserve` did.
#[derive(Debug, Clone, PartialEq)]
pub enum Reserved {
    /// The job is reserved and the approval (if any) consumed, atomically.
    Reserved,
    /// The approval could not be consumed (lost a race, expired, other plan); nothing written.
    ApprovalRefused(Rejection),
    /// The idempotency key is taken; nothing written. The existing job is returned.
    KeyTaken(Box<Job>),
}

/// Jobs and idempotency keys.
#[async_trait]
pub trait JobStore: Send + Sync {
    /// The job holding an idempotency key of `tenant`/`subject`.
    async fn find_by_key(&self, tenant: &str, subject: &str, key: &str) -> StoreResult<Option<Job>>;
    /// In one transaction: claim the idempotency key, consume the approval, insert the job in
    /// the status it carries (the gate inserts it `dispatched`) and append `audit`. Either all
    /// of it happens or none; a refusal writes nothing.
    async fn reserve(&self, job: &Job, consume: Option<&Consume>, audit: Audit) -> StoreResult<Reserved>;
    /// Moves a job from `from` to `to`, storing the outcome and appending `audit` in the same
    /// transaction; `false` (and nothing written) if it was not in `from`.
    async fn transition(
        &self,
        id: &str,
        from: JobStatus,
        to: JobStatus,
        outcome: Option<crate::job::StoredOutcome>,
        now: OffsetDateTime,
        audit: Audit,
    ) -> StoreResult<bool>;
    /// A job by id.
    async fn get_job(&self, id: &str) -> StoreResult<Option<Job>>;
    /// Jobs not in a final state, oldest first.
    async fn unsettled(&self) -> StoreResult<Vec<Job>>;
}

pub use crate::budget::BudgetKind;

/// Whether a debit fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Debit {
    /// Debited; `used` now.
    Accepted {
        /// Total used after the debit.
        used: u64,
    },
    /// Refused; nothing debited.
    Exhausted {
        /// Total used (unchanged).
        used: u64,
    },
}

/// Budget counters per tenant, run and kind.
#[async_trait]
pub trait BudgetStore: Send + Sync {
    /// Adds `amount` if `used + amount <= limit`, as one conditional update.
    async fn debit(&self, tenant: &str, run_id: &str, kind: BudgetKind, amount: u64, limit: u64) -> StoreResult<Debit>;
    /// Amount used so far.
    async fn used(&self, tenant: &str, run_id: &str, kind: BudgetKind) -> StoreResult<u64>;
}

/// The append-only, hash-chained audit log.
#[async_trait]
pub trait AuditLog: Send + Sync {
    /// Appends records in order, chaining each after its tenant's last event.
    async fn append(&self, records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>>;
    /// Tenants with at least one event.
    async fn tenants(&self) -> StoreResult<Vec<String>>;
    /// Events of a tenant with `seq > after`, in order, at most `limit`.
    async fn events(&self, tenant: &str, after: u64, limit: u32) -> StoreResult<Vec<AuditEvent>>;
    /// Drops the evidence of every event recorded before `before` whose hash does not cover it
    /// (see [`AuditEvent::prune_evidence`]); returns how many events lost their evidence. The
    /// chains still verify afterwards.
    async fn prune_evidence(&self, before: OffsetDateTime) -> StoreResult<u64>;
    /// The last committed event (seq, hash) of every tenant's chain: what the runtime's head
    /// keeper signs (`bridle_core::audit::head`). Read periodically in the background, never on
    /// a gate call's path.
    async fn heads(&self) -> StoreResult<Vec<crate::audit::head::ChainHead>>;
}

/// Taint recorded when a call took in untrusted content: on its run, and (with a taint window)
/// on its actor, so that a fresh run id does not launder it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaintMark<'a> {
    /// Tenant.
    pub tenant: &'a str,
    /// The run that took the content in.
    pub run_id: &'a str,
    /// `agent:NAME` for a credential's agent, else `subject:SUB`; `None`: the run only.
    pub actor: Option<&'a str>,
    /// Which tool's output, in which call (never the content).
    pub reason: &'a str,
    /// When.
    pub at: OffsetDateTime,
}

/// How taint reached a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaintVia {
    /// The call's own run took untrusted content in.
    Run,
    /// The call's agent (or subject) took untrusted content in, in some run, within the window.
    Actor,
}

/// Taint that reaches a call, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    /// The first reason recorded on the run, or the latest on the actor.
    pub reason: String,
    /// Run or actor.
    pub via: TaintVia,
}

/// Flags that outlive a single call, kept durably per tenant: taint, on runs and on actors.
///
/// The gate sets taint when a tool whose contract marks its output untrusted returns a result,
/// and reads it when it decides a change's approval level (step 7), so every later change in the
/// run, and every change of the same actor within `[taint] window`, from any process sharing the
/// store, needs at least `approval`. Run taint is never cleared; actor taint lapses with the
/// window.
#[async_trait]
pub trait RunFlags: Send + Sync {
    /// Records the taint of `mark`: the run keeps its first reason (tainting a tainted run changes
    /// nothing); the actor keeps its latest taint and reason.
    async fn taint(&self, mark: &TaintMark<'_>) -> StoreResult<()>;
    /// The taint reaching a call of `actor` in `run_id`: the run's, else the actor's if recorded
    /// at or after `since`; `None` while neither is.
    async fn tainted(
        &self,
        tenant: &str,
        run_id: &str,
        actor: Option<&str>,
        since: OffsetDateTime,
    ) -> StoreResult<Option<Taint>>;

    /// The run's own taint reason, whatever any actor's.
    async fn run_taint(&self, tenant: &str, run_id: &str) -> StoreResult<Option<String>> {
        let taint = self.tainted(tenant, run_id, None, OffsetDateTime::UNIX_EPOCH).await?;
        Ok(taint.map(|t| t.reason))
    }
}

/// Runs as the server keeps them (`crate::runs`): one record per tenant and run id, bound to the
/// subject of its first call, with its call count and the leases of its calls in flight.
///
/// `admit` is one atomic step per backend (open or find the run, apply [`crate::runs::judge`],
/// count the call, take a lease under a concurrency limit), so replicas sharing a store never
/// admit more calls, or more concurrent calls, than the limits allow between them.
#[async_trait]
pub trait RunLedger: Send + Sync {
    /// Admits one call: `Ok` with the call counted (and its lease taken) and, with a
    /// [`crate::runs::TaintCheck`], the taint it read; or the refusal with nothing counted. A
    /// refusal for the deadline or the spent calls also records the run's new state.
    async fn admit(
        &self,
        admit: &crate::runs::RunAdmit<'_>,
    ) -> StoreResult<Result<crate::runs::Admitted, crate::runs::RunRefusal>>;
    /// The run's record, if it was opened.
    async fn run(&self, tenant: &str, run_id: &str) -> StoreResult<Option<crate::runs::RunRecord>>;
    /// Frees the lease of call `call_id` (a no-op if it has none or it lapsed).
    async fn release(&self, tenant: &str, run_id: &str, call_id: &str) -> StoreResult<()>;
}

/// Automatic changes per resource, for the limit of `[levels] auto_limit` (gate step 7).
///
/// `admit_auto` is one atomic step per backend (count the window, record if under the limit), so
/// replicas sharing a store never admit more than `max` automatic changes on a resource within
/// any window between them.
#[async_trait]
pub trait ActionLedger: Send + Sync {
    /// Records an automatic change on `resource` of `tenant` at `at` if fewer than `max` were
    /// recorded in the `window` before it; whether it was recorded.
    async fn admit_auto(
        &self,
        tenant: &str,
        resource: &str,
        at: OffsetDateTime,
        window: std::time::Duration,
        max: u32,
    ) -> StoreResult<bool>;
    /// Automatic changes recorded on `resource` in the `window` before `at`.
    async fn count_auto(
        &self,
        tenant: &str,
        resource: &str,
        at: OffsetDateTime,
        window: std::time::Duration,
    ) -> StoreResult<u64>;
}

/// The kill switch (gate step 2): scopes that stop every call they cover until lifted.
///
/// One switch per exact scope; setting an existing scope again replaces its reason, author and
/// time. Stored, so every replica sharing the store sees a switch on its next read.
#[async_trait]
pub trait KillSwitches: Send + Sync {
    /// Turns the switch of `switch.scope` on, appending `audit`; whether it was off before.
    async fn set_kill(&self, switch: &KillSwitch, audit: Audit) -> StoreResult<bool>;
    /// Turns the switch of exactly `scope` off, appending `audit` if one was on; the switch that
    /// was on, if any.
    async fn lift_kill(&self, scope: &KillScope, audit: Audit) -> StoreResult<Option<KillSwitch>>;
    /// Every switch that is on, oldest first.
    async fn active_kills(&self) -> StoreResult<Vec<KillSwitch>>;
    /// The oldest switch covering a call of `tenant` on behalf of `agent`, if any (one read).
    async fn kill_covering(&self, tenant: &str, agent: Option<&str>) -> StoreResult<Option<KillSwitch>>;
}

/// Action history: executed actions and their outcomes (see [`crate::history`]).
#[async_trait]
pub trait ActionHistory: Send + Sync {
    /// Records an executed action (unrated); recording the same job again changes nothing.
    async fn record_action(&self, action: &ActionRecord) -> StoreResult<()>;
    /// Gives the action of `job_id` its outcome (a later rating replaces an earlier one) and
    /// appends the records `audit` makes of the rated action, in one transaction; the rated
    /// record, or `None` when no such action was recorded (nothing is written then).
    async fn rate_action(
        &self,
        tenant: &str,
        job_id: &str,
        rating: &Rating,
        audit: &(dyn for<'a> Fn(&'a ActionRecord) -> Audit + Send + Sync),
    ) -> StoreResult<Option<ActionRecord>>;
    /// Actions of `tool` for `diagnosis` on `equipment_class` executed at or after `since`,
    /// newest first.
    async fn action_history(
        &self,
        tenant: &str,
        tool: &str,
        diagnosis: &str,
        equipment_class: &str,
        since: OffsetDateTime,
    ) -> StoreResult<Vec<ActionRecord>>;
}

/// Whether the store can serve requests: the readiness probe behind `GET /readyz`.
#[async_trait]
pub trait StoreHealth: Send + Sync {
    /// Runs one cheap read that needs the store's schema, not only a connection (a database
    /// that answers but whose tables are gone is not ready). An error means this process
    /// should not be sent traffic; it is never a verdict on a call.
    async fn ping(&self) -> StoreResult<()>;
}

/// Decision records (one per LLM call).
#[async_trait]
pub trait DecisionLog: Send + Sync {
    /// Stores a record.
    async fn record(&self, decision: &DecisionRecord) -> StoreResult<()>;
    /// Records of a tenant, newest first, at most `limit`.
    async fn recent(&self, tenant: &str, limit: u32) -> StoreResult<Vec<DecisionRecord>>;
}

/// A call as the adapter sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct AdapterCall {
    /// Tool name.
    pub tool: String,
    /// Tenant the call acts in (from the authenticated principal, never from arguments).
    pub tenant: String,
    /// Subject of the principal that asked (for a change: the approved plan's requester).
    pub subject: String,
    /// Run the call belongs to (the server's run record).
    pub run_id: String,
    /// Incident of that run.
    pub incident: String,
    /// Validated arguments.
    pub arguments: Value,
    /// Executor identity to act as.
    pub identity: String,
    /// Job id for changes (lets the adapter deduplicate and answer outcome queries).
    pub job_id: Option<String>,
}

/// Why an adapter call did not produce a result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AdapterError {
    /// A precondition (`resource_version`, If-Match) failed; nothing changed.
    #[error("resource version changed: expected {expected}, found {actual}")]
    VersionChanged {
        /// Version in the plan.
        expected: String,
        /// Version found.
        actual: String,
    },
    /// The adapter refused or failed; nothing changed.
    #[error("adapter failed: {0}")]
    Failed(String),
    /// The identity may not perform this operation.
    #[error("identity `{0}` rejected")]
    IdentityRejected(String),
    /// No answer within the timeout; the effect is unknown for changes.
    #[error("adapter timed out")]
    Timeout,
    /// The request was sent but the answer was lost; the effect is unknown.
    #[error("adapter response lost: {0}")]
    Lost(String),
    /// A built-in tool refused its input with its own code (`calc_syntax_error`, `unit_mismatch` …);
    /// the call is rejected with exactly this rejection.
    #[error("{0}")]
    Tool(Rejection),
}

/// What the adapter knows about a job it was sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The change took effect with this result.
    Applied(Value),
    /// The change did not happen.
    NotApplied,
    /// The adapter cannot tell (yet).
    Unknown,
}

/// The adapter port: separate read and change entry points, and an outcome query.
#[async_trait]
pub trait Adapter: Send + Sync {
    /// Reads state with a read identity.
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError>;
    /// Applies a change with a change identity.
    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError>;
    /// Asks what became of a job whose outcome is unknown.
    async fn outcome(&self, job: &Job) -> Result<Outcome, AdapterError>;
}

/// Read tools an application runs in process (the workbench's `search_law`, `calculate`,
/// `convert_unit` live in the `bridle-tools` crate): pure functions over arguments the gate has
/// already checked against their contracts. The runtime's built-in adapter runs the ones the
/// configuration registers as read tools; the engine itself ships none.
pub trait InProcessTools: Send + Sync {
    /// The tools' names.
    fn names(&self) -> &[&'static str];
    /// Runs `tool` on `args`; `None` if it is not one of these tools. A tool's own refusal
    /// carries its stable code.
    fn run(&self, tool: &str, args: &Value) -> Option<Result<Value, Rejection>>;
}

/// Checkpoints of graph runs (see [`crate::checkpoint`]).
///
/// `put` replaces the checkpoint of the same thread and step (a resume records its values
/// there) and drops that thread's checkpoints older than `keep` steps and the task writes of
/// steps before `step`, so a thread's storage stays bounded.
#[async_trait]
pub trait Checkpointer: Send + Sync {
    /// Stores a checkpoint, keeping at most `keep` (≥ 1) of the thread's newest.
    async fn put(&self, checkpoint: &Checkpoint, keep: u32) -> StoreResult<()>;
    /// Stores the writes of one finished task of the step `step` (replacing the same task's).
    async fn put_writes(&self, thread_id: &str, step: u64, writes: &TaskWrites) -> StoreResult<()>;
    /// The thread's newest checkpoint.
    async fn latest(&self, thread_id: &str) -> StoreResult<Option<Checkpoint>>;
    /// The stored task writes of a step, in the order they were stored.
    async fn writes(&self, thread_id: &str, step: u64) -> StoreResult<Vec<TaskWrites>>;
    /// Steps of the thread's stored checkpoints, oldest first.
    async fn steps(&self, thread_id: &str) -> StoreResult<Vec<u64>>;
    /// Deletes everything stored for the thread.
    async fn delete_thread(&self, thread_id: &str) -> StoreResult<()>;
    /// Threads with at least one checkpoint matching `query`, by thread id descending, each with
    /// the head of its newest checkpoint (threads holding only task writes are not listed).
    async fn threads(&self, query: &ThreadQuery) -> StoreResult<Vec<ThreadSummary>>;
    /// Appends one event to the run history of `thread_id` (a JSON object) at `at_ms`, then
    /// keeps the thread's first event and its newest `keep - 1` (`keep` ≥ 2), so a run's history
    /// stays bounded however long it runs.
    async fn append_run_event(&self, thread_id: &str, at_ms: i64, body: &Value, keep: u32) -> StoreResult<()>;
    /// The kept history of `thread_id`, oldest first.
    async fn run_events(&self, thread_id: &str) -> StoreResult<Vec<crate::checkpoint::RunEventRow>>;
    /// The first and the newest kept event of `thread_id` (the same row twice when there is
    /// one), for listings; `None` without history.
    async fn run_event_span(
        &self,
        thread_id: &str,
    ) -> StoreResult<Option<(crate::checkpoint::RunEventRow, crate::checkpoint::RunEventRow)>>;
    /// Deletes the history of every run whose newest event is older than `before_ms`
    /// (retention); returns how many events went.
    async fn prune_run_events(&self, before_ms: i64) -> StoreResult<u64>;
}
