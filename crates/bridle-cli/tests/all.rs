//! The `bridle` binary, run as a user would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod suite {
    mod approvals;
    mod audit;
    mod bench;
    mod chat;
    mod check;
    mod commands;
    mod config_limits;
    mod crash;
    mod drift;
    mod feedback;
    mod guard;
    mod heads;
    mod idp;
    mod lab;
    mod links;
    mod mcp;
    mod otlp;
    mod redteam;
    mod replay;
    mod replicas;
    mod run;
    mod streaming;
    mod support;
    mod token;
}
