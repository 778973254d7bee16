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
use bridle_runtime::runs::{RunKind, Runs};
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
    /// `graph`: a pipeline or workflow run; `calls`: calls made through the gate under a run id
    /// the caller chose (`POST /v1/calls` with `run_id`), viewed from the audit log.
    #[schema(value_type = RunKindName)]
    pub kind: &'static str,
    /// The pipeline (empty before the first checkpoint, and for `calls`).
    pub pipeline: String,
    /// A graph run: `running`, `interrupted` (waiting for a human), `done`, `failed` or
    /// `cancelled`; a `calls` run: its record's `open`, `exhausted` or `expired`.
    #[schema(value_type = RunStatusName)]
    pub status: String,
    /// The super-step of the latest checkpoint.
    pub steps: u64,
    /// When it started (RFC 3339), from its kept history or run record; null when unknown.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub started_at: Option<String>,
    /// The subject who started it; null when unknown.
    #[schema(required = true)]
    pub starter: Option<String>,
    /// How long it has run (until now while it runs or waits), in milliseconds; null when unknown.
    #[schema(required = true)]
    pub duration_ms: Option<u64>,
    /// Pending interrupts (status `interrupted`).
    #[schema(value_type = Vec<RunInterrupt>)]
    pub interrupts: Value,
    /// The state at the latest checkpoint: the pipeline's own fields (the `analysis` pipeline's
    /// `report` once done, the `fab` pipeline's `diagnosis`, `plan`, `outcome` …). Keys starting
    /// with `_` are the engine's.
    #[schema(value_type = Object)]
    pub state: Value,
    /// Why it stopped (`{code, message}`), else null.
    #[schema(value_type = Option<RunFailure>, required = true)]
    pub error: Option<Value>,
    /// Its kept history, oldest first: the first event and the newest 499 of the run.
    #[schema(value_type = Vec<RunHistoryEvent>)]
    pub events: Vec<Value>,
    /// The graph with each node's state; null for `calls`.
    #[schema(value_type = Option<RunGraph>, required = true)]
    pub graph: Option<Value>,
    /// Its tool calls and approval events from the audit log (among the tenant's newest 10 000
    /// events; at most 200, the newest), oldest first.
    #[schema(value_type = Vec<RunCall>)]
    pub calls: Vec<Value>,
}

/// What a viewed run is.
#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)] // a schema only: the field is written as a string
#[serde(rename_all = "snake_case")]
pub enum RunKindName {
    /// A pipeline or workflow run.
    Graph,
    /// Gate calls under a caller-chosen run id.
    Calls,
}

/// Where a run stands, as reported.
#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)] // a schema only: the field is written as a string
#[serde(rename_all = "snake_case")]
pub enum RunStatusName {
    /// Steps remain.
    Running,
    /// Waiting for a human (`POST /v1/runs/{id}/resume`).
    Interrupted,
    /// Finished.
    Done,
    /// Stopped by an error.
    Failed,
    /// Stopped by cancellation.
    Cancelled,
    /// A `calls` run accepting calls.
    Open,
    /// A `calls` run whose calls are spent.
    Exhausted,
    /// A `calls` run past its deadline.
    Expired,
}

/// Why a run stopped.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunFailure {
    /// Stable code.
    pub code: String,
    /// In words.
    pub message: String,
}

/// A pending interrupt: what a human must answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunInterrupt {
    /// Its id (`POST /v1/runs/{id}/resume` names it).
    pub id: String,
    /// The task that raised it.
    pub task_id: String,
    /// Its node.
    pub node: String,
    /// What is asked: `kind` (`choose_candidate`, `approve_plan`, `workflow_approval`) and its
    /// fields (candidates, a plan …).
    #[schema(value_type = Object)]
    pub payload: Value,
}

/// One kept event of a run's history. Every event has `event` and `at`; the other fields
/// depend on the event.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunHistoryEvent {
    /// `started` (with `by`, `pipeline`), `run_started`, `node_enter`, `node_exit` (with
    /// `duration_us`), `node_error` (with `error`), `interrupted` (with `interrupts`), `answered`
    /// (with `by`, `interrupt_id`, `answer`) or `finished` (with `status`).
    pub event: String,
    /// When (RFC 3339).
    #[schema(format = DateTime)]
    pub at: String,
    /// The node.
    pub node: Option<String>,
    /// The super-step.
    pub step: Option<u64>,
    /// Whether the run continued a stored thread (`run_started`).
    pub resumed: Option<bool>,
    /// Time the node took, retries included (`node_exit`).
    pub duration_us: Option<u64>,
    /// Whether the node's update came from its error handler (`node_exit`).
    pub degraded: Option<bool>,
    /// Which attempt failed (`node_error`).
    pub attempt: Option<u32>,
    /// Whether another attempt follows (`node_error`).
    pub retrying: Option<bool>,
    /// `{code, message}` (`node_error`, `finished`).
    pub error: Option<RunFailure>,
    /// The pauses (`interrupted`).
    pub interrupts: Option<Vec<RunPause>>,
    /// Who started the run (`started`) or answered a pause (`answered`).
    pub by: Option<String>,
    /// The pipeline (`started`).
    pub pipeline: Option<String>,
    /// The interrupt answered (`answered`).
    pub interrupt_id: Option<String>,
    /// The kind of pause answered (`answered`).
    pub kind: Option<String>,
    /// The answer in short: `approved`, `reason`, `cause`, `choice` (`answered`).
    #[schema(value_type = Option<Object>)]
    pub answer: Option<Value>,
    /// How the run ended (`finished`): `done`, `interrupted`, `failed` or `cancelled`.
    pub status: Option<String>,
    /// Super-steps completed (`finished`).
    pub steps: Option<u64>,
}

