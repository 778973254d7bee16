//! Seed 000's fab pipeline on the graph runtime: anomaly → Diagnostician → triage → recipe →
//! Advisor → the gate → (approval) → executed, with the operator's rejections fed back.
//!
//! ```text
//! START → diagnose → triage ─┬→ END (inconclusive)
//!                            └→ read_recipe → advise ─┬→ END (no proposal)
//!                                                     └→ propose ─┬→ END (executed / refused)
//!                                                                 └→ await_approval ─┬→ END (executed / refused / expired)
//!                                                                                    └→ regenerate ─┬→ advise (round + 1)
//!                                                                                                   └→ END (rejected)
//! ```
//!
//! What code decides here, never the model: a top candidate below `[diagnosis]
//! inconclusive_below` ends the run `inconclusive`; near-equal candidates (`candidate_margin`)
//! pause the run (`triage`) until an operator names one, every near-equal one offered; when the
//! model fails (timeout, circuit open, invalid answer after its retry) the `[[fallback]]` rules
//! answer and the result is marked degraded, which the gate never runs without approval; the
//! lower of the two agents' confidences goes to the gate, which escalates below `[levels]
//! low_confidence` and after too many automatic changes on one equipment; a rejected plan goes
//! back to the Advisor with the operator's reason, at most `max_rounds` times. Every LLM call
//! is a decision record. Tool calls carry keys fixed by run and round, so a resumed or
//! recovered run never repeats a side effect.

mod agents;
mod nodes;

use std::sync::Arc;
use std::time::Duration;

use bridle_core::Principal;
use bridle_core::contract::Mode;
use bridle_core::diagnosis::{DiagnosisSettings, FallbackRule};
use bridle_runtime::agent::Agent;
use bridle_runtime::gate::Gate;
use bridle_runtime::graph::{
    END, Graph, GraphBuilder, Kind, NodeOptions, Reducer, START, State, StateSchema, Target, node_fn,
};
use bridle_runtime::llm::LlmClient;
use serde_json::Value;

use super::PipelineError;

pub use agents::{ADVISOR, DIAGNOSTICIAN, diagnosis_schema};

/// Most times one approval pause is re-entered (a resume while the request is still pending).
pub const MAX_WAITS: u32 = 20;

/// Settings of the pipeline.
#[derive(Debug, Clone)]
pub struct FabOptions {
    /// Deadline of each model call (seed 000: 30 s).
    pub llm_timeout: Duration,
    /// Thresholds of triage and of the regenerate loop.
    pub diagnosis: DiagnosisSettings,
    /// Rules answering when the model cannot.
    pub fallback: Vec<FallbackRule>,
}

impl FabOptions {
    /// The configuration's `[diagnosis]`, `[[fallback]]` and model-call deadline
    /// (`[runtime.deadlines] llm_call_ms`, seed 000's 30 s by default).
    pub fn from_config(config: &bridle_core::config::Config) -> Self {
        Self {
            llm_timeout: config.runtime.deadlines.llm_call,
            diagnosis: config.diagnosis,
            fallback: config.fallback.clone(),
        }
    }
}

/// What the nodes share.
pub(crate) struct Fab {
    pub gate: Gate,
    pub client: Arc<dyn LlmClient>,
    /// The principal the agents act for (the requester of every plan).
    pub principal: Principal,
    pub options: FabOptions,
    pub diagnostician: Agent,
    pub advisor: Agent,
}

fn schema() -> StateSchema {
    StateSchema::new()
        .field("anomaly", Kind::Object, Reducer::Replace)
        // Who started the run, when it was started over the API: a resumed run acts for them.
        .field("requester", Kind::Object, Reducer::Replace)
        .field("incident", Kind::String, Reducer::Replace)
        .field("candidates", Kind::Array, Reducer::Replace)
        .field("diagnosis", Kind::Object, Reducer::Replace)
        .field("recipe", Kind::Object, Reducer::Replace)
        .field("advice", Kind::Object, Reducer::Replace)
        .field("round", Kind::Integer, Reducer::Replace)
        .field("pending", Kind::Object, Reducer::Replace)
        .field("rejections", Kind::Array, Reducer::Append)
        .field("degraded", Kind::Bool, Reducer::Replace)
        .field("errors", Kind::Array, Reducer::Append)
        .field("outcome", Kind::Object, Reducer::Replace)
}

