//! The integration tests of `bridle-apps`, as one binary (`tests/suite/` holds the modules).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod suite {
    mod analysis;
    mod demo;
    mod fab;
    mod judge_eval;
    mod lab;
    mod lab_gate;
    mod observe;
    mod replay_html;
    mod support;
}
