//! Bridle's engine: the gate executor over the ports, the stores, the adapters, approvals,
//! audit verification, job reconciliation, configuration loading, the workbench check and the
//! seed-004 demo.

pub mod adapter;
pub mod approvals;
pub mod audit;
pub mod bundled;
pub mod check;
pub mod clock;
pub mod demo;
pub mod gate;
pub mod jobs;
pub mod store;

pub use gate::{CallOutcome, CallRequest, Gate, GateError, Verdict};
