//! The approval desk: humans grant or reject pending requests; every grant, refusal and
//! rejection is an audit event of its own kind.
//!
//! The rules (who may grant, what a level needs) are `bridle_core::approval`'s; this module
//! loads, checks, stores and audits.

use bridle_core::approval::{self, ApprovalRequest, ApprovalStatus, Grant, SCOPE_SIGN_OFF};
use bridle_core::audit::{AuditRecord, Decision, EventKind, OperatorAuth, Timings};
use bridle_core::bounds;
use bridle_core::contract::{ApprovalLevel, Mode};
use bridle_core::plan::Plan;
use bridle_core::ports::StoreError;
use bridle_core::{Code, Principal, Rejection, RunContext};
use std::sync::Arc;

use bridle_core::config::Config;
use bridle_core::ports::{Adapter, Clock};
use serde_json::Value;
use time::OffsetDateTime;

use crate::gate::GateError;
use crate::gate::state_rules::{ReadFailure, read_state};
use crate::notify::ApprovalNotifier;
use crate::store::Stores;

/// An approval id the desk looks up: bounded like every id (`bad_request` otherwise), so an
/// unstorable id never reaches a store query or the audit record of a miss.
fn bounded_id(id: &str) -> Result<(), ApprovalError> {
    bounds::check_id("approval_id", id).map_err(|e| ApprovalError::Refused(e.rejection()))
}

/// Most times a grant is retried after losing an optimistic race.
const GRANT_RETRIES: usize = 8;

/// A request prepared ahead of the call it approves.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalDraft<'a> {
    /// Approval id to create.
    pub id: &'a str,
    /// Tool of the plan.
    pub tool: &'a str,
    /// Arguments of the plan.
    pub arguments: &'a Value,
    /// Level required.
    pub level: ApprovalLevel,
    /// Expiry.
    pub expires_at: OffsetDateTime,
}

/// Why the current state of an approval's resource could not be read (the request is still shown).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CurrentStateError {
    /// The tool's `max_delta.read_tool` is not registered.
    #[error("read tool `{0}` is not registered")]
    UnknownReadTool(String),
    /// The tool's `max_delta.read_tool` changes state.
    #[error("`{0}` is not a read tool")]
    NotARead(String),
    /// The read tool's adapter answered with an error.
    #[error("cannot read the current state: {0}")]
    Adapter(bridle_core::ports::AdapterError),
    /// No answer within the read tool's timeout.
    #[error("reading the current state timed out")]
    Timeout,
}

/// A grant or rejection that was refused, or could not be evaluated.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// Refused with a stable code (`approver_denied`, `approval_expired`, `not_found` …).
    #[error("{0}")]
    Refused(Rejection),
    /// A store failed.
    #[error(transparent)]
    Gate(#[from] GateError),
}

impl From<StoreError> for ApprovalError {
    fn from(e: StoreError) -> Self {
        ApprovalError::Gate(GateError::Store(e))
    }
}

/// The approval desk over what it needs: the configuration (tools, policy), the stores, the
/// clock, the adapter (to read a plan's current state) and the notifier told of requests it
/// creates. Built beside the gate by [`crate::engine::Engine::builder`].
#[derive(Clone)]
pub struct ApprovalDesk {
    config: Arc<Config>,
    stores: Stores,
    clock: Arc<dyn Clock>,
    adapter: Arc<dyn Adapter>,
    notifier: Option<Arc<dyn ApprovalNotifier>>,
}

impl ApprovalDesk {
    /// A desk over these parts (the engine builder's).
    pub(crate) fn new(
        config: Arc<Config>,
        stores: Stores,
        clock: Arc<dyn Clock>,
        adapter: Arc<dyn Adapter>,
        notifier: Option<Arc<dyn ApprovalNotifier>>,
    ) -> Self {
        Self { config, stores, clock, adapter, notifier }
    }

