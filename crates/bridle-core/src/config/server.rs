//! `[server]`: what `bridle serve` listens on and the limits every request is held to.
//!
//! ```toml
//! [server]
//! listen = "127.0.0.1:8080"      # BRIDLE_LISTEN and --listen override it
//! max_body_bytes = 1048576       # 413 payload_too_large past it
//! max_json_depth = 64            # 400 json_too_deep past it
//! rate_per_second = 50.0         # per principal (tenant and subject): 429 rate_limited
//! burst = 100
//! request_timeout_ms = 30000     # 408 request_timeout
//! otlp_endpoint = "http://127.0.0.1:4318"   # OTLP/HTTP trace export (off when absent);
//!                                           # OTEL_EXPORTER_OTLP_ENDPOINT overrides it
//! ```

use std::time::Duration;

use serde::Deserialize;

use super::validate::Errors;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    listen: Option<String>,
    max_body_bytes: Option<usize>,
    max_json_depth: Option<usize>,
    rate_per_second: Option<f64>,
    burst: Option<u32>,
    request_timeout_ms: Option<u64>,
    otlp_endpoint: Option<String>,
}

/// Validated `[server]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSettings {
    /// Address to listen on, when the file names one.
    pub listen: Option<String>,
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
    /// Deepest JSON nesting accepted.
    pub max_json_depth: usize,
    /// Requests per second each principal earns.
    pub rate_per_second: f64,
    /// Requests a principal may make at once before the rate applies.
    pub burst: u32,
    /// Longest a request may take.
    pub request_timeout: Duration,
    /// Base URL of an OTLP/HTTP collector (`/v1/traces` is appended); trace export is off
    /// without it (unless `OTEL_EXPORTER_OTLP_ENDPOINT` names one).
    pub otlp_endpoint: Option<String>,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            listen: None,
            max_body_bytes: 1024 * 1024,
            max_json_depth: 64,
            rate_per_second: 50.0,
            burst: 100,
            request_timeout: Duration::from_secs(30),
            otlp_endpoint: None,
        }
    }
}

pub(super) fn server_settings(raw: &RawServer, errors: &mut Errors) -> ServerSettings {
    let d = ServerSettings::default();
    let max_body_bytes = raw.max_body_bytes.unwrap_or(d.max_body_bytes);
    if !(1024..=256 * 1024 * 1024).contains(&max_body_bytes) {
        errors.push("server.max_body_bytes", "must be between 1024 and 268435456");
    }
    let max_json_depth = raw.max_json_depth.unwrap_or(d.max_json_depth);
    if !(2..=1024).contains(&max_json_depth) {
        errors.push("server.max_json_depth", "must be between 2 and 1024");
    }
    let rate_per_second = raw.rate_per_second.unwrap_or(d.rate_per_second);
    if !(rate_per_second > 0.0 && rate_per_second.is_finite()) {
        errors.push("server.rate_per_second", "must be a positive number");
    }
    let burst = raw.burst.unwrap_or(d.burst);
    if burst == 0 {
        errors.push("server.burst", "must be at least 1");
    }
    let timeout_ms = raw.request_timeout_ms.unwrap_or(30_000);
    if !(1..=3_600_000).contains(&timeout_ms) {
        errors.push("server.request_timeout_ms", "must be between 1 and 3600000");
    }
    if let Some(listen) = &raw.listen
        && listen.parse::<std::net::SocketAddr>().is_err()
    {
        errors.push("server.listen", format!("`{listen}` is not an address like 127.0.0.1:8080"));
    }
    if let Some(endpoint) = &raw.otlp_endpoint
        && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
    {
        errors.push("server.otlp_endpoint", format!("`{endpoint}` is not an http:// or https:// URL"));
    }
    ServerSettings {
        listen: raw.listen.clone(),
        max_body_bytes,
        max_json_depth,
        rate_per_second,
        burst,
        request_timeout: Duration::from_millis(timeout_ms),
        otlp_endpoint: raw.otlp_endpoint.clone(),
    }
}
