//! `/v1/runs` and `/v1/decisions`: start a pipeline run in the background, list the caller's
//! tenant's runs, read where one stands, follow its events as Server-Sent Events, answer one of
//! its interrupts, and list the decision records of the caller's tenant. Runs live in the caller's tenant (thread `{tenant}/{run_id}`):
//! another tenant's run id is 404 `not_found` like an unknown one. Without a runs service
//! (`AppState::with_runs`) every route here answers 404 `not_found`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use bridle_core::checkpoint::ThreadStatus;
use bridle_runtime::runs::Runs;
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::Caller;
use super::audit::SCOPE_AUDIT_READ;
use crate::AppState;
use crate::error::ApiError;
use crate::limits::JsonBody;

/// Scope for starting and resuming runs.
pub const SCOPE_RUNS_START: &str = "runs:start";
/// Scope for reading runs, their events and the decision log.
pub const SCOPE_RUNS_READ: &str = "runs:read";
/// Decisions per page when none is asked for.
const DEFAULT_LIMIT: u32 = 100;
/// Largest page.
const MAX_LIMIT: u32 = 1000;
/// Longest equipment, metric or incident name of a `fab` run.
const MAX_NAME: usize = 200;

/// Input of the `analysis` pipeline.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalysisInput {
    /// What is analysed.
    #[schema(min_length = 1)]
    pub entity: String,
    /// Data about it; its `signals` list (else its keys) is what the analysts see.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
}

/// The anomaly a `fab` run starts from.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FabAnomaly {
    /// The equipment it was seen on (the Advisor's plans target it).
    #[schema(min_length = 1, max_length = 200)]
    pub equipment: String,
    /// What was measured (`chamber_temp_c`, `gas_flow_sccm`, …).
    #[schema(min_length = 1, max_length = 200)]
    pub metric: String,
    /// The reading.
    pub value: f64,
}

/// Input of the `fab` pipeline.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FabInput {
    /// The anomaly.
    pub anomaly: FabAnomaly,
    /// The incident id the run's audit events carry (empty when absent).
    #[serde(default)]
    #[schema(max_length = 128, pattern = r"^[A-Za-z0-9_.:/@-]*$")]
    pub incident: String,
}

/// Input of the `workflow` pipeline.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowInput {
    /// A workflow of the server's `[workflows] dir` (`NAME.toml`): letters, digits, `-`, `_`.
    #[schema(min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9_-]+$")]
    pub name: String,
    /// Its input: values of keys its `[state]` declares.
    #[serde(default)]
    pub input: Map<String, Value>,
}

/// Body of `POST /v1/runs`: `{"pipeline": NAME, "input": …}`, the input being the pipeline's.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(tag = "pipeline", content = "input", rename_all = "snake_case", deny_unknown_fields)]
pub enum StartBody {
    /// Seed 001's analysis: four analysts, evaluators, scoring and a confidence loop.
    Analysis(AnalysisInput),
    /// Seed 000's fab: Diagnostician → triage → Advisor → the gate → approval, acting for the
    /// caller (the requester of every plan). Pauses for `choose_candidate` and `approve_plan`.
    Fab(FabInput),
    /// A workflow file of the server's `[workflows] dir`, run for the caller (its tool calls go
    /// through the gate as the caller). Pauses for `approve_plan` and `workflow_approval`.
    Workflow(WorkflowInput),
}

/// Body of `POST /v1/runs/{id}/resume`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResumeBody {
    /// A pending interrupt of the run (`GET /v1/runs/{id}` lists them).
    #[schema(max_length = 512, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    pub interrupt_id: String,
    /// The answer (any JSON value; null when absent).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub value: Value,
}

/// A run accepted (202).
#[derive(Debug, Serialize, ToSchema)]
pub struct RunAccepted {
    /// The run id.
    pub run_id: String,
    /// Always `running`.
    pub status: String,
}