    /// Creates an approval request for `draft` as `requester` would call it, with a chosen id
    /// and expiry (fixtures, the demo, operators preparing a change). The arguments must pass
    /// the contract and the requester's policy.
    pub async fn request_approval(
        &self,
        requester: &Principal,
        run: &RunContext,
        draft: &ApprovalDraft<'_>,
    ) -> Result<ApprovalRequest, ApprovalError> {
        let ApprovalDraft { id, tool, arguments, level, expires_at } = *draft;
        let bounded = bounded_id(id).and_then(|()| {
            bounds::check_id("run_id", &run.run_id)
                .and_then(|()| bounds::check_id("incident", &run.incident))
                .and_then(|()| bounds::check_json("arguments", arguments))
                .map_err(|e| ApprovalError::Refused(e.rejection()))
        });
        bounded?;
        let contract = self.config.registry.get(tool).ok_or_else(|| {
            ApprovalError::Refused(Rejection::new(Code::UnknownTool, format!("no tool `{tool}` is registered")))
        })?;
        contract.check_arguments(arguments).map_err(ApprovalError::Refused)?;
        let decision = self.config.policy.authorize(requester, contract, arguments);
        if !decision.allowed {
            return Err(ApprovalError::Refused(Rejection::new(
                Code::PolicyDenied,
                format!("`{}` may not call `{tool}` here", requester.subject),
            )));
        }
        let plan = Plan::new(tool, arguments, requester, run);
        let hash = plan.hash().map_err(GateError::from)?;
        let now = self.clock.now();
        let mut request = ApprovalRequest::new(id.to_owned(), plan, hash, level, now, expires_at);
        request.context = Some(prepared_context(&self.config, requester, tool, level));
        let event = self.approval_record(EventKind::ApprovalRequested, &request, &request.requester, None, None);
        // INVARIANT: the request and its `approval_requested` event commit together. A prepared
        // request keeps its chosen id and never takes the plan's one pending slot (the gate's).
        self.stores.approvals.create_prepared_request(&request, self.stores.evidence(vec![event])).await?;
        crate::notify::announce(self.notifier.as_ref(), &request);
        Ok(request)
    }

    /// Adds `approver`'s grant to request `id` of the approver's tenant (a library caller: the
    /// audit event names no way of authenticating; see [`ApprovalDesk::grant_via`]).
    pub async fn grant(&self, approver: &Principal, id: &str) -> Result<ApprovalRequest, ApprovalError> {
        self.grant_as(approver, id, None).await
    }

    /// [`ApprovalDesk::grant`] by an operator who authenticated as `auth` says (a token, or `--as` on an
    /// embedded store); the grant's audit event (and a refusal's) records it.
    pub async fn grant_via(
        &self,
        approver: &Principal,
        id: &str,
        auth: OperatorAuth,
    ) -> Result<ApprovalRequest, ApprovalError> {
        self.grant_as(approver, id, Some(auth)).await
    }

