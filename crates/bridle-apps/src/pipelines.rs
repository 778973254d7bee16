//! Pipelines assembled on the graph runtime: seed 001's analysis graph (`analysis.rs`) and seed
//! 000's fab pipeline (`fab.rs`).

pub mod analysis;
pub mod fab;
