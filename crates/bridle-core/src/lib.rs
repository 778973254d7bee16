//! Bridle's pure core: contracts, policy, plans, approvals, audit chain and the ports.
//!
//! No I/O and no async runtime here: every check is a total function over values, and the
//! runtime drives the ports. A check that cannot be evaluated is an error, never an "allow".

pub mod agents;
pub mod answer;
pub mod approval;
pub mod audit;
pub mod bounds;
pub mod budget;
pub mod checkpoint;
pub mod code;
pub mod config;
pub mod contract;
pub mod conversation;
pub mod deadline;
pub mod decision;
pub mod diagnosis;
pub mod drift;
pub mod feedback;
pub mod guard;
pub mod history;
pub mod job;
pub mod kill;
pub mod level;
pub mod models;
pub mod nesting;
pub mod plan;
pub mod policy;
pub mod ports;
pub mod principal;
pub mod replay;
pub mod runs;
pub mod verdict;
pub mod workflow;

pub use code::Code;
pub use principal::{Principal, RunContext};
pub use verdict::Rejection;
