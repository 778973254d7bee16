//! The gate: every tool call, from any entry point, runs these steps in this order and the first
//! failing step rejects with a stable code. Every call appends one audit event.
//!
//! 2 run state → 3 contract → 4 guard → 5 policy → 6 state rules → 7 approval level →
//! 8 idempotency → 9 approval binding → 10 execute → 11 output. (1, intake, wraps this.)
//! A store that cannot answer is a [`GateError`], never an "allow".

mod auto_limit;
mod binding;
mod entry;
mod execute;
mod history;
mod identity;
pub(crate) mod output;
pub(crate) mod run_state;
pub(crate) mod state_rules;
mod trace;

use std::sync::Arc;

use bridle_core::audit::Decision;
use bridle_core::config::Config;
use bridle_core::contract::{ApprovalLevel, Mode, ToolContract};
use bridle_core::job::JobStatus;
use bridle_core::level::{self, CallSignals};
use bridle_core::plan::{CanonicalError, Plan, PlanHash};
use bridle_core::ports::{Adapter, ArgumentScanner, Clock, StoreError};
use bridle_core::{Code, Principal, Rejection, RunContext};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tracing::Instrument;

use crate::notify::ApprovalNotifier;
use crate::store::Stores;
use output::OutputGuard;
use trace::Trace;

pub use output::{OutputReport, Spotlight};

/// The tool recorded in a metadata-only audit event for a name that is not registered.
pub const UNREGISTERED: &str = "(unregistered)";

/// A proposed call as an entry point hands it to the gate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallRequest {
    /// Tool name.
    pub tool: String,
    /// Arguments as the model wrote them.
    pub arguments: Value,
    /// Approval to use; without one, an approval for the exact plan is looked up.
    #[serde(default)]
    pub approval_id: Option<String>,
    /// Client idempotency key, unique per tenant and subject. It applies to calls that become
    /// jobs (changes, and reads escalated to approval); an automatic read has no side effect and
    /// simply runs again.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// Confidence, candidates and taint from the proposing agent.
    #[serde(default)]
    pub signals: CallSignals,
    /// Decide only: consume, create, store and execute nothing.
    #[serde(default)]
    pub dry_run: bool,
    /// Audit as metadata only (tool, code, plan hash): no reason text, and an unregistered tool
    /// name is not recorded. Set for calls read from pasted text (the workbench), whose
    /// arguments and names must never reach the audit log.
    #[serde(default)]
    pub metadata_only: bool,
    /// The registered agent this call is made for (`[[agents]]` id). A named agent must be
    /// registered and allowed the tool (policy step); the kill switch of an agent covers its
    /// calls; audit events carry its model and prompt versions. `None`: no agent's behalf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl CallRequest {
    /// A plain call of `tool` with `arguments`.
    pub fn new(tool: &str, arguments: Value) -> Self {
        Self { tool: tool.to_owned(), arguments, ..Self::default() }
    }

    /// The same call using an approval id.
    #[must_use]
    pub fn with_approval(mut self, id: &str) -> Self {
        self.approval_id = Some(id.to_owned());
        self
    }

    /// The same call on behalf of `agent`.
    #[must_use]
    pub fn for_agent(mut self, agent: &str) -> Self {
        self.agent = Some(agent.to_owned());
        self
    }

    /// The same call with an idempotency key.
    #[must_use]
    pub fn with_key(mut self, key: &str) -> Self {
        self.idempotency_key = Some(key.to_owned());
        self
    }
}

/// What the gate decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Verdict {
    /// Executed; the adapter's result.
    Ok {
        /// Adapter result.
        result: Value,
    },
    /// Refused.
    Rejected {
        /// Why.
        rejection: Rejection,
    },
    /// Dry run: what would happen (`None` = it would execute).
    DryRun {
        /// The rejection a real call would get now, if any.
        would_reject: Option<Rejection>,
    },
}