/// A pause of an `interrupted` event.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunPause {
    /// The interrupt id.
    pub id: String,
    /// Its node.
    pub node: String,
    /// Its kind (`choose_candidate`, `approve_plan`, …).
    pub kind: String,
}

/// A run's graph with each node's state.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunGraph {
    /// The nodes in declaration order.
    pub nodes: Vec<RunGraphNode>,
    /// The edges; `__start__` and `__end__` stand for the graph's ends.
    pub edges: Vec<RunGraphEdge>,
}

/// A node of a run's graph.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunGraphNode {
    /// The node's name.
    pub id: String,
    /// Where it stands in this run.
    pub state: RunNodeState,
}

/// Where a node stands in a run.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunNodeState {
    /// It ran.
    Done,
    /// It is running.
    Running,
    /// The run waits for a human at it.
    Paused,
    /// It failed.
    Failed,
    /// The run has not reached it.
    NotReached,
}

/// An edge of a run's graph.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunGraphEdge {
    /// From this node (or `__start__`).
    pub from: String,
    /// To this node (or `__end__`).
    pub to: String,
}

/// A tool call or approval event of a run, from the audit log.
#[derive(Debug, Serialize, ToSchema)]
pub struct RunCall {
    /// The audit event's sequence number in the tenant's chain.
    pub seq: u64,
    /// When (RFC 3339).
    #[schema(format = DateTime)]
    pub at: String,
    /// The audit event's kind (`tool_call`, `approval_requested`, `approval_granted` …).
    pub kind: String,
    /// The tool.
    pub tool: String,
    /// What it means to an operator (`executed`, `waiting for approval`, `refused: policy_denied` …).
    pub display: String,
    /// The verdict of a tool call, else null.
    #[schema(required = true)]
    pub decision: Option<String>,
    /// The refusal code, else null.
    #[schema(required = true)]
    pub code: Option<String>,
    /// Who acted (the caller, or the approver of a grant).
    pub subject: String,
    /// The agent, when known.
    #[schema(required = true)]
    pub agent: Option<String>,
    /// The approval involved, else null.
    #[schema(required = true)]
    pub approval_id: Option<String>,
    /// Who approved, else null.
    #[schema(required = true)]
    pub approver: Option<String>,
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
    /// When it started (RFC 3339); null when its history is not kept.
    #[schema(value_type = Option<String>, format = DateTime, required = true)]
    pub started_at: Option<String>,
    /// The subject who started it; null when unknown.
    #[schema(required = true)]
    pub starter: Option<String>,
    /// How long it has run (until now while it runs or waits), in milliseconds; null when unknown.
    #[schema(required = true)]
    pub duration_ms: Option<u64>,
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

/// The run a viewer names: a run's UUID, the thread form `{tenant}/{uuid}` the gate records for
/// a graph run's calls (the caller's tenant only), or any run id a caller gave its calls.
fn viewed_run_id<'a>(tenant: &str, id: &'a str) -> Result<&'a str, ApiError> {
    let unknown = || ApiError::not_found(format!("no run `{id}`"));
    if let Some(rest) = id.strip_prefix(tenant).and_then(|r| r.strip_prefix('/'))
        && uuid::Uuid::parse_str(rest).is_ok()
    {
        return Ok(rest);
    }
    if id.is_empty() || bridle_core::bounds::check_id("run_id", id).is_err() {
        return Err(unknown());
    }
    Ok(id)
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
            started_at: r.timing.started_at,
            starter: r.timing.starter,
            duration_ms: r.timing.duration_ms,
        })
        .collect();
    Ok(Json(RunList { runs: items, next_after: page.next_after }))
}

/// Where one of the caller's runs stands: status, steps, start, starter and duration, pending
/// interrupts, state, its kept history, its graph with each node's state and its tool calls. A
/// run id the caller's calls used without a graph run (`POST /v1/calls` with `run_id`) answers
/// `kind: "calls"` with those calls.
#[utoipa::path(
    get, path = "/v1/runs/{id}", operation_id = "getRun", tag = "runs",
    params(("id" = String, Path, description = "run id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the run, from its latest checkpoint and kept history (or, for `kind: \"calls\"`, its run record and audit events)", body = RunStatus),
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
    let view = runs(&state)?.view(&caller.0.tenant, viewed_run_id(&caller.0.tenant, &id)?).await?;
    let (kind, status) = match view.kind {
        RunKind::Graph => ("graph", view.status.as_str()),
        RunKind::Calls(state) => ("calls", state.as_str()),
    };
    Ok(Json(RunStatus {
        run_id: view.run_id,
        kind,
        pipeline: view.pipeline,
        status: status.to_owned(),
        steps: view.steps,
        started_at: view.timing.started_at,
        starter: view.timing.starter,
        duration_ms: view.timing.duration_ms,
        interrupts: view.interrupts,
        state: view.state,
        error: view.error,
        events: view.events,
        graph: view.graph,
        calls: view.calls,
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
    runs.resume(&caller.0, id, &body.interrupt_id, body.value).await?;
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
