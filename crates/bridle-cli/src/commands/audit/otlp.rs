//! Audit events as OpenTelemetry logs: `bridle audit export --format otlp` posts them to an
//! OTLP/HTTP collector (protobuf `ExportLogsServiceRequest` to `/v1/logs`), one request per page.
//!
//! Each event is one log record: its time, a severity from its kind and decision (the same as
//! the syslog export's), the event's JSON as the body, `event_name` `bridle.audit.KIND`, and the
//! chain (`bridle.seq`, `bridle.hash`, `bridle.prev_hash`) with tenant, subject, decision, code,
//! tool, call and run as attributes, so a collector can check the chain and route by tenant. The
//! resource is the traces' (`OTEL_SERVICE_NAME`, else `bridle`; `OTEL_RESOURCE_ATTRIBUTES`;
//! `service.version`). A
//! collector that does not answer 2xx stops the export with an error naming the last seq sent, so
//! `--since` can resume it: nothing is dropped quietly.

use anyhow::Context;
use bridle_core::audit::AuditEvent;
use bridle_core::audit::siem;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

/// Where the logs go: `OTEL_EXPORTER_OTLP_LOGS_ENDPOINT` as given, else `--otlp-endpoint` or
/// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/logs` appended.
pub fn logs_url(flag: Option<&str>, env: impl Fn(&str) -> Option<String>) -> Option<String> {
    let var = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    if let Some(url) = var("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") {
        return Some(url);
    }
    let base = flag.map(str::to_owned).or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT"))?;
    Some(format!("{}/v1/logs", base.trim_end_matches('/')))
}

/// An OTLP/HTTP logs exporter.
pub struct Exporter {
    http: reqwest::Client,
    url: String,
    resource: Resource,
}

impl Exporter {
    /// Posts to `url`.
    pub fn new(url: String) -> anyhow::Result<Self> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            anyhow::bail!("the OTLP logs endpoint `{url}` is not an http:// or https:// URL");
        }
        bridle_runtime::llm::openai::install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .context("building the OTLP HTTP client")?;
        // The same resource the traces carry, so a collector joins logs and spans of one deployment.
        let sdk = crate::commands::observability::resource(|name| std::env::var(name).ok());
        let resource = Resource {
            attributes: sdk.iter().map(|(key, value)| text(key.as_str(), value.as_str().as_ref())).collect(),
            ..Resource::default()
        };
        Ok(Self { http, url, resource })
    }

    /// Sends `events` in one request; an error names the first seq not delivered.
    pub async fn send(&self, events: &[&AuditEvent]) -> anyhow::Result<()> {
        let Some(first) = events.first() else { return Ok(()) };
        let request = ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(self.resource.clone()),
                scope_logs: vec![ScopeLogs {
                    scope: Some(InstrumentationScope {
                        name: "bridle.audit".to_owned(),
                        version: env!("CARGO_PKG_VERSION").to_owned(),
                        ..InstrumentationScope::default()
                    }),
                    log_records: events.iter().map(|e| record(e)).collect(),
                    schema_url: String::new(),
                }],
                schema_url: String::new(),
            }],
        };
        let failed =
            || format!("OTLP logs export to `{}` failed at {} seq {}", self.url, first.record.tenant, first.seq);
        let response = self
            .http
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
            .body(request.encode_to_vec())
            .send()
            .await
            .with_context(failed)?;
        if !response.status().is_success() {
            anyhow::bail!("{}: HTTP {}", failed(), response.status());
        }
        Ok(())
    }
}

/// One event as a log record.
pub fn record(event: &AuditEvent) -> LogRecord {
    let r = &event.record;
    let (number, severity) = match siem::syslog_severity(event) {
        0..=4 => (SeverityNumber::Warn, "WARN"),
        5 => (SeverityNumber::Info2, "INFO2"),
        _ => (SeverityNumber::Info, "INFO"),
    };
    let at = u64::try_from(r.at.unix_timestamp_nanos()).unwrap_or(0);
    let mut attributes = vec![
        text("bridle.tenant", &r.tenant),
        KeyValue {
            key: "bridle.seq".to_owned(),
            value: Some(AnyValue { value: Some(Any::IntValue(i64::try_from(event.seq).unwrap_or(i64::MAX))) }),
            ..KeyValue::default()
        },
        text("bridle.hash", &event.hash),
        text("bridle.prev_hash", &event.prev_hash),
        text("bridle.subject", &r.subject),
        text("bridle.kind", r.kind.as_str()),
    ];
    for (key, value) in [
        ("bridle.decision", Some(siem::decision(r.decision)).filter(|d| !d.is_empty())),
        ("bridle.code", r.code.clone()),
        ("bridle.tool", Some(r.tool.clone()).filter(|t| !t.is_empty())),
        ("bridle.call_id", Some(r.call_id.clone()).filter(|c| !c.is_empty())),
        ("bridle.run_id", Some(r.run_id.clone()).filter(|c| !c.is_empty())),
        ("bridle.approval_id", r.approval_id.clone()),
    ] {
        if let Some(value) = value {
            attributes.push(text(key, &value));
        }
    }
    LogRecord {
        time_unix_nano: at,
        observed_time_unix_nano: at,
        severity_number: number as i32,
        severity_text: severity.to_owned(),
        body: Some(AnyValue { value: Some(Any::StringValue(serde_json::to_string(event).unwrap_or_default())) }),
        attributes,
        event_name: format!("bridle.audit.{}", r.kind.as_str()),
        ..LogRecord::default()
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(Any::StringValue(value.to_owned())) }),
        ..KeyValue::default()
    }
}

#[cfg(test)]
mod tests {
    use super::logs_url;

    #[test]
    fn the_logs_endpoint_follows_the_otel_variables() {
        let url = |flag: Option<&str>, vars: &[(&str, &str)]| {
            logs_url(flag, |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned()))
        };
        assert_eq!(url(None, &[]), None);
        assert_eq!(url(Some("http://c:4318/"), &[]).as_deref(), Some("http://c:4318/v1/logs"));
        let base = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")];
        assert_eq!(url(None, &base).as_deref(), Some("http://env:4318/v1/logs"));
        assert_eq!(url(Some("http://flag:1"), &base).as_deref(), Some("http://flag:1/v1/logs"), "the flag wins");
        let logs = [("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://l:9/ingest"), base[0]];
        assert_eq!(url(Some("http://flag:1"), &logs).as_deref(), Some("http://l:9/ingest"));
    }
}
