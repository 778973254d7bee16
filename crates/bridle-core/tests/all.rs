//! Integration tests of bridle-core: one binary, one module per concern.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod suite {
    mod config;
    mod laws;
    mod policy;
    mod support;
}
