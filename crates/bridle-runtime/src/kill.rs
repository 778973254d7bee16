//! The kill switch, operated: set or lift a switch in the store, audit it, cancel the runs in
//! scope that this process holds, and list the work left unfinished.
//!
//! The gate's check (`gate/run_state.rs`) reads the store, so a switch set here holds on every
//! replica sharing the store at its next call. Runs: [`LiveRuns`] keeps the cancel token of
//! every run this process drives; setting a switch asks each run in scope to stop
//! (`cancel_requested`), and the run marks itself `cancelled` at its next await point. A run on
//! another replica is stopped by its own [`LiveRuns::watch`] poll, and meanwhile every tool call
//! it makes is `killed`.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bridle_core::approval::ApprovalRequest;
use bridle_core::audit::{AuditRecord, EventKind, Timings, Versions};
use bridle_core::checkpoint::{ThreadQuery, ThreadStatus, ThreadSummary};
use bridle_core::config::Config;
use bridle_core::job::Job;
use bridle_core::kill::{KillScope, KillSwitch};
use bridle_core::ports::{Checkpointer, Clock, StoreError};
use serde::Serialize;

use crate::cancel::{CancelToken, WeakCancelToken};
use crate::gate::run_state::KillCache;
use crate::store::Stores;

/// Most paused runs listed per tenant.
const MAX_RUNS_LISTED: u32 = 200;

/// Work a switch leaves unfinished: what an operator must look at.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Unfinished {
    /// Approval requests still pending in the scope's tenants.
    pub pending_approvals: Vec<ApprovalRequest>,
    /// Jobs not in a final state (`pending`, `reserved`, `dispatched`, `unknown`).
    pub jobs: Vec<Job>,
    /// Runs paused at an interrupt (waiting for a human) or interrupted mid-way.
    pub paused_runs: Vec<ThreadSummary>,
    /// Runs of this process asked to stop (thread ids).
    pub cancelled_runs: Vec<String>,
}

/// What setting or lifting a switch did.
#[derive(Debug, Clone, Serialize)]
pub struct KillReport {
    /// The switch set, or the one lifted.
    pub switch: KillSwitch,
    /// `true` when it was off before (set) / on before (lift).
    pub changed: bool,
    /// Unfinished work in its scope (set only).
    pub unfinished: Unfinished,
}

/// A live run: the agents its calls are made for, and its cancel token (weak).
type LiveRun = (Vec<String>, WeakCancelToken);

/// Runs this process drives, by thread id, with their cancel tokens.
#[derive(Debug, Clone, Default)]
pub struct LiveRuns {
    runs: Arc<Mutex<HashMap<String, LiveRun>>>,
}

impl LiveRuns {
    /// Registers a run of thread `thread_id` (`{tenant}/{run}`) whose calls are made on behalf
    /// of `agents`; its token. Only a weak handle is kept: a run whose token was dropped (it
    /// ended) is forgotten at the next registration.
    pub fn register(&self, thread_id: &str, agents: &[&str]) -> CancelToken {
        let token = CancelToken::new();
        let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        runs.retain(|_, (_, t)| t.upgrade().is_some());
        runs.insert(thread_id.to_owned(), (agents.iter().map(|a| (*a).to_owned()).collect(), token.downgrade()));
        token
    }

    /// Asks every run covered by one of `switches` to stop; the thread ids asked.
    pub fn cancel_covered(&self, switches: &[KillSwitch]) -> Vec<String> {
        let runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
        let mut asked = Vec::new();
        for (thread, (agents, weak)) in runs.iter() {
            let Some(token) = weak.upgrade() else { continue };
            let tenant = thread.split('/').next().unwrap_or_default();
            // Covered when the switch covers the run's tenant with no agent named, or names one
            // of the run's agents.
            let covered = switches
                .iter()
                .any(|s| s.scope.covers(tenant, None) || agents.iter().any(|a| s.scope.covers(tenant, Some(a))));
            if covered && !token.is_requested() {
                token.cancel();
                asked.push(thread.clone());
            }
        }
        asked.sort();
        asked
    }

    /// Polls the store every `every` and asks the runs a switch covers to stop, so a switch set
    /// on another replica (or by `bridle kill`) stops this process's runs too. Ends when the
    /// returned handle is aborted or dropped with the runtime.
    pub fn watch(&self, stores: Stores, every: Duration) -> tokio::task::JoinHandle<()> {
        let live = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let empty = {
                    let mut runs = live.runs.lock().unwrap_or_else(PoisonError::into_inner);
                    runs.retain(|_, (_, t)| t.upgrade().is_some());
                    runs.is_empty()
                };
                if empty {
                    continue;
                }
                match stores.kills.active_kills().await {
                    Ok(switches) if !switches.is_empty() => {
                        let asked = live.cancel_covered(&switches);
                        if !asked.is_empty() {
                            tracing::warn!(runs = ?asked, "kill switch: runs asked to stop");
                        }
                    }
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "kill switch watch could not read the store"),
                }
            }
        })
    }
}

/// The kill switch service over what it needs: the configuration (tenants, versions), the
/// stores, the clock, and the gate's cache of switches (cleared when this process sets or lifts
/// one). Built beside the gate by [`crate::engine::Engine::builder`].
#[derive(Clone)]
pub struct KillService {
    config: Arc<Config>,
    stores: Stores,
    clock: Arc<dyn Clock>,
    cache: Arc<KillCache>,
}