/// Where a run stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunStatus {
    /// The run id.
    pub run_id: String,
    /// The pipeline (empty before the first checkpoint).
    pub pipeline: String,
    /// `running`, `interrupted`, `done`, `failed` or `cancelled`.
    pub status: String,
    /// The super-step of the latest checkpoint.
    pub steps: u64,
    /// Pending interrupts `{id, task_id, node, payload}`.
    #[schema(value_type = Vec<Object>)]
    pub interrupts: Value,
    /// The state at the latest checkpoint (the `analysis` pipeline's `report` once done).
    #[schema(value_type = Object)]
    pub state: Value,
    /// Why it stopped (`{code, message}`), else null.
    #[schema(value_type = Option<Object>, required = true)]
    pub error: Option<Value>,
}

/// One Server-Sent Event of `GET /v1/runs/{id}/events`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunEventFrame {
    /// The event's name (`run_started`, `node_enter`, … `finished`).
    pub event: String,
    /// The event as JSON text (its `event` field repeats the name).
    pub data: String,
}

/// Where a run stands, as a query filter.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Steps remain (or it has not written a checkpoint yet).
    Running,
    /// Paused for an answer (`POST /v1/runs/{id}/resume`).
    Interrupted,
    /// Finished.
    Done,
    /// Stopped by an error.
    Failed,
    /// Stopped by cancellation.
    Cancelled,
}

impl From<RunState> for ThreadStatus {
    fn from(s: RunState) -> Self {
        match s {
            RunState::Running => Self::Running,
            RunState::Interrupted => Self::Interrupted,
            RunState::Done => Self::Done,
            RunState::Failed => Self::Failed,
            RunState::Cancelled => Self::Cancelled,
        }
    }
}

/// Query of `GET /v1/runs`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RunsQuery {
    /// Runs older than this run id (the previous page's `next_after`); default: from the newest.
    #[param(pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")]
    pub after: Option<String>,
    /// Only runs in this state.
    pub status: Option<RunState>,
    /// Page size, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

/// One run of `GET /v1/runs`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunListItem {
    /// The run id.
    pub run_id: String,
    /// The pipeline (empty before the first checkpoint).
    pub pipeline: String,
    /// `running`, `interrupted`, `done`, `failed` or `cancelled`.
    pub status: String,
    /// The super-step of the latest checkpoint.
    pub steps: u64,
}

/// `GET /v1/runs`: one page.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunList {
    /// The caller's tenant's runs, newest first.
    pub runs: Vec<RunListItem>,
    /// `after` for the next page; null on the last one.
    #[schema(required = true)]
    pub next_after: Option<String>,
}

/// `GET /v1/decisions`.
#[derive(Debug, Serialize, ToSchema)]
pub struct DecisionList {
    /// The caller's tenant's most recent DecisionRecords.
    #[schema(value_type = Vec<crate::openapi::records::DecisionRecord>)]
    pub decisions: Vec<Value>,
}

/// Query of `GET /v1/decisions`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DecisionsQuery {
    /// How many, 1 to 1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

fn runs(state: &AppState) -> Result<&Arc<Runs>, ApiError> {
    state.runs.as_ref().ok_or_else(|| ApiError::not_found("runs are not enabled on this server"))
}

/// A run id is a UUID; anything else is unknown.
fn run_id(id: &str) -> Result<&str, ApiError> {
    uuid::Uuid::parse_str(id).map(|_| id).map_err(|_| ApiError::not_found(format!("no run `{id}`")))
}