/// The gate's answer to one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallOutcome {
    /// Call id (the audit event and tracing span carry it too).
    pub call_id: String,
    /// The caller's own id of the call, echoed so verdicts can be matched to calls: the
    /// `tool_call_id` of a structured call, or the id a model's answer gave it (OpenAI `id` /
    /// `call_id`, Anthropic `id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Tool named.
    pub tool: String,
    /// The run the call was made in: the caller's, or the one the server minted for a call that
    /// named none (send it back with the next call of the same run, e.g. after an approval).
    #[serde(default)]
    pub run_id: String,
    /// Verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Plan hash, once the call got that far.
    pub plan_hash: Option<PlanHash>,
    /// Level the call needed.
    pub level: Option<ApprovalLevel>,
    /// Approval used, or the pending request created for it.
    pub approval_id: Option<String>,
    /// Job of a change: its id is the call's own (`call_id`) for the call that dispatched it, and
    /// the original call's for an idempotent replay.
    pub job_id: Option<String>,
    /// Executor identity used.
    pub executor_identity: Option<String>,
    /// True when this answer is the stored result of an earlier call with the same key.
    #[serde(default)]
    pub idempotent_replay: bool,
    /// Step 11's report on an executed result; absent when nothing was masked and the tool's
    /// output is trusted. The `result` itself keeps its JSON shape with every string leaf and
    /// key masked in place (`"mail [pii:email]"`); beside it:
    ///
    /// ```json
    /// "output": {
    ///   "masked": {"pii:email": 1, "secret:aws_access_key": 2},
    ///   "spotlight": {"text": "<<UNTRUSTED K7QW2M>>\n{…masked result as JSON…}\n<</UNTRUSTED K7QW2M>>",
    ///                 "delimiter": "K7QW2M", "closing_delimiter_in_result": false}
    /// }
    /// ```
    ///
    /// `spotlight` is present for a tool marked `untrusted_output`: hand its `text` to a model
    /// rather than `result`. The delimiter is fixed per run (`spotlight::run_seed` of tenant and
    /// run id); `closing_delimiter_in_result` flags a result that contains it (an attempt to
    /// break out). A result containing the run's canary is not returned at all: the call is
    /// rejected with `output_blocked` although it executed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputReport>,
}

impl CallOutcome {
    /// The reject code, if rejected.
    pub fn code(&self) -> Option<Code> {
        match &self.verdict {
            Verdict::Rejected { rejection } => Some(rejection.code),
            Verdict::DryRun { would_reject } => would_reject.as_ref().map(|r| r.code),
            Verdict::Ok { .. } => None,
        }
    }

    /// Why a call waits for a human, in an operator's words: the approval request's reasons (the
    /// escalation rules that fired, else the tool's default level) joined by `; `. The
    /// rejection's message, which tells the agent to retry, is the fallback for a refusal without
    /// them; empty for a call that was not refused.
    pub fn approval_reasons(&self) -> String {
        let Verdict::Rejected { rejection } = &self.verdict else {
            return String::new();
        };
        let reasons: Vec<&str> = rejection
            .detail
            .get("reasons")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if reasons.is_empty() { rejection.message.clone() } else { reasons.join("; ") }
    }

    /// The adapter result, if executed.
    pub fn result(&self) -> Option<&Value> {
        match &self.verdict {
            Verdict::Ok { result } => Some(result),
            _ => None,
        }
    }
}

/// The call could not be evaluated. Never an allow.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// A store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The plan could not be canonicalized.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
}

/// Why the pipeline stopped early: a verdict or an error.
pub(crate) enum Stop {
    Reject(Rejection),
    Error(GateError),
}

impl From<Rejection> for Stop {
    fn from(r: Rejection) -> Self {
        Stop::Reject(r)
    }
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Stop::Error(GateError::Store(e))
    }
}

impl From<CanonicalError> for Stop {
    fn from(e: CanonicalError) -> Self {
        Stop::Error(GateError::Canonical(e))
    }
}

/// A call that passed steps 2–7: what approval binding and execution work on.
pub(crate) struct Proposal<'a> {
    pub principal: &'a Principal,
    pub req: &'a CallRequest,
    pub tool: &'a ToolContract,
    pub plan: Plan,
    pub plan_hash: PlanHash,
    pub level: level::LevelDecision,
}