impl KillService {
    /// A service over these parts (the engine builder's).
    pub(crate) fn new(config: Arc<Config>, stores: Stores, clock: Arc<dyn Clock>, cache: Arc<KillCache>) -> Self {
        Self { config, stores, clock, cache }
    }

    /// Sets the switch of `scope` (by `who`, because `reason`: a blank one is kept as `no reason
    /// given`, an unstorable one made storable by `bridle_core::bounds::storable_reason`), audits it, asks the runs of `live`
    /// in scope to stop and lists the unfinished work.
    pub async fn set(
        &self,
        checkpointer: Option<&Arc<dyn Checkpointer>>,
        live: Option<&LiveRuns>,
        who: &str,
        scope: KillScope,
        reason: &str,
    ) -> Result<KillReport, StoreError> {
        // INVARIANT: a switch is set whatever its reason: an unstorable one is made storable.
        let reason = bridle_core::bounds::storable_reason(reason);
        let switch = KillSwitch { scope, reason, set_by: who.to_owned(), set_at: self.clock.now() };
        // INVARIANT: the switch is set with its `kill_switch_set` events, in one transaction.
        let events = self.records(EventKind::KillSwitchSet, &switch, who).await?;
        let changed = self.stores.kills.set_kill(&switch, events).await?;
        self.cache.clear();
        let mut unfinished = self.unfinished(checkpointer, &switch.scope).await?;
        if let Some(live) = live {
            unfinished.cancelled_runs = live.cancel_covered(std::slice::from_ref(&switch));
        }
        Ok(KillReport { switch, changed, unfinished })
    }

    /// Lifts the switch of exactly `scope` (by `who`) and audits it; `changed` is false when no
    /// such switch was on (nothing is audited then).
    pub async fn lift(&self, who: &str, scope: KillScope, reason: &str) -> Result<KillReport, StoreError> {
        let reason = bridle_core::bounds::storable_reason(reason);
        let switch = KillSwitch { scope, reason, set_by: who.to_owned(), set_at: self.clock.now() };
        // INVARIANT: lifted with its `kill_switch_lifted` events (appended only if one was on).
        let events = self.records(EventKind::KillSwitchLifted, &switch, who).await?;
        let lifted = self.stores.kills.lift_kill(&switch.scope, events).await?;
        self.cache.clear();
        let changed = lifted.is_some();
        Ok(KillReport { switch: lifted.unwrap_or(switch), changed, unfinished: Unfinished::default() })
    }

    /// The tenants a scope reaches: its own, or every tenant the audit log or the configuration knows.
    async fn tenants(&self, scope: &KillScope) -> Result<Vec<String>, StoreError> {
        if let Some(t) = &scope.tenant {
            return Ok(vec![t.clone()]);
        }
        let mut all: BTreeSet<String> = self.stores.audit.tenants().await?.into_iter().collect();
        all.extend(self.config.principals.values().map(|p| p.tenant.clone()));
        Ok(all.into_iter().collect())
    }

    /// One event per tenant the scope reaches (a global switch is recorded in every chain), as
    /// `[audit] evidence` keeps them.
    async fn records(&self, kind: EventKind, switch: &KillSwitch, who: &str) -> Result<Vec<AuditRecord>, StoreError> {
        let records: Vec<AuditRecord> = self
            .tenants(&switch.scope)
            .await?
            .into_iter()
            .map(|tenant| AuditRecord {
                kind,
                call_id: format!("kill:{}", switch.scope.describe()),
                at: switch.set_at,
                tenant,
                subject: who.to_owned(),
                run_id: String::new(),
                incident: String::new(),
                tool: String::new(),
                policy_version: self.config.policy.version().to_owned(),
                plan_hash: None,
                executor_identity: None,
                approval_id: None,
                approver: None,
                decision: None,
                code: (kind == EventKind::KillSwitchSet).then(|| bridle_core::Code::Killed.as_str().to_owned()),
                reason: Some(switch.reason.clone()),
                timings: Timings::default(),
                auth: None,
                versions: Versions {
                    agent_id: switch.scope.agent.clone(),
                    ..Versions::tools_only(self.config.registry.schema_hash())
                },
            })
            .collect();
        Ok(self.stores.evidence(records))
    }

    /// Pending approvals, unsettled jobs and paused runs in the scope's tenants.
    pub async fn unfinished(
        &self,
        checkpointer: Option<&Arc<dyn Checkpointer>>,
        scope: &KillScope,
    ) -> Result<Unfinished, StoreError> {
        let tenants = self.tenants(scope).await?;
        let now = self.clock.now();
        let mut out = Unfinished::default();
        for tenant in &tenants {
            out.pending_approvals.extend(self.stores.approvals.list_pending(tenant, now).await?);
            if let Some(cp) = checkpointer {
                for status in [ThreadStatus::Interrupted, ThreadStatus::Running] {
                    let query = ThreadQuery {
                        prefix: format!("{tenant}/"),
                        before: None,
                        status: Some(status),
                        limit: MAX_RUNS_LISTED,
                    };
                    out.paused_runs.extend(cp.threads(&query).await?);
                }
            }
        }
        out.jobs = self.stores.jobs.unsettled().await?.into_iter().filter(|j| tenants.contains(&j.tenant)).collect();
        Ok(out)
    }
}
