//! Applications over Bridle's engine, kept out of `bridle-core` and `bridle-runtime` so those
//! hold only what every deployment runs: the seed-004 demo and the fab demo, the fab and
//! analysis pipelines (the registry `/v1/runs` starts them from), seed 003's workbench labs,
//! the `bridle bench` commands and the replay report's page.

pub mod bench;
pub mod demo;
pub mod demo_fab;
pub mod diagnosis;
pub mod lab;
pub mod pipelines;
pub mod replay_html;
