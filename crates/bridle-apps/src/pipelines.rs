//! Pipelines assembled on the graph runtime: seed 001's analysis graph (`analysis.rs`) and seed
//! 000's fab pipeline (`fab.rs`), and [`registry`], the pipelines `/v1/runs` may start.

pub mod analysis;
pub mod fab;

use std::sync::Arc;

use bridle_core::Principal;
use bridle_runtime::graph::Graph;
use bridle_runtime::llm::LlmClient;
use bridle_runtime::runs::Pipeline;
use bridle_runtime::runtime::Runtime;

/// A pipeline's graph could not be assembled (an agent's output schema, the graph's wiring).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// An agent's output schema does not compile.
    #[error(transparent)]
    Agent(#[from] bridle_runtime::agent::AgentError),
    /// The graph is not well formed.
    #[error(transparent)]
    Graph(#[from] bridle_runtime::graph::GraphError),
}

/// A pipeline graph that could not be built.
type BuildError = Box<dyn std::error::Error + Send + Sync>;

/// The pipelines a run may name: `analysis` (acting for the tenant) and `fab` (acting for whoever
/// started it, kept in the run's state as `requester`, with its two agents).
pub fn registry() -> Vec<Pipeline> {
    vec![
        Pipeline { name: "analysis", graph: "seed001-analysis", agents: &[], starter_field: None, build: analysis_run },
        Pipeline {
            name: "fab",
            graph: "seed000-fab",
            agents: &[fab::DIAGNOSTICIAN, fab::ADVISOR],
            starter_field: Some("requester"),
            build: fab_run,
        },
    ]
}

/// The analysis graph on the run's model, every model call recorded in the starter's tenant's
/// decision log.
fn analysis_run(runtime: &Runtime, starter: &Principal, llm: Arc<dyn LlmClient>) -> Result<Graph, BuildError> {
    let recorder = analysis::Recorder::new(runtime.stores.decisions.clone(), &starter.tenant, &runtime.config);
    Ok(analysis::analysis_graph_recorded(llm, analysis::AnalysisOptions::default(), recorder)?)
}

/// The fab pipeline on the run's model; its plans are requested by the starter (the gate
/// authorizes every tool call for them).
fn fab_run(runtime: &Runtime, starter: &Principal, llm: Arc<dyn LlmClient>) -> Result<Graph, BuildError> {
    let options = fab::FabOptions::from_config(&runtime.config);
    Ok(fab::fab_graph(runtime.engine.gate.clone(), llm, starter.clone(), options)?)
}
