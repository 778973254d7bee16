//! The integration tests of `bridle-runtime`, as one binary (`tests/suite/` holds the modules).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod suite {
    mod approvals;
    mod bad_input;
    mod codes;
    mod demo;
    mod gate_matrix;
    mod guard;
    mod idempotency;
    mod laws;
    mod race;
    mod store_contract;
    mod support;
    mod workbench;
}