/// Starts a pipeline run in the background.
#[utoipa::path(
    post, path = "/v1/runs", operation_id = "startRun", tag = "runs",
    request_body = StartBody,
    security(("bearer" = [])),
    responses(
        (status = 202, description = "started; follow `GET /v1/runs/{run_id}` or its `/events`", body = RunAccepted),
        (status = 400, description = "the input is not the pipeline's (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `runs:start` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "runs are not enabled on this server, or no such workflow (`not_found`)", body = crate::openapi::ErrorBody),
        (status = 409, description = "the workflow file is refused (`workflow_invalid`, every problem in the message)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn start(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<StartBody>,
) -> Result<(StatusCode, Json<RunAccepted>), ApiError> {
    caller.require_any(&[SCOPE_RUNS_START])?;
    let runs = runs(&state)?;
    let (pipeline, input) = match body {
        StartBody::Analysis(input) => {
            if input.entity.is_empty() {
                return Err(ApiError::bad_request("`input.entity` must not be empty"));
            }
            ("analysis", json!({"entity": input.entity, "data": input.data}))
        }
        StartBody::Fab(input) => {
            let FabAnomaly { equipment, metric, value } = input.anomaly;
            let sizes = [equipment.chars().count(), metric.chars().count(), input.incident.chars().count()];
            if equipment.is_empty() || metric.is_empty() || sizes.iter().any(|n| *n > MAX_NAME) {
                return Err(ApiError::bad_request(format!(
                    "`input.anomaly.equipment` and `.metric` must be 1 to {MAX_NAME} characters, `input.incident` at most {MAX_NAME}"
                )));
            }
            let anomaly = json!({"equipment": equipment, "metric": metric, "value": value});
            ("fab", json!({"anomaly": anomaly, "incident": input.incident}))
        }
        StartBody::Workflow(input) => {
            let safe = !input.name.is_empty()
                && input.name.len() <= 64
                && input.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if !safe {
                return Err(ApiError::bad_request("`input.name` must be 1 to 64 letters, digits, `-` or `_`"));
            }
            if input.input.keys().any(|k| k.starts_with('_')) {
                return Err(ApiError::bad_request("`input.input` keys starting with `_` are the engine's"));
            }
            ("workflow", json!({"name": input.name, "input": input.input}))
        }
    };
    // Inputs are kept in checkpoints and reach the gate: no NUL, a bounded incident.
    let bad = |e: bridle_core::bounds::BoundError| ApiError::bad_request(e.to_string());
    bridle_core::bounds::check_json("input", &input).map_err(bad)?;
    if let Some(incident) = input.get("incident").and_then(Value::as_str) {
        bridle_core::bounds::check_id("input.incident", incident).map_err(bad)?;
    }
    let run_id = match pipeline {
        "workflow" => {
            let name = input.get("name").and_then(Value::as_str).unwrap_or_default();
            runs.start_workflow(&caller.0, name, input.get("input").cloned().unwrap_or_default())
        }
        _ => runs.start(&caller.0, pipeline, input),
    }?;
    Ok((StatusCode::ACCEPTED, Json(RunAccepted { run_id, status: "running".into() })))
}

/// The caller's tenant's runs, newest first, a page at a time.
#[utoipa::path(
    get, path = "/v1/runs", operation_id = "listRuns", tag = "runs",
    params(RunsQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"runs\": [run], \"next_after\": run_id | null}`; pass `next_after` as `after` for the next page", body = RunList),
        (status = 400, description = "bad query (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `runs:read` or `runs:start` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "runs are not enabled on this server (`not_found`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<RunsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<RunList>, ApiError> {
    caller.require_any(&[SCOPE_RUNS_READ, SCOPE_RUNS_START])?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let runs = runs(&state)?;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!("`limit` must be between 1 and {MAX_LIMIT}")));
    }
    if let Some(after) = &query.after
        && uuid::Uuid::parse_str(after).is_err()
    {
        return Err(ApiError::bad_request("`after` must be a run id"));
    }
    let page = runs.list(&caller.0.tenant, query.after.as_deref(), query.status.map(ThreadStatus::from), limit).await?;
    let items = page
        .runs
        .into_iter()
        .map(|r| RunListItem {
            run_id: r.run_id,
            pipeline: r.pipeline,
            status: r.status.as_str().to_owned(),
            steps: r.steps,
        })
        .collect();
    Ok(Json(RunList { runs: items, next_after: page.next_after }))
}

/// Where one of the caller's runs stands: status, steps, pending interrupts and state.
#[utoipa::path(
    get, path = "/v1/runs/{id}", operation_id = "getRun", tag = "runs",
    params(("id" = String, Path, description = "run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the run, from its latest checkpoint", body = RunStatus),
        (status = 403, description = "needs `runs:read` or `runs:start` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "no such run in the caller's tenant (`not_found`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn show(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RunStatus>, ApiError> {
    caller.require_any(&[SCOPE_RUNS_READ, SCOPE_RUNS_START])?;
    let view = runs(&state)?.view(&caller.0.tenant, run_id(&id)?).await?;
    Ok(Json(RunStatus {
        run_id: view.run_id,
        pipeline: view.pipeline,
        status: view.status.as_str().to_owned(),
        steps: view.steps,
        interrupts: view.interrupts,
        state: view.state,
        error: view.error,
    }))
}

/// The run's events as Server-Sent Events (`event:` is the event's `event` field, `data:` the
/// event as JSON), ending with `finished`; a finished run gives its outcome as one `finished`.
#[utoipa::path(
    get, path = "/v1/runs/{id}/events", operation_id = "streamRunEvents", tag = "runs",
    params(("id" = String, Path, description = "run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`text/event-stream` of the run's events", body = RunEventFrame, content_type = "text/event-stream"),
        (status = 403, description = "needs `runs:read` or `runs:start` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "no such run in the caller's tenant (`not_found`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn events(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    caller.require_any(&[SCOPE_RUNS_READ, SCOPE_RUNS_START])?;
    let rx = runs(&state)?.subscribe(&caller.0.tenant, run_id(&id)?).await?;
    // Shutdown ends the stream, so a watched run never holds `bridle serve` up.
    let stop = state.mcp.cancel.clone();
    let stream = futures_util::stream::unfold((rx, stop), |(mut rx, stop)| async move {
        let event = tokio::select! {
            event = rx.recv() => event?,
            () = stop.cancelled() => return None,
        };
        let name = event.get("event").and_then(Value::as_str).unwrap_or("event").to_owned();
        Some((Ok(SseEvent::default().event(name).data(event.to_string())), (rx, stop)))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Answers a pending interrupt of the caller's run; the rest runs in the background.
#[utoipa::path(
    post, path = "/v1/runs/{id}/resume", operation_id = "resumeRun", tag = "runs",
    params(("id" = String, Path, description = "run id")),
    request_body = ResumeBody,
    security(("bearer" = [])),
    responses(
        (status = 202, description = "resumed", body = RunAccepted),
        (status = 403, description = "needs `runs:start` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "no such run in the caller's tenant (`not_found`)", body = crate::openapi::ErrorBody),
        (status = 409, description = "not waiting for that answer (`unknown_interrupt`, `stale_checkpoint`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn resume(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ResumeBody>,
) -> Result<(StatusCode, Json<RunAccepted>), ApiError> {
    caller.require_any(&[SCOPE_RUNS_START])?;
    let runs = runs(&state)?;
    let id = run_id(&id)?;
    let bad = |e: bridle_core::bounds::BoundError| ApiError::bad_request(e.to_string());
    // Interrupt ids are derived (`{thread}/{task}/{n}`): the key bound.
    bridle_core::bounds::check_key("interrupt_id", &body.interrupt_id).map_err(bad)?;
    bridle_core::bounds::check_json("value", &body.value).map_err(bad)?;
    runs.resume(&caller.0.tenant, id, &body.interrupt_id, body.value).await?;
    Ok((StatusCode::ACCEPTED, Json(RunAccepted { run_id: id.to_owned(), status: "running".into() })))
}

/// The caller's tenant's most recent decision records (one per analyst call), newest first.
#[utoipa::path(
    get, path = "/v1/decisions", operation_id = "listDecisions", tag = "runs",
    params(DecisionsQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "`{\"decisions\": [DecisionRecord]}`", body = DecisionList),
        (status = 400, description = "bad query (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `runs:read` or `audit:read` (`forbidden`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn decisions(
    State(state): State<AppState>,
    caller: Caller,
    query: Result<Query<DecisionsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<DecisionList>, ApiError> {
    caller.require_any(&[SCOPE_RUNS_READ, SCOPE_AUDIT_READ])?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::bad_request(format!("`limit` must be between 1 and {MAX_LIMIT}")));
    }
    let records = state.gate.stores().decisions.recent(&caller.0.tenant, limit).await?;
    let decisions = records.iter().map(serde_json::to_value).collect::<Result<_, _>>()?;
    Ok(Json(DecisionList { decisions }))
}
