//! Applications over Bridle's engine, kept out of `bridle-core` and `bridle-runtime` so those
//! hold only what every deployment runs: the seed-004 demo and the fab demo, the fab and
//! analysis pipelines `/v1/runs` and the demos start.

pub mod demo;
pub mod demo_fab;
pub mod pipelines;
