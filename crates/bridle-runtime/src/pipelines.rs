//! Pipelines assembled on the graph runtime: seed 001's analysis graph (`analysis.rs`) and seed
//! 000's fab pipeline (`fab.rs`).

pub mod analysis;
pub mod fab;

/// A pipeline's graph could not be assembled (an agent's output schema, the graph's wiring).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// An agent's output schema does not compile.
    #[error(transparent)]
    Agent(#[from] crate::agent::AgentError),
    /// The graph is not well formed.
    #[error(transparent)]
    Graph(#[from] crate::graph::GraphError),
}
