//! Shared fixtures: a gate over the bundled checkout example (or a small fab-like config) with a
//! manual clock and the in-memory adapter, on the in-memory store or a SQLite file.

use std::sync::Arc;

use bridle_core::audit::{AuditEvent, EventKind};
use bridle_core::config::{Config, load};
use bridle_core::contract::ApprovalLevel;
use bridle_core::{Principal, RunContext};
use bridle_runtime::adapter::MemoryAdapter;
use bridle_runtime::approvals::{ApprovalDesk, ApprovalDraft};
use bridle_runtime::clock::ManualClock;
use bridle_runtime::engine::{Engine, EngineBuilder};
use bridle_runtime::gate::Gate;
use bridle_runtime::jobs::Reconciler;
use bridle_runtime::kill::KillService;
use bridle_runtime::store::Stores;
use serde_json::Value;
use time::{Duration, OffsetDateTime, macros::datetime};

pub const T0: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

pub struct H {
    pub gate: Gate,
    pub desk: ApprovalDesk,
    pub reconciler: Reconciler,
    pub kills: KillService,
    pub clock: Arc<ManualClock>,
    pub adapter: Arc<MemoryAdapter>,
    pub config: Arc<Config>,
}

impl H {
    pub fn new(config: Config, stores: Stores) -> H {
        let config = Arc::new(config);
        let clock = Arc::new(ManualClock::new(T0 + Duration::seconds(10)));
        let adapter = Arc::new(MemoryAdapter::from_config(&config));
        let Engine { gate, desk, reconciler, kills } =
            Engine::builder(config.clone(), stores, adapter.clone()).clock(clock.clone()).build().unwrap();
        H { gate, desk, reconciler, kills, clock, adapter, config }
    }

    /// The engine over the same stores, adapter and clock, built with `f`'s additions (a
    /// notifier, a probe scanner).
    pub fn rebuild(&mut self, f: impl FnOnce(EngineBuilder) -> EngineBuilder) {
        let builder = Engine::builder(self.config.clone(), self.gate.stores().clone(), self.adapter.clone())
            .clock(self.clock.clone());
        let Engine { gate, desk, reconciler, kills } = f(builder).build().unwrap();
        (self.gate, self.desk, self.reconciler, self.kills) = (gate, desk, reconciler, kills);
    }

    pub fn checkout() -> H {
        H::new(bridle_runtime::bundled::checkout().unwrap(), Stores::memory())
    }

    pub async fn checkout_sqlite(dir: &tempfile::TempDir) -> H {
        let url = format!("sqlite://{}", dir.path().join("bridle.db").display());
        H::new(bridle_runtime::bundled::checkout().unwrap(), Stores::open(&url).await.unwrap())
    }

    pub fn fab() -> H {
        H::new(fab_config(), Stores::memory())
    }

    pub fn who(&self, name: &str) -> Principal {
        self.config.principals[name].clone()
    }

    /// Requests and grants (by operator-2) an approval of `scale_replicas(args)` for requester-1.
    pub async fn approved(&self, id: &str, args: &Value, run: &RunContext) -> String {
        self.requested(id, "requester-1", "scale_replicas", args, run, ApprovalLevel::Approval).await;
        self.desk.grant(&self.who("operator-2"), id).await.unwrap();
        id.to_owned()
    }

    pub async fn requested(
        &self,
        id: &str,
        requester: &str,
        tool: &str,
        args: &Value,
        run: &RunContext,
        level: ApprovalLevel,
    ) {
        let expires = self.clock_now() + Duration::minutes(10);
        let draft = ApprovalDraft { id, tool, arguments: args, level, expires_at: expires };
        self.desk.request_approval(&self.who(requester), run, &draft).await.unwrap();
    }

    pub fn clock_now(&self) -> OffsetDateTime {
        use bridle_core::ports::Clock;
        self.clock.now()
    }

    pub async fn events(&self) -> Vec<AuditEvent> {
        bridle_runtime::audit::export(self.gate.stores().audit.as_ref(), None).await.unwrap()
    }

