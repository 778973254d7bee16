//! The HTTP API driven through the router with `oneshot` (no sockets): authentication, the
//! approval loop, tenant isolation, limits and the OpenAPI document.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]

mod suite {
    mod actions;
    mod approvals;
    mod audit_heads;
    mod auth;
    mod bounds;
    mod call_runs;
    mod chat;
    mod console;
    mod edges;
    mod edges_tcp;
    mod fab_runs;
    mod feedback;
    mod idp;
    mod keys;
    mod kill;
    mod lab;
    mod limits;
    mod mcp;
    mod mcp_stateless;
    mod metrics;
    mod openapi;
    mod readyz;
    mod regression;
    mod routes;
    mod runs;
    mod support;
    mod tenancy;
    mod workflow_runs;
}