/// The gate over a configuration, stores, an adapter and a clock: it decides and runs calls
/// ([`Gate::call`], dry runs included) and nothing else. The approval desk, the reconciler and
/// the kill switch service are their own structs; [`crate::engine::Engine::builder`] assembles
/// all four and is the only way to get a gate.
#[derive(Clone)]
pub struct Gate {
    config: Arc<Config>,
    stores: Stores,
    adapter: Arc<dyn Adapter>,
    clock: Arc<dyn Clock>,
    scanner: Arc<dyn ArgumentScanner>,
    output: Arc<OutputGuard>,
    notifier: Option<Arc<dyn ApprovalNotifier>>,
    kill_cache: Arc<run_state::KillCache>,
}

/// What the engine builder hands the gate.
pub(crate) struct GateParts {
    pub config: Arc<Config>,
    pub stores: Stores,
    pub adapter: Arc<dyn Adapter>,
    pub clock: Arc<dyn Clock>,
    /// Step 4's scanner (the guard facade unless a test replaces it).
    pub scanner: Arc<dyn ArgumentScanner>,
    /// Step 11, shared with the reconciler.
    pub output: Arc<OutputGuard>,
    pub notifier: Option<Arc<dyn ApprovalNotifier>>,
    /// Shared with the kill switch service, which clears it.
    pub kill_cache: Arc<run_state::KillCache>,
}

impl Gate {
    /// The one place a gate is made (called by the engine builder only).
    pub(crate) fn assemble(p: GateParts) -> Self {
        let GateParts { config, stores, adapter, clock, scanner, output, notifier, kill_cache } = p;
        Self { config, stores, adapter, clock, scanner, output, notifier, kill_cache }
    }

    /// The configuration.
    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    /// The stores.
    pub fn stores(&self) -> &Stores {
        &self.stores
    }

    /// The gate's clock, now.
    pub fn now(&self) -> time::OffsetDateTime {
        self.clock.now()
    }

    /// The gate's clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Stamps a decision record with the versions in force: the tool-schema and policy
    /// versions, and for a registered agent its registered prompt version.
    pub fn stamp_decision(&self, record: &mut bridle_core::decision::DecisionRecord) {
        record.tool_schema_hash = Some(self.config.registry.schema_hash().to_owned());
        record.policy_version = Some(self.config.policy.version().to_owned());
        if let Some(entry) = self.config.agents.get(&record.agent) {
            record.prompt_hash = Some(entry.prompt_hash.clone());
        }
    }

    /// The versions a record made for `agent` carries: agent id, its model and prompt hash
    /// (when registered) and the tool-schema hash. The policy version is a field of its own.
    pub fn versions(&self, agent: Option<&str>) -> bridle_core::audit::Versions {
        self.config.agents.versions(agent, self.config.registry.schema_hash())
    }

    /// Runs one call through every step and audits it. A call whose run names no id gets a
    /// fresh one (`CallOutcome::run_id`): runs are the server's records, bound to their subject.
    pub async fn call(
        &self,
        principal: &Principal,
        run: &RunContext,
        req: &CallRequest,
    ) -> Result<CallOutcome, GateError> {
        let minted;
        let run = if run.run_id.is_empty() {
            minted = RunContext { run_id: mint_run_id(), ..run.clone() };
            &minted
        } else {
            run
        };
        let who = identity::Who::of(self, principal, req);
        let mut versions = self.versions(who.agent.as_deref());
        versions.agent_source = who.source;
        let mut t = Trace::start(self.clock.now(), &req.tool, &run.run_id, versions);
        let span = tracing::info_span!(
            "gate_call",
            call_id = %t.call_id,
            tool = %t.tool,
            subject = %bounded(&principal.subject),
            bridle.code = tracing::field::Empty,
            bridle.level = tracing::field::Empty,
        );
        let decided = self.decide(principal, run, req, &who, &mut t).instrument(span.clone()).await;
        let audited = self.audit(principal, run, req, decided, &mut t, &span).await;
        if t.leased
            && let Err(e) = self.stores.runs.release(&principal.tenant, &run.run_id, &t.call_id).await
        {
            // The lease lapses on its own (`Gate::lease_ttl`); the call's answer stands.
            tracing::warn!(call_id = %t.call_id, error = %e, "could not release the call's run lease");
        }
        audited
    }