/// `END` once the run has an outcome, else `next`.
fn unless_done(next: &'static str) -> impl Fn(&State) -> Vec<Target> + Send + Sync + 'static {
    move |s| vec![Target::node(if done(s) { END } else { next })]
}

fn done(s: &State) -> bool {
    s.get("outcome").is_some_and(|o| !o.is_null())
}

/// Builds the pipeline acting as `principal`. Input: `{"anomaly": {"equipment", "metric",
/// "value", …}, "incident": "…"}`; the result is the final state's `outcome`
/// (`{"status": "executed" | "refused" | "rejected" | "inconclusive" | "failed" | "expired", …}`).
pub fn fab_graph(
    gate: Gate,
    client: Arc<dyn LlmClient>,
    principal: Principal,
    options: FabOptions,
) -> Result<Graph, PipelineError> {
    let actions: Vec<(String, String)> = gate
        .config()
        .registry
        .iter()
        .filter(|t| t.mode == Mode::Change)
        .map(|t| (t.name.clone(), t.description.clone()))
        .collect();
    // Only the tools the Advisor is registered for are offered to it.
    let registered = gate.config().agents.clone();
    let actions: Vec<(String, String)> = match registered.get(ADVISOR) {
        Some(entry) => actions.into_iter().filter(|(name, _)| entry.tools.contains(name)).collect(),
        None => actions,
    };
    let template = |id: &str| registered.get(id).map(|a| a.prompt.clone());
    let diagnostician = Agent::new(agents::diagnostician(template(DIAGNOSTICIAN).as_deref()))?;
    let advisor = Agent::new(agents::advisor(&actions, template(ADVISOR).as_deref()))?;
    let max_rounds = options.diagnosis.max_rounds.max(1);
    let fab = Arc::new(Fab { gate, client, principal, options, diagnostician, advisor });
    let f = |fab: &Arc<Fab>| fab.clone();
    let (f1, f2, f3, f4, f5, f6) = (f(&fab), f(&fab), f(&fab), f(&fab), f(&fab), f(&fab));
    GraphBuilder::new("seed000-fab", schema())
        .node("diagnose", node_fn(move |s, ctx| nodes::diagnose(f1.clone(), s, ctx)))
        .node("triage", node_fn(move |s, ctx| nodes::triage(f2.clone(), s, ctx)))
        .node("read_recipe", node_fn(move |s, ctx| nodes::read_recipe(f3.clone(), s, ctx)))
        .node("advise", node_fn(move |s, ctx| nodes::advise(f4.clone(), s, ctx)))
        .node("propose", node_fn(move |s, ctx| nodes::propose(f5.clone(), s, ctx)))
        .node("await_approval", node_fn(move |s, ctx| nodes::await_approval(f6.clone(), s, ctx)))
        // The regenerate loop is bounded twice: by the round count and by the node's own bound.
        .node_with(
            "regenerate",
            node_fn(move |s, _| async move { Ok(nodes::regenerate(&s, max_rounds)) }),
            NodeOptions::default().max_iterations(max_rounds.saturating_add(1)),
        )
        .edge(START, "diagnose")
        .edge("diagnose", "triage")
        .route("triage", &["read_recipe", END], unless_done("read_recipe"))
        .edge("read_recipe", "advise")
        .route("advise", &["propose", END], unless_done("propose"))
        .route("propose", &["await_approval", END], unless_done("await_approval"))
        .route("await_approval", &["regenerate", END], unless_done("regenerate"))
        .route("regenerate", &["advise", END], unless_done("advise"))
        .build()
        .map_err(PipelineError::from)
}

/// The outcome of a finished run's state (`null` while it is paused).
pub fn outcome(state: &Value) -> Value {
    state.get("outcome").cloned().unwrap_or(Value::Null)
}