    pub async fn tool_calls(&self) -> Vec<AuditEvent> {
        self.events().await.into_iter().filter(|e| e.record.kind == EventKind::ToolCall).collect()
    }
}

pub fn rejection(o: &bridle_runtime::CallOutcome) -> bridle_core::Rejection {
    match &o.verdict {
        bridle_runtime::Verdict::Rejected { rejection } => rejection.clone(),
        other => panic!("not rejected: {other:?}"),
    }
}

pub fn run() -> RunContext {
    RunContext::new("run-101", "inc-42")
}

pub const FAB_TOML: &str = r#"
[policy]
schema = "fab.cedarschema"
files = ["fab.cedar"]

[executors.fab-reader]
mode = "read"
[executors.fab-changer]
mode = "change"

[tools.get_recipe]
description = "Read an equipment's current recipe setpoints."
mode = "read"
scope = "fab:read"
risk = "read"
executor = "fab-reader"
resource = { kind = "equipment", param = "equipment" }
input_schema = { type = "object", additionalProperties = false, required = ["equipment"], properties = { equipment = { type = "string" } } }

[tools.set_temperature]
description = "Set a chamber temperature setpoint."
mode = "change"
scope = "fab:change"
risk = "limited_change"
executor = "fab-changer"
approval = "auto"
timeout_ms = 200
resource = { kind = "equipment", param = "equipment" }
input_schema = { type = "object", additionalProperties = false, required = ["equipment", "temp_celsius"], properties = { equipment = { type = "string" }, temp_celsius = { type = "number" }, reason = { type = "string" } } }

[tools.set_temperature.params.temp_celsius]
min = 200
max = 450
step = 5
requires_approval_above = 400
max_delta = { value = 5, read_tool = "get_recipe", field = "temp_celsius" }

[tools.set_temperature.params.reason]
scan = true

[principals.engineer]
tenant = "fab-1"
services = ["etch-01"]
scopes = ["fab:read", "fab:change"]

[principals.supervisor]
tenant = "fab-1"
services = ["etch-01"]
scopes = ["approval:grant", "approval:sign_off"]

[[adapter.memory]]
tenant = "fab-1"
key = "etch-01"
state = { temp_celsius = 380 }
"#;

pub const FAB_SCHEMA: &str = r#"
namespace Bridle {
  entity Principal = { tenant: String, services: Set<String>, scopes: Set<String> };
  entity Resource = { tenant: String, kind: String, name: String };
  action get_recipe appliesTo { principal: Principal, resource: Resource,
    context: { scope: String, mode: String, risk: String, arguments: { equipment: String } } };
  action set_temperature appliesTo { principal: Principal, resource: Resource,
    context: { scope: String, mode: String, risk: String,
      arguments: { equipment: String, temp_celsius: decimal, reason?: String } } };
}
"#;

pub const FAB_POLICY: &str = r#"
@id("equipment-held")
permit (principal, action, resource)
when { resource.tenant == principal.tenant && principal.scopes.contains(context.scope)
       && principal.services.contains(resource.name) };
"#;

pub fn fab_config() -> Config {
    let files = |p: &str| match p {
        "fab.cedarschema" => Ok(FAB_SCHEMA.to_owned()),
        "fab.cedar" => Ok(FAB_POLICY.to_owned()),
        _ => Err(format!("no file `{p}`")),
    };
    load(FAB_TOML, &files).unwrap_or_else(|e| panic!("{e}"))
}

/// The PostgreSQL URL the PostgreSQL tests use (`BRIDLE_TEST_POSTGRES_URL`, e.g.
/// `postgres://postgres@127.0.0.1:5432/test`). `None` (after printing why) means skip the test;
/// under `CI=true` an unset variable panics instead, so a green CI always ran PostgreSQL. A set
/// URL whose server cannot be reached fails the test where it connects.
pub fn postgres_url() -> Option<String> {
    match std::env::var("BRIDLE_TEST_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "BRIDLE_TEST_POSTGRES_URL is unset but CI=true: the PostgreSQL tests must run in CI"
            );
            eprintln!("skipped: BRIDLE_TEST_POSTGRES_URL is unset, so the PostgreSQL tests do not run");
            None
        }
    }
}