    /// Turns the decision into the call's outcome and appends its audit event (with the job's
    /// settling move when it executed a change).
    async fn audit(
        &self,
        principal: &Principal,
        run: &RunContext,
        req: &CallRequest,
        decided: Result<(Verdict, Decision), Stop>,
        t: &mut Trace,
        span: &tracing::Span,
    ) -> Result<CallOutcome, GateError> {
        let (verdict, decision) = match decided {
            Ok(v) => v,
            Err(Stop::Reject(r)) => {
                let d = if req.dry_run { Decision::DryRun } else { Decision::Rejected };
                let v = if req.dry_run {
                    Verdict::DryRun { would_reject: Some(r) }
                } else {
                    Verdict::Rejected { rejection: r }
                };
                (v, d)
            }
            Err(Stop::Error(e)) => {
                tracing::error!(call_id = %t.call_id, error = %e, "gate call could not be evaluated");
                return Err(e);
            }
        };
        let outcome = t.outcome(verdict);
        self.observe(&outcome, t.elapsed(), span);
        let mut record = t.record(principal, run, self.config.policy.version(), decision, &outcome);
        if req.metadata_only {
            record.reason = None;
            if self.config.registry.get(&req.tool).is_none() {
                UNREGISTERED.clone_into(&mut record.tool);
            }
        }
        let record = self.stores.evidence(vec![record]);
        match t.settle.take() {
            // INVARIANT: an executed job is settled in the same transaction as the call's
            // `tool_call` event; if that cannot be written the job stays `dispatched` (to be
            // reconciled) and the call is an error, never an answer without its event.
            Some(s) => {
                let jobs = &self.stores.jobs;
                let now = self.clock.now();
                // The answer a keyed retry gets: this one, serialized from the outcome itself.
                let stored = bridle_core::job::StoredOutcome::of(&outcome);
                let moved =
                    jobs.transition(&s.job_id, JobStatus::Dispatched, s.to, Some(stored), now, record.clone()).await?;
                if !moved {
                    // Reconciliation settled it first (its own event); the call is still audited.
                    self.stores.audit.append(record).await?;
                }
            }
            None => {
                self.stores.audit.append(record).await?;
            }
        }
        Ok(outcome)
    }