    async fn grant_as(
        &self,
        approver: &Principal,
        id: &str,
        auth: Option<OperatorAuth>,
    ) -> Result<ApprovalRequest, ApprovalError> {
        bounded_id(id)?;
        for _ in 0..GRANT_RETRIES {
            let request = self.load_request(approver, id, EventKind::ApprovalGranted, auth).await?;
            let now = self.clock.now();
            let service = service_of(self, &request);
            if let Err(r) = approval::check_grant(&request, approver, service.as_deref(), now) {
                let mut record = self.approval_record(
                    EventKind::ApprovalGranted,
                    &request,
                    &approver.subject,
                    Some(&r),
                    Some(Decision::Rejected),
                );
                record.auth = auth;
                self.stores.audit.append(vec![record]).await?;
                return Err(ApprovalError::Refused(r));
            }
            let grant =
                Grant { approver: approver.subject.clone(), sign_off: approver.has_scope(SCOPE_SIGN_OFF), at: now };
            let mut grants = request.grants.clone();
            grants.push(grant.clone());
            let granted = approval::satisfies(request.level, &grants);
            let expected = request.grants.len();
            let mut updated = request;
            updated.grants = grants;
            if granted {
                updated.status = ApprovalStatus::Granted;
            }
            let mut event = self.approval_record(
                EventKind::ApprovalGranted,
                &updated,
                &approver.subject,
                None,
                Some(Decision::Executed),
            );
            event.auth = auth;
            // INVARIANT: the grant and its `approval_granted` event commit together.
            let audit = self.stores.evidence(vec![event]);
            match self.stores.approvals.add_grant(&updated.tenant, id, expected, &grant, granted, audit).await {
                Ok(()) => {
                    metrics::counter!("bridle_approvals_granted_total").increment(1);
                    if granted {
                        record_wait(&updated, "granted", self.clock.now());
                    }
                    return Ok(updated);
                }
                Err(StoreError::Contention(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StoreError::Contention(format!("approval `{id}`")).into())
    }

    /// Rejects pending request `id` with a reason.
    /// A reason breaking `bridle_core::bounds::check_reason` (over 2,000 characters, a NUL or
    /// another control character) is refused with `bad_request` and the request stays pending.
    pub async fn reject(&self, approver: &Principal, id: &str, reason: &str) -> Result<ApprovalRequest, ApprovalError> {
        self.reject_as(approver, id, reason, None).await
    }

    /// [`ApprovalDesk::reject`] by an operator who authenticated as `auth` says; the rejection's audit
    /// event records it.
    pub async fn reject_via(
        &self,
        approver: &Principal,
        id: &str,
        reason: &str,
        auth: OperatorAuth,
    ) -> Result<ApprovalRequest, ApprovalError> {
        self.reject_as(approver, id, reason, Some(auth)).await
    }

    async fn reject_as(
        &self,
        approver: &Principal,
        id: &str,
        reason: &str,
        auth: Option<OperatorAuth>,
    ) -> Result<ApprovalRequest, ApprovalError> {
        bounded_id(id)?;
        bounds::check_reason("reason", reason).map_err(|e| ApprovalError::Refused(e.rejection()))?;
        let request = self.load_request(approver, id, EventKind::ApprovalRejected, auth).await?;
        let service = service_of(self, &request);
        // Rejecting needs the same standing as granting, except that expiry does not matter.
        if let Err(r) = approval::check_grant(&request, approver, service.as_deref(), request.created_at) {
            return Err(ApprovalError::Refused(r));
        }
        let mut updated = request;
        updated.status = ApprovalStatus::Rejected;
        updated.rejection_reason = Some(reason.to_owned());
        let mut event = self.approval_record(
            EventKind::ApprovalRejected,
            &updated,
            &approver.subject,
            None,
            Some(Decision::Rejected),
        );
        event.auth = auth;
        // INVARIANT: the rejection and its `approval_rejected` event commit together.
        let audit = self.stores.evidence(vec![event]);
        match self.stores.approvals.reject_request(&updated.tenant, id, &approver.subject, reason, audit).await {
            Ok(()) => {}
            Err(StoreError::Contention(_)) => {
                return Err(ApprovalError::Refused(Rejection::new(
                    Code::ApproverDenied,
                    format!("approval `{id}` is no longer pending"),
                )));
            }
            Err(e) => return Err(e.into()),
        }
        metrics::counter!("bridle_approvals_rejected_total").increment(1);
        record_wait(&updated, "rejected", self.clock.now());
        Ok(updated)
    }

    /// The current state of the resource the request's plan acts on, to show the plan's diff
    /// against it ([`approval::diff`]). Read as step 6 reads it: with the read tool named by the
    /// tool's `max_delta.read_tool`, under that read tool's own executor identity (never the
    /// approver's), in the request's tenant; nothing that changes state is executed.
    /// `Ok(None)`: nothing to compare with (the tool names no resource or no read tool).
    /// `Err(reason)`: the read failed (unregistered read tool, adapter down, timeout); the
    /// request itself is still shown.
    pub async fn current_state(&self, request: &ApprovalRequest) -> Result<Option<Value>, CurrentStateError> {
        let Some(tool) = self.config.registry.get(&request.plan.tool) else { return Ok(None) };
        if tool.resource.is_none() {
            return Ok(None);
        }
        let Some(read_tool) = tool.params.values().find_map(|r| r.max_delta.as_ref()).map(|d| &d.read_tool) else {
            return Ok(None);
        };
        let reader =
            self.config.registry.get(read_tool).ok_or_else(|| CurrentStateError::UnknownReadTool(read_tool.clone()))?;
        if reader.mode != Mode::Read {
            return Err(CurrentStateError::NotARead(read_tool.clone()));
        }
        match read_state(self.adapter.as_ref(), &request.plan, reader, &request.plan.arguments).await {
            Ok(state) => Ok(Some(state)),
            Err(ReadFailure::Adapter(e)) => Err(CurrentStateError::Adapter(e)),
            Err(ReadFailure::Timeout) => Err(CurrentStateError::Timeout),
        }
    }

    /// Pending requests of the caller's tenant.
    pub async fn pending_approvals(&self, caller: &Principal) -> Result<Vec<ApprovalRequest>, ApprovalError> {
        Ok(self.stores.approvals.list_pending(&caller.tenant, self.clock.now()).await?)
    }

    /// Pending, unexpired requests per tenant across the store (the pending-approvals gauge;
    /// `/metrics` is for a `metrics:read` token, not a tenant's operator).
    pub async fn pending_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.stores.approvals.count_pending(self.clock.now()).await
    }

    /// Request `id` of the caller's tenant. A miss (an unknown id, or another tenant's: the two
    /// are indistinguishable) is refused with `not_found` and audited as the caller's attempt
    /// `kind` in the caller's own chain, never in the chain of a tenant owning that id.
    async fn load_request(
        &self,
        caller: &Principal,
        id: &str,
        kind: EventKind,
        auth: Option<OperatorAuth>,
    ) -> Result<ApprovalRequest, ApprovalError> {
        if let Some(request) = self.stores.approvals.get_request(&caller.tenant, id).await? {
            return Ok(request);
        }
        let id = shown_id(id);
        let refusal = Rejection::new(Code::NotFound, format!("no approval `{id}` for this tenant"));
        let record = AuditRecord {
            kind,
            call_id: id.to_owned(),
            at: self.clock.now(),
            // INVARIANT: the caller's tenant, never one looked up by the id.
            tenant: caller.tenant.clone(),
            subject: caller.subject.clone(),
            run_id: String::new(),
            incident: String::new(),
            tool: String::new(),
            policy_version: self.config.policy.version().to_owned(),
            plan_hash: None,
            executor_identity: None,
            approval_id: Some(id.to_owned()),
            approver: None,
            decision: Some(Decision::Rejected),
            code: Some(refusal.code.as_str().to_owned()),
            reason: Some(refusal.message.clone()),
            timings: Timings::default(),
            auth,
            versions: bridle_core::audit::Versions::tools_only(self.config.registry.schema_hash()),
        };
        self.stores.audit.append(vec![record]).await?;
        Err(ApprovalError::Refused(refusal))
    }

    /// The audit record of an approval event about `r` by `subject`.
    fn approval_record(
        &self,
        kind: EventKind,
        r: &ApprovalRequest,
        subject: &str,
        rejection: Option<&Rejection>,
        decision: Option<Decision>,
    ) -> AuditRecord {
        AuditRecord {
            kind,
            call_id: r.id.clone(),
            at: self.clock.now(),
            tenant: r.tenant.clone(),
            subject: subject.to_owned(),
            run_id: r.plan.run_id.clone(),
            incident: r.plan.incident.clone(),
            tool: r.plan.tool.clone(),
            policy_version: self.config.policy.version().to_owned(),
            plan_hash: Some(r.plan_hash.0.clone()),
            executor_identity: None,
            approval_id: Some(r.id.clone()),
            approver: r.approvers(),
            decision,
            code: rejection.map(|x| x.code.as_str().to_owned()),
            reason: rejection.map(|x| x.message.clone()),
            timings: Timings::default(),
            auth: None,
            versions: bridle_core::audit::Versions::tools_only(self.config.registry.schema_hash()),
        }
    }
}

/// What a prepared request shows the approver: why (it was prepared for review at this level)
/// and the requester's agent as its credential names it (`none` when it names none).
fn prepared_context(config: &Config, requester: &Principal, tool: &str, level: ApprovalLevel) -> Value {
    let why = bridle_core::level::Reason::Prepared { subject: requester.subject.clone(), tool: tool.to_owned(), level };
    let agent = match config.agents.acting(requester, None) {
        Ok(Some(acting)) => serde_json::json!({"id": acting.agent, "source": acting.source.as_str()}),
        _ => serde_json::json!({"id": null, "source": "none"}),
    };
    serde_json::json!({
        "reasons": bridle_core::level::texts(std::slice::from_ref(&why)),
        "why": [why],
        "agent": agent,
    })
}

/// Longest approval id written to the audit log or a message (ids come from the caller).
const MAX_SHOWN_ID: usize = 128;

/// `id` cut to [`MAX_SHOWN_ID`] characters.
fn shown_id(id: &str) -> &str {
    id.char_indices().nth(MAX_SHOWN_ID).map_or(id, |(end, _)| id.get(..end).unwrap_or(id))
}

/// The service a plan acts on, when its tool names one.
fn service_of(desk: &ApprovalDesk, r: &ApprovalRequest) -> Option<String> {
    let tool = desk.config.registry.get(&r.plan.tool)?;
    let (kind, name) = tool.resource_of(&r.tenant, &r.plan.arguments);
    (kind == "service").then_some(name)
}

/// Records how long `request` waited for its human decision (`outcome`: `granted` when its last
/// needed grant came, or `rejected`) in `bridle_approval_wait_seconds{outcome}`.
fn record_wait(request: &ApprovalRequest, outcome: &'static str, now: OffsetDateTime) {
    let waited = (now - request.created_at).as_seconds_f64().max(0.0);
    metrics::histogram!("bridle_approval_wait_seconds", "outcome" => outcome).record(waited);
}
