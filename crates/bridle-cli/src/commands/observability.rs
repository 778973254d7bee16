//! Logs, traces, metrics and the approval webhook of `bridle serve`: set-up only. Logs go to
//! stderr, as text or (with `--log-json` or `BRIDLE_LOG=json`) as JSON lines; the level filter
//! comes from `RUST_LOG` (default `info`). Exported spans have a filter of their own,
//! `BRIDLE_TRACE_FILTER` (default `info`), so turning logs down to `warn` keeps the traces. Spans (`http_request`, `gate_call` …) are exported over
//! OTLP/HTTP (protobuf) only when an endpoint is named: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! (used as given), else `OTEL_EXPORTER_OTLP_ENDPOINT` or `[server] otlp_endpoint` (with
//! `/v1/traces` appended); `OTEL_SDK_DISABLED=true` turns it off. Off by default.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bridle_core::config::Config;
use bridle_runtime::notify::ApprovalNotifier;
use bridle_runtime::notify::webhook::WebhookNotifier;
use bridle_server::AppState;
use bridle_server::observe::{install_recorder, spawn_upkeep};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::BatchSpanProcessor;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::{FilterExt, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How often histogram samples are drained between scrapes.
const UPKEEP: Duration = Duration::from_secs(5);

/// The trace exporter, if one was started; [`Telemetry::shutdown`] sends what is still queued.
#[derive(Debug, Default)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Exports the spans still queued and stops the exporter.
    pub async fn shutdown(self) {
        let Some(provider) = self.provider else { return };
        // `shutdown` blocks until the batch thread has exported: off the workers.
        let done = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(e)) = done {
            tracing::warn!(error = %e, "OTLP trace export did not shut down cleanly");
        }
    }
}

/// Installs the log subscriber without trace export (once; a second call does nothing). JSON
/// when `json` is set or `BRIDLE_LOG` is `json`.
pub fn init_logging(json: bool) {
    install(json, None);
}

/// Installs the log subscriber and, when [`otlp_traces_url`] names a collector, the OTLP trace
/// exporter (batched on a thread of the SDK's).
pub fn init_telemetry(json: bool, configured: Option<&str>) -> anyhow::Result<Telemetry> {
    let Some(url) = otlp_traces_url(configured, |var| std::env::var(var).ok()) else {
        install(json, None);
        return Ok(Telemetry::default());
    };
    // The exporter's reqwest client uses the build's one rustls provider (ring).
    bridle_runtime::llm::openai::install_tls_provider();
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(url.clone())
        .build()
        .with_context(|| format!("OTLP trace exporter for `{url}`"))?;
    // The SDK's batch processor: its own thread, woken when a batch is full or at its interval.
    let processor = BatchSpanProcessor::builder(exporter).build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource(|var| std::env::var(var).ok()))
        .build();
    // An incoming W3C `traceparent` (HTTP header, MCP `_meta`) continues the caller's trace.
    opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
    install(json, Some(provider.tracer("bridle")));
    tracing::info!(url = %url, "OTLP trace export on");
    Ok(Telemetry { provider: Some(provider) })
}

/// The resource spans are exported with: `OTEL_RESOURCE_ATTRIBUTES` and `OTEL_SERVICE_NAME` as the
/// SDK reads them, `service.name` `bridle` when neither names one, and `service.version`.
pub(crate) fn resource(env: impl Fn(&str) -> Option<String>) -> Resource {
    let named = env("OTEL_SERVICE_NAME").is_some_and(|v| !v.trim().is_empty())
        || env("OTEL_RESOURCE_ATTRIBUTES")
            .is_some_and(|v| v.split(',').any(|kv| kv.trim().starts_with("service.name=")));
    let builder =
        Resource::builder().with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if named { builder.build() } else { builder.with_service_name("bridle").build() }
}

