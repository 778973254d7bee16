//! Pipelines assembled on the graph runtime: seed 001's analysis graph (`analysis.rs`).

pub mod analysis;
