//! `bridle demo`: seed 004's twelve cases on the bundled checkout example, each asserted.
//!
//! Logical time as in the seed: calls happen at T0+10 s, the run's deadline is T0+120 s, one
//! approval expires at T0+9 s and the others at T0+60 s.

use std::sync::Arc;

use bridle_core::audit::{Decision, EventKind};
use bridle_core::config::Config;
use bridle_core::contract::ApprovalLevel;
use bridle_core::guard::GuardError;
use bridle_core::runs::RunLimits;
use bridle_core::{Code, Principal, RunContext};
use bridle_runtime::adapter::MemoryAdapter;
use bridle_runtime::approvals::{ApprovalDesk, ApprovalDraft, ApprovalError};
use bridle_runtime::clock::ManualClock;
use bridle_runtime::engine::Engine;
use bridle_runtime::gate::{CallOutcome, CallRequest, Gate, GateError};
use bridle_runtime::store::Stores;
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime, macros::datetime};

/// The demo's logical time zero.
pub const T0: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

/// What the demo printed and whether it held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoReport {
    /// Output lines, in order.
    pub lines: Vec<String>,
    /// The first case (or final check) that diverged from the seed.
    pub diverged: Option<String>,
}

/// The demo could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A fixture is missing from the configuration.
    #[error("the configuration lacks {0}")]
    Fixture(String),
    /// The store already holds an earlier demo run.
    #[error("the store already holds the demo's approvals; run the demo on a fresh database")]
    StoreNotFresh,
    /// The store or gate failed.
    #[error("gate")]
    Gate(#[from] GateError),
    /// An approval fixture could not be created.
    #[error("approval fixture")]
    Approval(#[from] ApprovalError),
    /// The guard's scanner could not be built.
    #[error("guard")]
    Guard(#[from] GuardError),
}

struct Demo {
    gate: Gate,
    desk: ApprovalDesk,
    clock: Arc<ManualClock>,
    adapter: Arc<MemoryAdapter>,
    requester: Principal,
    approver: Principal,
    run: RunContext,
    lines: Vec<String>,
    diverged: Option<String>,
}

/// Runs the twelve cases against `stores` with the bundled fixtures.
pub async fn run(config: Arc<Config>, stores: Stores) -> Result<DemoReport, DemoError> {
    let fixture = |name: &str| {
        config.principals.get(name).cloned().ok_or_else(|| DemoError::Fixture(format!("principal `{name}`")))
    };
    let requester = fixture("requester-1")?;
    let approver = fixture("operator-2")?;
    if stores.approvals.get_request(&requester.tenant, "a-valid").await.map_err(GateError::from)?.is_some() {
        return Err(DemoError::StoreNotFresh);
    }
    let clock = Arc::new(ManualClock::new(T0 + Duration::seconds(10)));
    let adapter = Arc::new(MemoryAdapter::from_config(&config));
    // The run's limits, as `[limits]` sets them for every entry point: 110 s from its first call
    // (at T0+10 s, so until T0+120 s) and nine calls, which the cases before `budget` use up (a
    // cancelled call or one past the deadline is refused before it is counted).
    let mut config = Config::clone(&config);
    config.limits.defaults =
        RunLimits { calls: Some(9), deadline: Some(std::time::Duration::from_secs(110)), concurrency: None };
    let Engine { gate, desk, .. } =
        Engine::builder(Arc::new(config), stores, adapter.clone()).clock(clock.clone()).build()?;
    let run = RunContext::new("run-101", "inc-42");
    let mut demo = Demo { gate, desk, clock, adapter, requester, approver, run, lines: Vec::new(), diverged: None };
    demo.cases().await?;
    demo.final_checks().await?;
    Ok(DemoReport { lines: demo.lines, diverged: demo.diverged })
}

impl Demo {
    async fn cases(&mut self) -> Result<(), DemoError> {
        let read = json!({"service": "checkout"});
        let change = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
        let stale = json!({"service": "checkout", "replicas": 3, "resource_version": 6});
        let four = json!({"service": "checkout", "replicas": 4, "resource_version": 7});
        let t = |s| T0 + Duration::seconds(s);

        self.case("read", CallRequest::new("get_service_snapshot", read.clone()), None).await?;
        self.case(
            "denied",
            CallRequest::new("get_service_snapshot", json!({"service": "payments"})),
            Some(Code::PolicyDenied),
        )
        .await?;
        let injected = json!({"service": "checkout", "tenant": "tenant-b"});
        self.case("tenant_injection", CallRequest::new("get_service_snapshot", injected), Some(Code::SchemaRejected))
            .await?;
        self.case("approval_missing", CallRequest::new("scale_replicas", change.clone()), Some(Code::ApprovalRequired))
            .await?;
        self.approve("a-expired", &change, t(9)).await?;
        self.case(
            "approval_expired",
            CallRequest::new("scale_replicas", change.clone()).with_approval("a-expired"),
            Some(Code::ApprovalExpired),
        )
        .await?;
        self.approve("a-plan", &change, t(60)).await?;
        self.case(
            "plan_changed",
            CallRequest::new("scale_replicas", four).with_approval("a-plan"),
            Some(Code::PlanChanged),
        )
        .await?;
        self.approve("a-stale", &stale, t(60)).await?;
        self.case(
            "stale_resource",
            CallRequest::new("scale_replicas", stale).with_approval("a-stale"),
            Some(Code::ResourceVersionChanged),
        )
        .await?;
        self.approve("a-valid", &change, t(60)).await?;
        self.case("valid_approval", CallRequest::new("scale_replicas", change.clone()).with_approval("a-valid"), None)
            .await?;
        self.case(
            "replay",
            CallRequest::new("scale_replicas", change).with_approval("a-valid"),
            Some(Code::ApprovalReplayed),
        )
        .await?;
        self.run.cancelled = true;
        self.case("cancelled", CallRequest::new("get_service_snapshot", read.clone()), Some(Code::Cancelled)).await?;
        self.run.cancelled = false;
        self.clock.set(t(120));
        self.case("deadline", CallRequest::new("get_service_snapshot", read.clone()), Some(Code::DeadlineExceeded))
            .await?;
        self.clock.set(t(10));
        // No calls remain: the nine counted calls are the run's limit.
        self.case("budget", CallRequest::new("get_service_snapshot", read), Some(Code::BudgetExhausted)).await
    }

    /// Creates and grants an approval for `args` that expires at `expires_at`.
    async fn approve(&mut self, id: &str, args: &Value, expires_at: OffsetDateTime) -> Result<(), DemoError> {
        // Fixtures are prepared at T0+5 s, before any of them expires.
        self.clock.set(T0 + Duration::seconds(5));
        let (desk, requester, run) = (&self.desk, &self.requester, &self.run);
        let draft =
            ApprovalDraft { id, tool: "scale_replicas", arguments: args, level: ApprovalLevel::Approval, expires_at };
        desk.request_approval(requester, run, &draft).await?;
        desk.grant(&self.approver, id).await?;
        self.clock.set(T0 + Duration::seconds(10));
        Ok(())
    }

    async fn case(&mut self, label: &str, req: CallRequest, expected: Option<Code>) -> Result<(), DemoError> {
        let outcome = self.gate.call(&self.requester, &self.run, &req).await?;
        self.lines.push(format!("{label}: {}", describe(&outcome)));
        if outcome.code() != expected {
            self.diverge(format!(
                "{label}: expected {}, got {}",
                expected.map_or("ok", Code::as_str),
                describe(&outcome)
            ));
        }
        Ok(())
    }

    fn diverge(&mut self, why: String) {
        if self.diverged.is_none() {
            self.diverged = Some(why);
        }
    }

    async fn final_checks(&mut self) -> Result<(), DemoError> {
        let state = self.adapter.snapshot(&self.requester.tenant, "checkout").unwrap_or(Value::Null);
        let field = |k: &str| state.get(k).cloned().unwrap_or(Value::Null);
        let line = format!("final replicas={} resource_version={}", field("replicas"), field("resource_version"));
        if state != json!({"replicas": 3, "resource_version": 8}) {
            self.diverge(line.clone());
        }
        self.lines.push(line);
        let events = bridle_runtime::audit::export(self.gate.stores().audit.as_ref(), Some(&self.requester.tenant))
            .await
            .map_err(GateError::from)?;
        let calls: Vec<_> = events
            .iter()
            .filter(|e| e.record.kind == EventKind::ToolCall && e.record.run_id == self.run.run_id)
            .collect();
        let count = |d| calls.iter().filter(|e| e.record.decision == Some(d)).count();
        let line = format!(
            "audit_events={} executed={} rejected={}",
            calls.len(),
            count(Decision::Executed),
            count(Decision::Rejected)
        );
        if (calls.len(), count(Decision::Executed), count(Decision::Rejected)) != (12, 2, 10) {
            self.diverge(line.clone());
        }
        self.lines.push(line);
        self.lines.push(if self.diverged.is_none() {
            "assertions=passed".to_owned()
        } else {
            "assertions=failed".to_owned()
        });
        Ok(())
    }
}

/// `ok replicas=N resource_version=V` or `rejected reason=CODE`.
fn describe(o: &CallOutcome) -> String {
    match (o.result(), o.code()) {
        (Some(r), _) => {
            let field = |k: &str| r.get(k).cloned().unwrap_or(Value::Null);
            format!("ok replicas={} resource_version={}", field("replicas"), field("resource_version"))
        }
        (None, Some(code)) => format!("rejected reason={code}"),
        (None, None) => "dry_run".to_owned(),
    }
}
