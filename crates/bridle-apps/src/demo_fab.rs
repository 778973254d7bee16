//! `bridle demo fab`: seed 000's failures on the fab example, each shown stopped by code.
//!
//! Every scenario runs the real pipeline ([`crate::pipelines::fab`]) or chat over the gate, the
//! store and a fresh fab simulator, with a scripted model (`examples/fab/scripts/*.toml`), and
//! is judged from what the store recorded — audit events and decision records — and what the
//! simulator applied, never from the pipeline's own report. Run ids carry a fresh tag, so the
//! demo can run again on the same database.

mod chat;
mod scenarios;

use std::sync::Arc;
use std::time::Duration;

use bridle_core::audit::AuditEvent;
use bridle_core::checkpoint::Strictness;
use bridle_core::config::Config;
use bridle_core::decision::DecisionRecord;
use bridle_core::ports::Checkpointer;
use bridle_core::{Principal, Rejection};
use bridle_runtime::adapter::FabAdapter;
use bridle_runtime::gate::GateError;
use bridle_runtime::graph::{Graph, RunConfig, RunOutcome};
use bridle_runtime::llm::scripted::ScriptedModel;
use bridle_runtime::store::Stores;
use serde_json::Value;

use crate::demo::{DemoError, DemoReport};
use crate::pipelines::fab::{FabOptions, fab_graph};

/// The scenarios, in the order they run and print.
pub const SCENARIOS: [&str; 10] = [
    "etch_delta_rejected",
    "diagnosis_candidates_need_human",
    "chat_injection_blocked",
    "canary_leak_blocked",
    "runaway_loop_stopped",
    "negative_temperature_rejected",
    "llm_down_rule_fallback",
    "reject_regenerate_reapprove",
    "history_escalates_failed_action",
    "auto_limit_escalates",
];

/// Model deadline in the demo (seed 000 uses 30 s; the demo's scripted model answers at once
/// or fails at once, so short deadlines keep the whole demo well under a minute).
const DEMO_LLM_TIMEOUT: Duration = Duration::from_secs(2);

/// What every scenario shares.
pub(crate) struct Fixture {
    pub config: Arc<Config>,
    pub stores: Stores,
    pub checkpointer: Arc<dyn Checkpointer>,
    pub requester: Principal,
    pub approver: Principal,
    pub chat_operator: Principal,
    /// Makes this invocation's run ids unique.
    pub tag: String,
}

/// One pipeline run's parts.
pub(crate) struct Rig {
    pub desk: bridle_runtime::approvals::ApprovalDesk,
    pub fab: Arc<FabAdapter>,
    pub model: Arc<ScriptedModel>,
    pub graph: Graph,
    pub thread: String,
}

/// A scenario's verdict: `Err(why)` when it failed.
pub(crate) type Check = Result<(), String>;

/// Fails the scenario with `why` unless `ok`.
pub(crate) fn ensure(ok: bool, why: impl FnOnce() -> String) -> Check {
    if ok { Ok(()) } else { Err(why()) }
}

impl Fixture {
    /// The engine over this fixture's stores and the given simulator.
    pub(crate) fn engine(&self, fab: Arc<FabAdapter>) -> Result<bridle_runtime::engine::Engine, String> {
        bridle_runtime::engine::Engine::builder(self.config.clone(), self.stores.clone(), fab)
            .build()
            .map_err(|e| e.to_string())
    }

    /// The pipeline over a fresh simulator and the named script.
    pub(crate) fn rig(&self, scenario: &str, script: &str) -> Result<Rig, String> {
        let fab = Arc::new(FabAdapter::from_config(&self.config));
        let bridle_runtime::engine::Engine { gate, desk, .. } = self.engine(fab.clone())?;
        let model = Arc::new(ScriptedModel::from_toml_str(script).map_err(|e| format!("script: {e}"))?);
        let mut options = FabOptions::from_config(&self.config);
        options.llm_timeout = DEMO_LLM_TIMEOUT;
        let graph = fab_graph(gate, model.clone(), self.requester.clone(), options).map_err(|e| e.to_string())?;
        Ok(Rig { desk, fab, model, graph, thread: format!("fab-demo/{}/{scenario}", self.tag) })
    }

    /// A run on the store's checkpointer within the pipeline deadline (`[runtime.deadlines]
    /// pipeline_ms`, seed 000's 5 minutes by default).
    pub fn run_config(&self, thread: &str) -> RunConfig {
        RunConfig::new(thread).checkpointer(self.checkpointer.clone()).deadline(self.config.runtime.deadlines.pipeline)
    }

    /// Audit events of one run, oldest first.
    pub(crate) async fn events(&self, run_id: &str) -> Result<Vec<AuditEvent>, String> {
        let mut out = Vec::new();
        let mut after = 0;
        loop {
            let page = self
                .stores
                .audit
                .events(&self.requester.tenant, after, 500)
                .await
                .map_err(|e| format!("audit log: {e}"))?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            out.extend(page.into_iter().filter(|e| e.record.run_id == run_id));
        }
        Ok(out)
    }

    /// Decision records of one run, oldest first.
    pub(crate) async fn decisions(&self, run_id: &str) -> Result<Vec<DecisionRecord>, String> {
        let mut all = self
            .stores
            .decisions
            .recent(&self.requester.tenant, 10_000)
            .await
            .map_err(|e| format!("decision log: {e}"))?;
        all.retain(|d| d.pipeline_run_id == run_id);
        all.reverse();
        Ok(all)
    }
}

/// The run's outcome state, or why the run did not end normally.
pub(crate) fn finished(result: Result<RunOutcome, Rejection>) -> Result<RunOutcome, String> {
    result.map_err(|r| format!("the run failed: {}: {}", r.code.as_str(), r.message))
}

/// The `outcome` of a finished run.
pub(crate) fn outcome_of(run: &RunOutcome) -> Value {
    crate::pipelines::fab::outcome(&run.state)
}

/// Runs every scenario against `stores` with the fab configuration and prints one line each.
pub async fn run(config: Arc<Config>, stores: Stores) -> Result<DemoReport, DemoError> {
    let fixture = |name: &str| {
        config.principals.get(name).cloned().ok_or_else(|| DemoError::Fixture(format!("principal `{name}`")))
    };
    let requester = fixture("advisor-agent")?;
    let approver = fixture("operator-kim")?;
    let chat_operator = fixture("operator-lee")?;
    let checkpointer = bridle_runtime::checkpoint::open_checkpointer(&stores.url, Strictness::default())
        .await
        .map_err(|e| DemoError::Gate(GateError::Store(e)))?;
    let tag = uuid::Uuid::now_v7().simple().to_string();
    let fx = Fixture {
        config,
        stores,
        checkpointer,
        requester,
        approver,
        chat_operator,
        tag: tag.get(tag.len().saturating_sub(12)..).unwrap_or(&tag).to_owned(),
    };
    let mut lines = Vec::new();
    let mut diverged = None;
    for name in SCENARIOS {
        let verdict = scenarios::run(&fx, name).await;
        let line = match &verdict {
            Ok(()) => format!("{name}: passed"),
            Err(why) => format!("{name}: FAILED ({why})"),
        };
        if verdict.is_err() && diverged.is_none() {
            diverged = Some(name.to_owned());
        }
        lines.push(line);
    }
    Ok(DemoReport { lines, diverged })
}
