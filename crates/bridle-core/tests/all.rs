//! Integration tests of bridle-core: one binary, one module per concern.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod suite {
    mod adapters_config;
    mod answer;
    mod budget;
    mod config;
    mod config_bounds;
    mod drift;
    mod feedback;
    mod guard;
    mod laws;
    mod policy;
    mod support;
    mod workflow;
}
