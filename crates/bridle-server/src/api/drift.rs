//! `GET /v1/drift`: the CUSUM scan of the caller's tenant's decision log, read-only. It runs the
//! core detector ([`bridle_runtime::drift::scan`]) with its default settings and no hooks, so
//! nothing fires and nothing is written; each series carries its sums per value for plotting.

use axum::Json;
use axum::extract::{Query, State};
use bridle_core::drift::Params;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Caller;
use super::audit::SCOPE_AUDIT_READ;
use super::runs::SCOPE_RUNS_READ;
use crate::AppState;
use crate::error::ApiError;

/// Records scanned when none is asked for.
const DEFAULT_LIMIT: u32 = 1000;
/// Most records one scan reads.
const MAX_LIMIT: u32 = 10_000;

/// A metric of the decision log (the names `bridle_core::drift::metrics_of` produces).
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DriftMetric {
    /// Per agent.
    Confidence,
    /// Per agent, when the model answered.
    LatencyMs,
    /// Prompt + completion tokens per agent.
    Tokens,
    /// Tenant-wide: 1 for a rejected or blocked record.
    RejectionRate,
    /// Tenant-wide: 1 for a degraded record.
    DegradedRate,
    /// Per principal.
    InjectionDetections,
    /// Per equipment.
    AutoExecutions,
}

impl DriftMetric {
    /// The metric's name in a series key.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Confidence => "confidence",
            Self::LatencyMs => "latency_ms",
            Self::Tokens => "tokens",
            Self::RejectionRate => "rejection_rate",
            Self::DegradedRate => "degraded_rate",
            Self::InjectionDetections => "injection_detections",
            Self::AutoExecutions => "auto_executions",
        }
    }
}

/// Query of `GET /v1/drift`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DriftQuery {
    /// Only this metric; default: every metric.
    pub metric: Option<DriftMetric>,
    /// The most recent records scanned, 1 to 10000 (default 1000).
    #[param(minimum = 1, maximum = 10000)]
    pub limit: Option<u32>,
}

/// `GET /v1/drift`.
#[derive(Debug, utoipa::ToSchema)]
pub struct DriftAnswer {
    /// Tenant scanned.
    pub tenant: String,
    /// Records read.
    pub records: u64,
    /// Detector settings `{k, warning, critical, baseline_len, …}` (σ units).
    #[schema(value_type = Object)]
    pub params: Value,
    /// Series `{series: {metric, key}, baseline, seen, skipped, upper, lower, status, alarms, trace: [{index, upper, lower}]}`.
    #[schema(value_type = Vec<Object>)]
    pub series: Vec<Value>,
    /// Alarms that would be announced (`drift_detected`, `drift_warning`, …), in order.
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<Value>,
}

/// Runs the CUSUM detector over the caller's tenant's recent decision records.
#[utoipa::path(
    get, path = "/v1/drift", operation_id = "scanDrift", tag = "runs",
    params(DriftQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the scan: settings, each series with its sums per value and alarms", body = DriftAnswer),
        (status = 400, description = "bad query, unknown metric (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 401, description = "no valid token (`unauthenticated`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `runs:read` or `audit:read` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn scan(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<DriftQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<Value>, ApiError> {
    caller.require_any(&[SCOPE_RUNS_READ, SCOPE_AUDIT_READ])?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!("`limit` must be between 1 and {MAX_LIMIT}")));
    }
    let log = state.gate.stores().decisions.clone();
    let report = bridle_runtime::drift::scan(
        log.as_ref(),
        &caller.0.tenant,
        limit,
        Params::default(),
        query.metric.map(|m| m.as_str().to_owned()),
        &[],
    )
    .await?;
    let series = report
        .series
        .iter()
        .map(|s| {
            let mut v = serde_json::to_value(s)?;
            if let Some(fields) = v.as_object_mut() {
                fields.insert("trace".to_owned(), serde_json::to_value(&s.trace)?);
            }
            Ok(v)
        })
        .collect::<Result<Vec<_>, serde_json::Error>>()?;
    Ok(Json(json!({
        "tenant": report.tenant,
        "records": report.records,
        "params": report.params,
        "series": series,
        "events": report.events,
    })))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn every_core_metric_has_a_query_name_and_back() {
        for name in bridle_core::drift::METRICS {
            let metric: DriftMetric = serde_json::from_value(json!(name)).unwrap();
            assert_eq!(metric.as_str(), name);
        }
    }
}