    async fn decide(
        &self,
        principal: &Principal,
        run: &RunContext,
        req: &CallRequest,
        who: &identity::Who,
        t: &mut Trace,
    ) -> Result<(Verdict, Decision), Stop> {
        // entry: bounded, storable ids, keys and argument text (`bridle_core::bounds`)
        let mut admitted = entry::admit(principal, run, req)?;
        // Every step sees the credential's agent, whatever the request named.
        if admitted.agent != who.agent {
            admitted.to_mut().agent.clone_from(&who.agent);
        }
        let req = &*admitted;
        // 2. run state
        let taint_read = run_state::check(self, principal, run, req, who, t).await?;
        // 3. contract
        let tool = self
            .config
            .registry
            .get(&req.tool)
            .cloned()
            .ok_or_else(|| Rejection::new(Code::UnknownTool, format!("no tool `{}` is registered", t.tool)))?;
        tool.check_arguments(&req.arguments)?;
        // 4. guard
        self.scan(&tool, &req.arguments)?;
        // 5. policy: the identity rule, the agent rule, then Cedar
        who.required_for(self, &tool)?;
        if let Err(denial) = self.config.agents.check(req.agent.as_deref(), &tool) {
            return Err(Rejection::new(Code::PolicyDenied, denial.message())
                .with_detail(serde_json::json!({"agent_rule": denial.rule()}))
                .into());
        }
        let started = std::time::Instant::now();
        let policy = self.config.policy.authorize(principal, &tool, &req.arguments);
        t.policy_us = elapsed_us(started);
        if !policy.allowed {
            return Err(Rejection::new(Code::PolicyDenied, policy_message(principal, &tool, &policy.deciding))
                .with_detail(serde_json::json!({"deciding_policies": policy.deciding, "errors": policy.errors}))
                .into());
        }
        let plan = Plan::new(&tool.name, &req.arguments, principal, run);
        let plan_hash = plan.hash()?;
        t.plan_hash = Some(plan_hash.clone());
        // 6. state rules (after policy: an unauthorized caller never triggers a read)
        state_rules::check(self, &plan, &tool, &req.arguments, t).await?;
        // 7. approval level
        let taint = self.run_taint(principal, run, who, &tool, taint_read, t.now).await?;
        let mut level =
            level::decide_in_run(&self.config.levels, &tool, &req.arguments, &req.signals, taint.as_deref());
        t.approval_context = history::check(self, principal, &tool, &req.signals, &mut level, t.now).await?;
        auto_limit::check(self, principal, &tool, &req.arguments, req.dry_run, &mut level, t.now).await?;
        t.level = Some(level.level);
        if tool.mode == Mode::Read && level.level == ApprovalLevel::Auto {
            if req.dry_run {
                return Ok((Verdict::DryRun { would_reject: None }, Decision::DryRun));
            }
            // 10. execute, 11. output
            return execute::read(self, principal, run, who, &tool, &req.arguments, t).await;
        }
        // 8. idempotency
        if let Some(key) = &req.idempotency_key
            && let Some(stored) = binding::idempotent(self, principal, key, &plan_hash, t).await?
        {
            return Ok(stored);
        }
        // 9. approval binding
        let proposal = Proposal { principal, req, tool: &tool, plan, plan_hash, level };
        let consume = match binding::bind(self, &proposal, who, t).await {
            // A keyed call refused here may have lost to its own first attempt after step 8:
            // re-read the key, and answer as step 8 would now.
            Err(Stop::Reject(r)) if req.idempotency_key.is_some() && !req.dry_run => {
                if let Some(key) = &req.idempotency_key
                    && let Some(stored) = binding::idempotent(self, principal, key, &proposal.plan_hash, t).await?
                {
                    return Ok(stored);
                }
                return Err(r.into());
            }
            other => other?,
        };
        if req.dry_run {
            return Ok((Verdict::DryRun { would_reject: None }, Decision::DryRun));
        }
        // 10. execute, 11. output
        let done = execute::change(self, &proposal, run, who, consume, t).await?;
        if let (Verdict::Ok { .. }, Some(job_id)) = (&done.0, &t.job_id) {
            history::record(self, principal, &tool, &req.arguments, &req.signals, job_id, t.now).await?;
        }
        Ok(done)
    }

    /// What the store must say about taint for a call of `tool`: the run's, and the actor's (its
    /// credential's agent, or its subject) within `[taint] window`. Only a `change` can escalate
    /// on taint, and the caller's own flag needs no read: `None` then.
    pub(crate) fn taint_check(
        &self,
        principal: &Principal,
        run: &RunContext,
        who: &identity::Who,
        tool: &str,
        now: time::OffsetDateTime,
    ) -> Option<bridle_core::runs::TaintCheck> {
        let change = self.config.registry.get(tool).is_some_and(|t| t.mode == Mode::Change);
        if !change || run.tainted {
            return None;
        }
        let window = self.config.taint.window;
        let actor = (!window.is_zero()).then(|| who.actor(principal));
        let since = now.checked_sub(time::Duration::try_from(window).unwrap_or(time::Duration::MAX)).unwrap_or(now);
        Some(bridle_core::runs::TaintCheck { actor, since })
    }

