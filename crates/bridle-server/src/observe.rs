//! Observability at the edge: a tracing span and metrics per HTTP request, the process-wide
//! Prometheus recorder, and `/metrics` (Prometheus text format, for a token with the
//! `metrics:read` scope). It decides nothing; the gate and the desk record their own series.
//!
//! Series (each with `# HELP`, see [`SERIES`]): `bridle_http_requests_total{route,status}`,
//! `bridle_http_request_seconds{route}`, `bridle_rate_limited_total{route}` here;
//! `bridle_gate_verdicts_total{tool,code}`, `bridle_gate_call_seconds{tool}`,
//! `bridle_gate_step_seconds{step}`, `bridle_approvals_{created,granted,rejected}_total`,
//! `bridle_approval_wait_seconds{outcome}` and `bridle_webhook_deliveries_total{event,result}` from
//! the runtime; `bridle_approvals_pending{tenant}`, read from the store at each scrape (so every
//! replica reports the same), and `bridle_build_info{version}`. Counters start at zero when the
//! server starts (the verdict counter once per registered tool with `code="ok"`), so a rate is
//! defined from the first scrape.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bridle_core::Code;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use tracing::Instrument;

use crate::AppState;
use crate::api::Caller;
use crate::error::ApiError;

/// The scope `/metrics` needs.
pub const SCOPE_METRICS_READ: &str = "metrics:read";

/// Route label of a request no route matched.
const UNMATCHED: &str = "(unmatched)";

/// Latency buckets (seconds) of the `_seconds` histograms.
const BUCKETS: &[f64] = &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5];

static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Every series Bridle records, its kind and its `# HELP` text.
pub const SERIES: &[(&str, Kind, &str)] = &[
    ("bridle_http_requests_total", Kind::Counter, "HTTP requests answered, by route template and status"),
    ("bridle_http_request_seconds", Kind::Histogram, "HTTP request latency in seconds, by route template"),
    ("bridle_rate_limited_total", Kind::Counter, "Requests refused with 429 rate_limited, by route template"),
    (
        "bridle_gate_verdicts_total",
        Kind::Counter,
        "Tool calls decided by the gate, by tool and verdict code (ok, dry_run_ok or a rejection code)",
    ),
    ("bridle_gate_call_seconds", Kind::Histogram, "Time the gate took for one tool call in seconds, by tool"),
    (
        "bridle_gate_step_seconds",
        Kind::Histogram,
        "Time of one tool call spent per gate step in seconds: policy (Cedar), adapter (state reads and execution), rest",
    ),
    ("bridle_approvals_created_total", Kind::Counter, "Approval requests created"),
    ("bridle_approvals_granted_total", Kind::Counter, "Grants added to approval requests"),
    ("bridle_approvals_rejected_total", Kind::Counter, "Approval requests rejected by an operator"),
    (
        "bridle_approval_wait_seconds",
        Kind::Histogram,
        "Seconds from an approval request to its human decision, by outcome (granted, rejected)",
    ),
    ("bridle_approvals_pending", Kind::Gauge, "Pending, unexpired approval requests in the store, by tenant"),
    ("bridle_webhook_deliveries_total", Kind::Counter, "Operator webhook deliveries, by event and result"),
    ("bridle_build_info", Kind::Gauge, "Always 1; the running build's version as a label"),
];

/// The kind of a series in [`SERIES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations in buckets.
    Histogram,
}

