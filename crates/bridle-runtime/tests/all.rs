//! The integration tests of `bridle-runtime`, as one binary (`tests/suite/` holds the modules).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod suite {
    mod adapter_context;
    mod adapters;
    mod approvals;
    mod bad_input;
    mod chat;
    mod checkpoint_contract;
    mod codes;
    mod config_files;
    mod drift;
    mod feedback_loop;
    mod gate_matrix;
    mod governance;
    mod graph;
    mod guard;
    mod guard_taint;
    mod heads;
    mod idempotency;
    mod laws;
    mod llm;
    mod mcp_gateway;
    mod mcp_upstream;
    mod race;
    mod replay;
    mod runtime;
    mod store_contract;
    mod support;
    mod webhook;
    mod workbench;
    mod workflow;
}