/// Where traces go, if anywhere: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else the base
/// URL of `OTEL_EXPORTER_OTLP_ENDPOINT` or of `configured` (`[server] otlp_endpoint`) with
/// `/v1/traces` appended; `None` when none is set (or empty) or `OTEL_SDK_DISABLED` is `true`.
pub fn otlp_traces_url(configured: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    let var = |name: &str| env(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    if var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return None;
    }
    if let Some(url) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return Some(url);
    }
    let base = var("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| configured.map(str::to_owned))?;
    Some(format!("{}/v1/traces", base.trim_end_matches('/')))
}

fn install(json: bool, tracer: Option<opentelemetry_sdk::trace::Tracer>) {
    let json = json || std::env::var("BRIDLE_LOG").is_ok_and(|v| v.eq_ignore_ascii_case("json"));
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Colours only for a person at a terminal, never in files or CI logs.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr).with_ansi(ansi);
    let fmt = if json { fmt.json().with_current_span(true).with_span_list(true).boxed() } else { fmt.boxed() };
    let otel = tracer.map(|t| {
        let spans = EnvFilter::try_from_env("BRIDLE_TRACE_FILTER").unwrap_or_else(|_| EnvFilter::new("info"));
        // Events reach a span only from `warn` up: the `info` lines ("request finished", "tool
        // call decided") repeat what the spans' own attributes hold.
        let events = filter_fn(|meta| meta.is_span() || *meta.level() <= Level::WARN);
        // What a span carries is what it is for: no `busy_ns`/`idle_ns` (two clock reads at
        // every poll of every async span), no thread, source location or target attributes,
        // and no OpenTelemetry context attached at every poll (nothing here reads
        // `Context::current`; parents come from the span tree). BENCHMARKS.md, "Telemetry on".
        // The gate bench repeats these settings (`bridle-runtime/benches/support/telemetry.rs`,
        // which cannot depend on this crate): change both.
        tracing_opentelemetry::layer()
            .with_tracer(t)
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_location(false)
            .with_target(false)
            .with_context_activation(false)
            .with_filter(spans.and(events))
    });
    // Err: a subscriber is already installed, which is just as good.
    let _ = tracing_subscriber::registry().with(fmt.with_filter(filter)).with(otel).try_init();
}

/// The `[webhooks]` notifier when one is configured (the engine builder installs it); events
/// link to `console_url` unless the configuration names its own. Fails when the secret is
/// missing.
pub fn webhook(config: &Config, console_url: &str) -> anyhow::Result<Option<Arc<dyn ApprovalNotifier>>> {
    let notifier = WebhookNotifier::from_settings(&config.webhooks, Some(console_url)).context("[webhooks]")?;
    Ok(notifier.map(|n| {
        tracing::info!(url = ?config.webhooks.approval_requested, "approval_requested webhook on");
        Arc::new(n) as Arc<dyn ApprovalNotifier>
    }))
}

/// `state` serving `/metrics` from the process-wide Prometheus recorder.
pub fn with_metrics(state: AppState) -> AppState {
    match install_recorder() {
        Some(handle) => {
            spawn_upkeep(handle.clone(), UPKEEP);
            state.with_metrics(handle)
        }
        None => state,
    }
}

#[cfg(test)]
mod tests {
    use super::otlp_traces_url;

    fn url(configured: Option<&str>, vars: &[(&str, &str)]) -> Option<String> {
        otlp_traces_url(configured, |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned()))
    }

    #[test]
    fn trace_export_is_off_unless_an_endpoint_is_named() {
        assert_eq!(url(None, &[]), None);
        assert_eq!(url(None, &[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]), None);
        assert_eq!(url(Some("http://c:4318/"), &[]).as_deref(), Some("http://c:4318/v1/traces"));
        let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")];
        assert_eq!(url(Some("http://c:4318"), &env).as_deref(), Some("http://env:4318/v1/traces"));
        let traces = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t:1/x"), env[0]];
        assert_eq!(url(None, &traces).as_deref(), Some("http://t:1/x"));
        assert_eq!(url(Some("http://c:4318"), &[("OTEL_SDK_DISABLED", "TRUE")]), None);
    }
}