/// Describes every series (their `# HELP` lines), sets the build info, and starts the counters
/// at zero: the label-free ones, and the verdict counter for each of `tools` with `code="ok"`.
pub fn init_series<'a>(tools: impl IntoIterator<Item = &'a str>) {
    for &(name, kind, help) in SERIES {
        match kind {
            Kind::Counter => metrics::describe_counter!(name, help),
            Kind::Gauge => metrics::describe_gauge!(name, help),
            Kind::Histogram => metrics::describe_histogram!(name, help),
        }
    }
    metrics::gauge!("bridle_build_info", "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    for name in ["bridle_approvals_created_total", "bridle_approvals_granted_total", "bridle_approvals_rejected_total"]
    {
        metrics::counter!(name).increment(0);
    }
    for tool in tools {
        metrics::counter!("bridle_gate_verdicts_total", "tool" => tool.to_owned(), "code" => "ok").increment(0);
    }
}

/// Tenants the pending gauge has reported, so one whose requests are all decided drops to 0.
static PENDING_TENANTS: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Sets `bridle_approvals_pending{tenant}` from the store's counts; on a failed read the gauge
/// keeps its last values and the failure is logged (a scrape never fails for it).
async fn refresh_pending(state: &AppState) {
    let counts = match state.desk.pending_counts().await {
        Ok(counts) => counts,
        Err(e) => {
            tracing::warn!(error = %e, "pending approvals not counted for /metrics");
            return;
        }
    };
    let mut seen = PENDING_TENANTS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for tenant in seen.iter() {
        if !counts.iter().any(|(t, _)| t == tenant) {
            metrics::gauge!("bridle_approvals_pending", "tenant" => tenant.clone()).set(0.0);
        }
    }
    for (tenant, n) in counts {
        #[allow(clippy::cast_precision_loss)] // a count of requests: far below 2^52
        metrics::gauge!("bridle_approvals_pending", "tenant" => tenant.clone()).set(n as f64);
        seen.insert(tenant);
    }
}

/// Installs the process-wide Prometheus recorder once and returns its handle (the same handle
/// on every later call). `None` when another recorder was installed first.
pub fn install_recorder() -> Option<PrometheusHandle> {
    RECORDER
        .get_or_init(|| {
            let builder = PrometheusBuilder::new().set_buckets_for_metric(Matcher::Suffix("_seconds".into()), BUCKETS);
            let recorder = match builder {
                Ok(b) => b.build_recorder(),
                Err(e) => {
                    tracing::warn!(error = %e, "metrics buckets refused; using summaries");
                    PrometheusBuilder::new().build_recorder()
                }
            };
            let handle = recorder.handle();
            match metrics::set_global_recorder(recorder) {
                Ok(()) => Some(handle),
                Err(e) => {
                    tracing::warn!(error = %e, "a metrics recorder is already installed; /metrics is off");
                    None
                }
            }
        })
        .clone()
}

/// Drains histogram samples every `every` so memory stays flat between scrapes. Runs until the
/// process ends.
pub fn spawn_upkeep(handle: PrometheusHandle, every: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            handle.run_upkeep();
        }
    });
}

/// A request's headers as an OpenTelemetry propagation carrier.
struct Headers<'a>(&'a axum::http::HeaderMap);

impl opentelemetry::propagation::Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(axum::http::HeaderName::as_str).collect()
    }
}

/// Middleware: one `http_request` span per request, a SERVER span named `METHOD ROUTE` with the
/// HTTP semantic-convention attributes (`http.request.method`, `http.route`,
/// `http.response.status_code`, `error.type` and an ERROR status from 400 up) and the caller's
/// W3C `traceparent` as its parent when it sent one; the request counter and latency histogram
/// by route and status, and the rate-limit counter.
pub async fn observe(req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map_or(UNMATCHED, MatchedPath::as_str).to_owned();
    let method = req.method().as_str().to_owned();
    let span = tracing::info_span!(
        "http_request",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = %route,
        http.response.status_code = tracing::field::Empty,
        error.r#type = tracing::field::Empty,
    );
    if req.headers().contains_key("traceparent") {
        let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&Headers(req.headers())));
        // Err: no OpenTelemetry layer is installed (export off), and there is nothing to continue.
        let _ = tracing_opentelemetry::OpenTelemetrySpanExt::set_parent(&span, parent);
    }
    let started = Instant::now();
    let response = next.run(req).instrument(span.clone()).await;
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    let latency_ms = elapsed.as_secs_f64() * 1000.0;
    span.record("http.response.status_code", i64::from(status));
    if status >= 400 {
        span.record("otel.status_code", "ERROR");
        span.record("error.type", status.to_string());
    }
    tracing::info!(parent: &span, status, latency_ms, "request finished");
    if status == StatusCode::TOO_MANY_REQUESTS.as_u16() {
        metrics::counter!("bridle_rate_limited_total", "route" => route.clone()).increment(1);
    }
    metrics::counter!("bridle_http_requests_total", "route" => route.clone(), "status" => status.to_string())
        .increment(1);
    metrics::histogram!("bridle_http_request_seconds", "route" => route).record(elapsed.as_secs_f64());
    response
}

/// `GET /metrics`: the Prometheus text format, for a caller holding `metrics:read`.
#[utoipa::path(
    get, path = "/metrics", operation_id = "metrics", tag = "meta",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Prometheus text format (version 0.0.4)", body = String, content_type = "text/plain"),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `metrics:read` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "metrics are not enabled on this server (`not_found`)", body = crate::openapi::ErrorBody),
        (status = 429, description = "too many requests (`rate_limited`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn render(State(state): State<AppState>, caller: Caller) -> Result<Response, ApiError> {
    caller.require_any(&[SCOPE_METRICS_READ])?;
    let Some(handle) = &state.metrics else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, Code::NotFound, "metrics are not enabled on this server"));
    };
    refresh_pending(&state).await;
    let body = handle.render();
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response())
}