    /// Where the call's untrusted content came from, if it took any in: the caller's flag
    /// (`Some("")`), else the store's record of the run, else of the call's actor within
    /// `[taint] window` ([`Self::taint_check`]). Only a `change` can escalate on taint, so only
    /// a change asks the store; an admitted call brings the check its admission made and what
    /// it read (`read`), a dry run reads it here.
    async fn run_taint(
        &self,
        principal: &Principal,
        run: &RunContext,
        who: &identity::Who,
        tool: &ToolContract,
        read: Option<(bridle_core::runs::TaintCheck, Option<bridle_core::ports::Taint>)>,
        now: time::OffsetDateTime,
    ) -> Result<Option<String>, Stop> {
        if tool.mode != Mode::Change {
            return Ok(None);
        }
        if run.tainted {
            return Ok(Some(String::new()));
        }
        let (check, taint) = match read {
            Some(read) => read,
            None => {
                let Some(check) = self.taint_check(principal, run, who, &tool.name, now) else { return Ok(None) };
                let flags = &self.stores.run_flags;
                let taint = flags.tainted(&principal.tenant, &run.run_id, check.actor.as_deref(), check.since).await?;
                (check, taint)
            }
        };
        let window = self.config.taint.window;
        Ok(taint.map(|t| match t.via {
            bridle_core::ports::TaintVia::Run => t.reason,
            bridle_core::ports::TaintVia::Actor => {
                format!(
                    "{} (taint follows {} for {}s)",
                    t.reason,
                    check.actor.as_deref().unwrap_or(""),
                    window.as_secs()
                )
            }
        }))
    }

    /// Logs the decision in the call's span, counts the verdict by tool and code and records
    /// the call's latency. A name that is not registered is counted as [`UNREGISTERED`]: a label
    /// never takes a caller's free text.
    fn observe(&self, outcome: &CallOutcome, elapsed: std::time::Duration, span: &tracing::Span) {
        let tool = if self.config.registry.get(&outcome.tool).is_some() {
            outcome.tool.clone()
        } else {
            UNREGISTERED.to_owned()
        };
        let code = match &outcome.verdict {
            Verdict::Ok { .. } => "ok",
            Verdict::Rejected { rejection } => rejection.code.as_str(),
            Verdict::DryRun { would_reject: None } => "dry_run_ok",
            Verdict::DryRun { would_reject: Some(r) } => r.code.as_str(),
        };
        let latency_ms = elapsed.as_secs_f64() * 1000.0;
        span.record("bridle.code", code);
        if let Some(level) = outcome.level {
            span.record("bridle.level", level.as_str());
        }
        tracing::info!(parent: span, code, latency_ms, "tool call decided");
        metrics::counter!("bridle_gate_verdicts_total", "tool" => tool.clone(), "code" => code).increment(1);
        metrics::histogram!("bridle_gate_call_seconds", "tool" => tool).record(elapsed.as_secs_f64());
    }

    fn scan(&self, tool: &ToolContract, args: &Value) -> Result<(), Rejection> {
        for param in tool.scanned_params() {
            if let Some(text) = args.get(param).and_then(Value::as_str) {
                self.scanner.scan(param, text)?;
            }
        }
        Ok(())
    }
}

fn policy_message(principal: &Principal, tool: &ToolContract, deciding: &[String]) -> String {
    if deciding.is_empty() {
        format!("no policy permits `{}` to call `{}` here", principal.subject, tool.name)
    } else {
        format!("`{}` may not call `{}` here: denied by {}", principal.subject, tool.name, deciding.join(", "))
    }
}

/// A caller's string as a log field: clipped, so a refused megabyte never floods the logs.
fn bounded(text: &str) -> String {
    bridle_core::verdict::clip(text, bridle_core::bounds::ID_MAX)
}

/// A run id for a call that named none: `run-` and a UUIDv7 (ids sort by time). The doors mint
/// one per request, so the calls of one answer share their run; the gate mints one for a library
/// caller that sent none.
pub fn mint_run_id() -> String {
    format!("run-{}", uuid::Uuid::now_v7())
}

pub(crate) fn elapsed_us(since: std::time::Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}
