//! The `bridle` binary, run as a user would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod suite {
    mod approvals;
    mod bench;
    mod check;
    mod commands;
    mod guard;
    mod mcp;
    mod replicas;
    mod support;
    mod token;
}
