//! `BRIDLE_BENCH_TELEMETRY=on`: the gate's spans recorded and exported as `bridle serve` does
//! with an OTLP endpoint named and every trace sampled (the layer's settings of
//! `bridle-cli/src/commands/observability.rs`, the SDK's batch processor, each batch encoded to
//! OTLP protobuf on the processor's thread), except that the encoded bytes are dropped instead of
//! posted. Unset: no subscriber, as in production with export off. The layer's settings are
//! repeated from `observability.rs` (a bench cannot depend on `bridle-cli`): change both.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter};
use prost::Message as _;
use tracing::Level;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{EnvFilter, FilterExt, filter_fn};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Encodes each batch as the OTLP/HTTP exporter would, then drops it.
#[derive(Debug)]
struct Encode {
    resource: ResourceAttributesWithSchema,
}

impl SpanExporter for Encode {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let request =
            ExportTraceServiceRequest { resource_spans: group_spans_by_resource_and_scope(batch, &self.resource) };
        std::hint::black_box(request.encode_to_vec());
        Ok(())
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource.into();
    }
}

/// Installs the exporting subscriber when `BRIDLE_BENCH_TELEMETRY` is `on`; the provider to shut
/// down at the end.
pub fn install() -> Option<SdkTracerProvider> {
    if std::env::var("BRIDLE_BENCH_TELEMETRY").as_deref() != Ok("on") {
        return None;
    }
    let resource = Resource::builder().with_service_name("bridle-bench").build();
    let exporter = Encode { resource: (&resource).into() };
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(exporter).build())
        .with_resource(resource)
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("bridle"))
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_location(false)
        .with_target(false)
        .with_context_activation(false)
        .with_filter(EnvFilter::new("info").and(filter_fn(|m| m.is_span() || *m.level() <= Level::WARN)));
    tracing_subscriber::registry().with(layer).init();
    println!("telemetry: on (every gate span recorded, batched and encoded to OTLP protobuf)");
    Some(provider)
}
