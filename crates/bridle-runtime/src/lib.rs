//! Bridle's engine: the gate executor over the ports, the stores, the adapters, approvals,
//! audit verification, job reconciliation, configuration loading and the workbench check. The
//! applications over it (demos, pipelines, labs, bench commands) are `bridle-apps`.

pub mod adapter;
pub mod agent;
pub mod approvals;
pub mod audit;
pub mod bundled;
pub mod cancel;
pub mod chat;
pub mod check;
pub mod checkpoint;
pub mod clock;
pub mod drift;
pub mod engine;
pub mod feedback;
pub mod gate;
pub mod graph;
pub mod guard;
pub mod history;
pub mod hook;
pub mod intake;
pub mod jobs;
pub mod kill;
pub mod llm;
pub mod models;
pub mod notify;
pub mod replay;
pub mod runs;
pub mod runtime;
pub mod store;
pub mod workflow;

pub use engine::Engine;
pub use gate::{CallOutcome, CallRequest, Gate, GateError, Verdict};
