//! Graph runs started in the background, for `/v1/runs` and `bridle run` alike: the registry of
//! pipelines a run may name (passed in by the applications, see [`Pipeline`]), the workflows of
//! `[workflows] dir` and workflow files (`bridle run FILE`, acting as the file's principal), the
//! runs in flight and their event streams, all over the running [`Runtime`] (its checkpointer,
//! hooks, session model, run settings and decision log).
//!
//! A run's thread id is `{tenant}/{run_id}` with a server-made UUID as the run id, so every
//! lookup goes through the caller's tenant and another tenant's run id is simply unknown. Run
//! ids are UUIDv7 (time first), so a tenant's threads by id descending are its runs newest
//! first: that is how [`Runs::list`] pages. While
//! a run is in flight its events are kept in memory and copied to every subscriber; every run's
//! events are also kept as server records with the checkpointer (`runs/history.rs`: bounded per
//! run, with retention), which is what the run view shows for running, paused and finished runs
//! alike, with its graph's node states, its tool calls from the audit log, start time, starter
//! and duration. A run id the gate knows but no graph ran (calls a caller made with its own
//! `run_id`) is viewed from its run record and audit events.

pub mod history;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bridle_core::checkpoint::{Checkpoint, ThreadQuery, ThreadStatus};
use bridle_core::{Code, Principal, Rejection};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::graph::{Event, Graph, GraphShape, RunStream};
use crate::llm::LlmClient;
use crate::runtime::Runtime;
use crate::workflow::{CompiledWorkflow, REQUESTER as WORKFLOW_REQUESTER, WorkflowDeps};
pub use history::Timing;

/// Builds a pipeline's graph acting for the starter, over the runtime with the run's model.
pub type BuildGraph =
    fn(&Runtime, &Principal, Arc<dyn LlmClient>) -> Result<Graph, Box<dyn std::error::Error + Send + Sync>>;

/// A pipeline a run may name.
#[derive(Debug, Clone, Copy)]
pub struct Pipeline {
    /// Its API name (`POST /v1/runs {"pipeline": …}`).
    pub name: &'static str,
    /// Its graph's name: the part of a checkpoint's `graph` before `@`.
    pub graph: &'static str,
    /// The agents a run registers, so a kill switch of any of them stops it.
    pub agents: &'static [&'static str],
    /// The state field keeping the principal who started a run, who it acts for again on a
    /// resume; `None`: the pipeline acts for the tenant.
    pub starter_field: Option<&'static str>,
    /// Builds the graph.
    pub build: BuildGraph,
}

/// A run in flight: the events so far and who listens.
#[derive(Default)]
struct Live {
    events: Vec<Event>,
    subscribers: Vec<mpsc::UnboundedSender<Event>>,
}

type LiveMap = Arc<Mutex<HashMap<String, Live>>>;

/// Why a run could not be started, read or resumed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Unknown run (or another tenant's).
    #[error("not_found: {0}")]
    NotFound(String),
    /// Refused with a stable code (`unknown_interrupt`, `stale_checkpoint`, `bad_request`).
    #[error("{}: {}", .0.code, .0.message)]
    Refused(Rejection),
    /// A store or the runtime failed.
    #[error("internal: {0}")]
    Internal(String),
}

/// What a viewed run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// A graph run (a pipeline or a workflow) of this service.
    Graph,
    /// Calls made through the gate under a run id no graph ran (a caller-chosen `run_id`), in
    /// this state of its run record.
    Calls(bridle_core::runs::RunState),
}

/// Where a run stands, from the checkpointer and the runs in flight.
#[derive(Debug, Clone)]
pub struct RunView {
    /// The run id (without the tenant).
    pub run_id: String,
    /// A graph run, or calls only.
    pub kind: RunKind,
    /// Its kept history, oldest first (each an object with `event` and `at`).
    pub events: Vec<Value>,
    /// The graph with each node's state (`{nodes: [{id, state}], edges: [{from, to}]}`); `None`
    /// for calls only.
    pub graph: Option<Value>,
    /// Its tool calls and approval events from the audit log, oldest first.
    pub calls: Vec<Value>,
    /// Start, starter, duration.
    pub timing: Timing,
    /// The pipeline's API name.
    pub pipeline: String,
    /// `running`, `interrupted`, `done`, `failed` or `cancelled`.
    pub status: ThreadStatus,
    /// The super-step of the latest checkpoint (0 before the first).
    pub steps: u64,
    /// Pending interrupts.
    pub interrupts: Value,
    /// The state at the latest checkpoint.
    pub state: Value,
    /// Why it stopped (`failed`, `cancelled`).
    pub error: Option<Value>,
}

/// One run of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// The run id (without the tenant).
    pub run_id: String,
    /// The pipeline's API name (empty before the first checkpoint).
    pub pipeline: String,
    /// Where it stands (`running` while in flight here).
    pub status: ThreadStatus,
    /// The super-step of the latest checkpoint (0 before the first).
    pub steps: u64,
    /// Start, starter, duration (from its kept history; empty without one).
    pub timing: Timing,
}

/// One page of a tenant's runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPage {
    /// Newest first.
    pub runs: Vec<RunSummary>,
    /// The `after` of the next page; `None` on the last one.
    pub next_after: Option<String>,
}

/// A workflow file's run started by [`Runs::start_file`].
#[derive(Debug)]
pub struct FileRun {
    /// `{tenant}/{run id}`: the thread, whose run id part is the run's id in the tenant's listing.
    pub thread: String,
    /// The time allowed per start or resume.
    pub allowance: std::time::Duration,
    /// Its events, `finished` last.
    pub events: mpsc::UnboundedReceiver<Event>,
}

/// The runs service `AppState::with_runs` installs and `bridle run` uses.
pub struct Runs {
    runtime: Arc<Runtime>,
    pipelines: Vec<Pipeline>,
    live: LiveMap,
    /// Graph shapes by graph id (`name@hash`), for drawings.
    shapes: Mutex<HashMap<String, GraphShape>>,
}

impl std::fmt::Debug for Runs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runs").finish_non_exhaustive()
    }
}

fn thread_id(tenant: &str, run_id: &str) -> String {
    format!("{tenant}/{run_id}")
}

fn internal(e: &dyn std::fmt::Display) -> RunError {
    RunError::Internal(e.to_string())
}

impl Runs {
    /// Runs of `pipelines` (and of workflows) over `runtime`; background runs are drained by
    /// [`Runtime::drain`].
    pub fn new(runtime: Arc<Runtime>, pipelines: Vec<Pipeline>) -> Self {
        Self { runtime, pipelines, live: Arc::default(), shapes: Mutex::default() }
    }

    /// The pipeline named `name`.
    fn pipeline(&self, name: &str) -> Option<&Pipeline> {
        self.pipelines.iter().find(|p| p.name == name)
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The graph of `pipeline` acting for `starter`, on the runtime's session model.
    fn graph(&self, pipeline: &str, starter: &Principal, thread: &str) -> Result<Graph, RunError> {
        let Some(entry) = self.pipeline(pipeline) else {
            return Err(RunError::Refused(Rejection::new(Code::BadRequest, format!("no pipeline `{pipeline}`"))));
        };
        let llm = self.runtime.session_llm(&starter.tenant, thread);
        (entry.build)(&self.runtime, starter, llm).map_err(|e| RunError::Internal(e.to_string()))
    }

    /// Starts `pipeline` on `input` for `starter` in the background; returns the run id. A
    /// pipeline with a `starter_field` keeps its starter in its state, so whoever answers its
    /// interrupts later, the run goes on acting for the starter.
    pub fn start(&self, starter: &Principal, pipeline: &str, mut input: Value) -> Result<String, RunError> {
        // v7: ids sort by start time, which `list` relies on.
        let run_id = uuid::Uuid::now_v7().to_string();
        let thread = thread_id(&starter.tenant, &run_id);
        let graph = self.graph(pipeline, starter, &thread)?;
        if let Some(field) = self.pipeline(pipeline).and_then(|p| p.starter_field)
            && let Some(fields) = input.as_object_mut()
        {
            fields.insert(field.to_owned(), serde_json::to_value(starter).map_err(|e| internal(&e))?);
        }
        self.remember(&graph);
        self.track(&thread)?;
        let stream = graph.stream(self.run_config(pipeline, &thread, starter), input);
        self.run_kept(thread, stream, vec![history::started(starter, pipeline)], true);
        Ok(run_id)
    }

    /// A workflow compiled to act for `starter`.
    fn workflow(
        &self,
        workflow: bridle_core::workflow::Workflow,
        starter: &Principal,
        thread: &str,
    ) -> Result<CompiledWorkflow, RunError> {
        let deps = WorkflowDeps {
            principal: Some(starter.clone()),
            ..WorkflowDeps::for_run(&self.runtime, &starter.tenant, thread)
        };
        CompiledWorkflow::new(workflow, deps).map_err(RunError::Refused)
    }

    /// Starts the workflow `name` of `[workflows] dir` on `input` for `starter` in the
    /// background; returns the run id. The run acts for the starter (never for the file's
    /// `principal`, which is the CLI's), kept in its state for resumes.
    pub fn start_workflow(&self, starter: &Principal, name: &str, input: Value) -> Result<String, RunError> {
        let workflow = crate::workflow::load_named(name, &self.runtime.config)
            .map_err(|r| if r.code == Code::NotFound { RunError::NotFound(r.message) } else { RunError::Refused(r) })?;
        let run_id = uuid::Uuid::now_v7().to_string();
        let thread = thread_id(&starter.tenant, &run_id);
        let compiled = self.workflow(workflow, starter, &thread)?;
        let mut input = input;
        match input.as_object_mut() {
            Some(fields) => {
                fields.insert(WORKFLOW_REQUESTER.to_owned(), serde_json::to_value(starter).map_err(|e| internal(&e))?);
            }
            None => return Err(RunError::Refused(Rejection::new(Code::BadRequest, "a workflow's input is an object"))),
        }
        self.remember(compiled.graph());
        self.track(&thread)?;
        let stream = compiled.start(compiled.run_config(&self.runtime, &thread), input);
        self.run_kept(thread, stream, vec![history::started(starter, "workflow")], true);
        Ok(run_id)
    }

    /// Starts a workflow file on `input` in the background, acting as the file's `principal`
    /// (`bridle run FILE`), with its events from the first on.
    pub fn start_file(&self, workflow: bridle_core::workflow::Workflow, input: Value) -> Result<FileRun, RunError> {
        let thread = crate::workflow::new_run_id(&workflow, &self.runtime.config);
        let compiled = CompiledWorkflow::for_runtime(workflow, &self.runtime, &thread).map_err(RunError::Refused)?;
        let events = self.track_watched(&thread)?;
        let allowance = compiled.allowance();
        self.remember(compiled.graph());
        let stream = compiled.start(compiled.run_config(&self.runtime, &thread), input);
        let first = json!({"event": "started", "by": compiled.workflow().principal, "pipeline": "workflow"});
        self.run_kept(thread.clone(), stream, vec![first], true);
        Ok(FileRun { thread, allowance, events })
    }

    /// Answers `interrupt_id` of the paused run `thread` of a workflow file with `value`, acting
    /// as the file's principal again (`bridle run FILE --resume`); returns the run's events from
    /// the resume on.
    pub fn resume_file(
        &self,
        workflow: bridle_core::workflow::Workflow,
        thread: &str,
        interrupt_id: &str,
        value: Value,
    ) -> Result<mpsc::UnboundedReceiver<Event>, RunError> {
        // The graph refuses (`stale_checkpoint`, in the run's `finished` event) a run that waits
        // for no such interrupt, and a checkpoint another version of the file wrote.
        let compiled = CompiledWorkflow::for_runtime(workflow, &self.runtime, thread).map_err(RunError::Refused)?;
        let events = self.track_watched(thread)?;
        let stream = compiled.resume(compiled.run_config(&self.runtime, thread), interrupt_id, value);
        self.run_kept(thread.to_owned(), stream, Vec::new(), false);
        Ok(events)
    }

    /// The latest checkpoint of `thread` when it waits for `interrupt_id`; `unknown_interrupt`
    /// otherwise (`run_id` names the run in messages).
    async fn pending(&self, thread: &str, run_id: &str, interrupt_id: &str) -> Result<Checkpoint, RunError> {
        let checkpoint = match self.latest(thread).await? {
            Some(checkpoint) => checkpoint,
            // Started and not paused yet: it waits for nothing.
            None if self.is_live(thread) => {
                return Err(RunError::Refused(Rejection::new(
                    Code::UnknownInterrupt,
                    format!("run `{run_id}` has no pending interrupt `{interrupt_id}` yet"),
                )));
            }
            None => return Err(not_found(run_id)),
        };
        let pending = checkpoint.status == ThreadStatus::Interrupted;
        if !pending || !checkpoint.interrupts.iter().any(|i| i.id == interrupt_id) {
            return Err(RunError::Refused(Rejection::new(
                Code::UnknownInterrupt,
                format!("run `{run_id}` has no pending interrupt `{interrupt_id}`"),
            )));
        }
        Ok(checkpoint)
    }

    /// Answers `interrupt_id` of the run `run_id` of `by`'s tenant with `value`, `by` being who
    /// answers (kept in the run's history); the rest runs in the background.
    pub async fn resume(&self, by: &Principal, run_id: &str, interrupt_id: &str, value: Value) -> Result<(), RunError> {
        let tenant = by.tenant.as_str();
        let thread = thread_id(tenant, run_id);
        let checkpoint = self.pending(&thread, run_id, interrupt_id).await?;
        let answer = checkpoint
            .interrupts
            .iter()
            .find(|i| i.id == interrupt_id)
            .map(|i| history::answered(by, i, &value))
            .into_iter()
            .collect::<Vec<_>>();
        let pipeline = self.pipeline_of(&checkpoint).ok_or_else(|| not_found(run_id))?;
        if pipeline == "workflow" {
            // The file the run was compiled from, unchanged; a changed or removed file cannot
            // resume it.
            let workflow =
                crate::workflow::find_by_graph(&checkpoint.graph, &self.runtime.config).ok_or_else(|| {
                    RunError::Refused(Rejection::new(
                        Code::StaleCheckpoint,
                        format!("the workflow of run `{run_id}` changed or is no longer in `[workflows] dir`"),
                    ))
                })?;
            let compiled = self.workflow(workflow, &self.starter_of(pipeline, tenant, &checkpoint)?, &thread)?;
            self.track(&thread)?;
            let stream = compiled.resume(compiled.run_config(&self.runtime, &thread), interrupt_id, value);
            self.run_kept(thread, stream, answer, false);
            return Ok(());
        }
        let starter = self.starter_of(pipeline, tenant, &checkpoint)?;
        let graph = self.graph(pipeline, &starter, &thread)?;
        self.track(&thread)?;
        let stream = graph.resume(self.run_config(pipeline, &thread, &starter), interrupt_id, value);
        self.run_kept(thread, stream, answer, false);
        Ok(())
    }

    /// The runtime's settings for a run of `pipeline` started by `starter`: a run is registered
    /// with its pipeline's agents, and with the agent of its starter's credential, so a kill
    /// switch of any of them stops it (not only its next tool call).
    fn run_config(&self, pipeline: &str, thread: &str, starter: &Principal) -> crate::graph::RunConfig {
        let own = self.runtime.config.agents.acting(starter, None).ok().flatten().map(|a| a.agent);
        let mut agents: Vec<&str> = self.pipeline(pipeline).map(|p| p.agents.to_vec()).unwrap_or_default();
        agents.extend(own.as_deref());
        self.runtime.run_config_for(thread, &agents)
    }

    /// Where the caller's run stands, with its kept history, graph, tool calls and timing; a
    /// run id no graph ran but the gate knows (calls made under it) is viewed from its run
    /// record and audit events.
    pub async fn view(&self, tenant: &str, run_id: &str) -> Result<RunView, RunError> {
        let thread = thread_id(tenant, run_id);
        let live = self.is_live(&thread);
        let checkpoint = self.latest(&thread).await?;
        if checkpoint.is_none() && !live {
            return self.calls_only(tenant, run_id).await;
        }
        let rows = self.runtime.checkpointer.run_events(&thread).await.map_err(|e| internal(&e))?;
        let events: Vec<Value> = rows.iter().map(|r| r.body.clone()).collect();
        let calls = self.calls(tenant, &thread).await?;
        let Some(checkpoint) = checkpoint else {
            // Started, no checkpoint written yet.
            let status = ThreadStatus::Running;
            let graph = history::drawing(&history::shape_from(&events), &events, status, &[]);
            return Ok(RunView {
                run_id: run_id.to_owned(),
                kind: RunKind::Graph,
                pipeline: events
                    .first()
                    .and_then(|e| e.get("pipeline"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                status,
                steps: 0,
                interrupts: json!([]),
                state: json!({}),
                error: None,
                timing: span_timing(rows.first(), rows.last(), status),
                events,
                graph: Some(graph),
                calls,
            });
        };
        let pipeline = self.pipeline_of(&checkpoint).unwrap_or("unknown");
        let status = self.status_of(&thread, &checkpoint);
        let shape =
            self.shape_of(pipeline, &checkpoint.graph, tenant, &thread).unwrap_or_else(|| history::shape_from(&events));
        let graph = history::drawing(&shape, &events, status, &checkpoint.interrupts);
        let mut timing = span_timing(rows.first(), rows.last(), status);
        if timing.starter.is_none() {
            timing.starter =
                self.starter_of(pipeline, tenant, &checkpoint).ok().map(|p| p.subject).filter(|s| !s.is_empty());
        }
        Ok(RunView {
            run_id: run_id.to_owned(),
            kind: RunKind::Graph,
            pipeline: pipeline.to_owned(),
            status,
            steps: checkpoint.step,
            interrupts: serde_json::to_value(&checkpoint.interrupts).map_err(|e| internal(&e))?,
            state: checkpoint.state,
            error: checkpoint.error,
            timing,
            events,
            graph: Some(graph),
            calls,
        })
    }

    /// A run id no graph ran: its record in the run ledger and its calls in the audit log;
    /// `not_found` when neither knows it.
    async fn calls_only(&self, tenant: &str, run_id: &str) -> Result<RunView, RunError> {
        let record = self.runtime.stores.runs.run(tenant, run_id).await.map_err(|e| internal(&e))?;
        let calls = self.calls(tenant, run_id).await?;
        if record.is_none() && calls.is_empty() {
            return Err(not_found(run_id));
        }
        let at = |c: Option<&Value>| {
            c.and_then(|c| c.get("at"))
                .and_then(Value::as_str)
                .and_then(|t| time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok())
        };
        let (state, starter, opened, last) = match &record {
            Some(r) => (r.state, Some(r.subject.clone()), Some(r.opened_at), Some(r.last_call_at)),
            None => (
                bridle_core::runs::RunState::Open,
                calls.first().and_then(|c| c.get("subject")).and_then(Value::as_str).map(str::to_owned),
                at(calls.first()),
                at(calls.last()),
            ),
        };
        let rfc = |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).ok();
        let timing = Timing {
            started_at: opened.and_then(rfc),
            starter,
            duration_ms: opened.zip(last).and_then(|(a, b)| u64::try_from((b - a).whole_milliseconds()).ok()),
        };
        Ok(RunView {
            run_id: run_id.to_owned(),
            kind: RunKind::Calls(state),
            pipeline: String::new(),
            status: ThreadStatus::Done,
            steps: 0,
            interrupts: json!([]),
            state: json!({}),
            error: None,
            events: Vec::new(),
            graph: None,
            calls,
            timing,
        })
    }

    /// The tool calls and approval events the gate recorded under `gate_run_id` (a graph run's
    /// calls carry its thread id).
    async fn calls(&self, tenant: &str, gate_run_id: &str) -> Result<Vec<Value>, RunError> {
        history::calls(self.runtime.stores.audit.as_ref(), tenant, gate_run_id).await.map_err(RunError::Internal)
    }

    /// The events of the caller's run: those so far and the rest as they come while it runs;
    /// for a run not in flight here, its kept history and a `finished` event built from its
    /// latest checkpoint.
    pub async fn subscribe(&self, tenant: &str, run_id: &str) -> Result<mpsc::UnboundedReceiver<Value>, RunError> {
        let thread = thread_id(tenant, run_id);
        let (tx, rx) = mpsc::unbounded_channel::<Value>();
        let (etx, mut erx) = mpsc::unbounded_channel::<Event>();
        let attached = {
            let mut live = self.live.lock().map_err(|_| RunError::Internal("runs lock poisoned".into()))?;
            match live.get_mut(&thread) {
                Some(entry) => {
                    for event in &entry.events {
                        let _ = etx.send(event.clone());
                    }
                    entry.subscribers.push(etx);
                    true
                }
                None => false,
            }
        };
        if attached {
            tokio::spawn(async move {
                while let Some(event) = erx.recv().await {
                    if tx.send(serde_json::to_value(&event).unwrap_or(Value::Null)).is_err() {
                        break;
                    }
                }
            });
            return Ok(rx);
        }
        let view = self.view(tenant, run_id).await?;
        if view.kind != RunKind::Graph {
            return Err(not_found(run_id));
        }
        // Its kept history first, then how it stands now.
        for event in view.events.iter().filter(|e| e.get("event").and_then(Value::as_str) != Some("finished")) {
            let _ = tx.send(event.clone());
        }
        let outcome = json!({
            "thread_id": thread,
            "status": view.status,
            "state": view.state,
            "steps": view.steps,
            "interrupts": view.interrupts,
            "error": view.error,
        });
        let _ = tx.send(json!({"event": "finished", "outcome": outcome}));
        Ok(rx)
    }

    /// A page of `tenant`'s runs, newest first: those with a checkpoint (from the checkpointer)
    /// and those in flight here that have none yet; below the run id `after` when given, with
    /// `status` when given (a run in flight here counts as `running`).
    pub async fn list(
        &self,
        tenant: &str,
        after: Option<&str>,
        status: Option<ThreadStatus>,
        limit: u32,
    ) -> Result<RunPage, RunError> {
        let prefix = thread_id(tenant, "");
        let before = after.map(|a| thread_id(tenant, a));
        // A run in flight here may have a checkpoint of another status (an answered interrupt,
        // a failed step being retried); it is asked for unfiltered and filtered below.
        let query = ThreadQuery { prefix: prefix.clone(), before: before.clone(), status: None, limit };
        let stored = self.runtime.checkpointer.threads(&query).await.map_err(|e| internal(&e))?;
        // A full page ends at its last thread: later ones (in flight or not) belong to the next.
        let cut = (stored.len() >= limit as usize).then(|| stored.last().map(|t| t.thread_id.clone())).flatten();
        let live: Vec<String> = {
            let map = self.live.lock().map_err(|_| RunError::Internal("runs lock poisoned".into()))?;
            map.keys()
                .filter(|t| t.starts_with(&prefix))
                .filter(|t| before.as_ref().is_none_or(|b| *t < b))
                .filter(|t| cut.as_ref().is_none_or(|c| *t >= c))
                .cloned()
                .collect()
        };
        let mut runs: Vec<(String, RunSummary)> = stored
            .into_iter()
            .map(|t| {
                let pipeline = self.pipeline_of_graph(&t.graph).unwrap_or("unknown").to_owned();
                let status = if live.contains(&t.thread_id) { ThreadStatus::Running } else { t.status };
                let run_id = t.thread_id.strip_prefix(&prefix).unwrap_or_default().to_owned();
                (t.thread_id, RunSummary { run_id, pipeline, status, steps: t.step, timing: Timing::default() })
            })
            .collect();
        for thread in live {
            if !runs.iter().any(|(t, _)| *t == thread) {
                let run_id = thread.strip_prefix(&prefix).unwrap_or_default().to_owned();
                let summary = RunSummary {
                    run_id,
                    pipeline: String::new(),
                    status: ThreadStatus::Running,
                    steps: 0,
                    timing: Timing::default(),
                };
                runs.push((thread, summary));
            }
        }
        runs.retain(|(_, r)| status.is_none_or(|s| r.status == s));
        runs.sort_by(|a, b| b.0.cmp(&a.0));
        runs.truncate(limit as usize);
        for (thread, summary) in &mut runs {
            let span = self.runtime.checkpointer.run_event_span(thread).await.map_err(|e| internal(&e))?;
            if let Some((first, last)) = span {
                summary.timing = history::timing(&first, &last, summary.status);
                if summary.pipeline.is_empty() {
                    summary.pipeline =
                        first.body.get("pipeline").and_then(Value::as_str).unwrap_or_default().to_owned();
                }
            }
        }
        let next_after = if runs.len() >= limit as usize {
            runs.last().map(|(_, r)| r.run_id.clone())
        } else {
            cut.and_then(|c| c.strip_prefix(&prefix).map(str::to_owned))
        };
        Ok(RunPage { runs: runs.into_iter().map(|(_, r)| r).collect(), next_after })
    }

    async fn latest(&self, thread: &str) -> Result<Option<Checkpoint>, RunError> {
        self.runtime.checkpointer.latest(thread).await.map_err(|e| internal(&e))
    }

    fn is_live(&self, thread: &str) -> bool {
        self.live.lock().map(|live| live.contains_key(thread)).unwrap_or(false)
    }

    fn status_of(&self, thread: &str, checkpoint: &Checkpoint) -> ThreadStatus {
        if self.is_live(thread) { ThreadStatus::Running } else { checkpoint.status }
    }

    /// Marks a run in flight; refused (`stale_checkpoint`) when it already is: an interrupt was
    /// answered and the run goes on from that answer.
    fn track(&self, thread: &str) -> Result<(), RunError> {
        let mut live = self.live.lock().map_err(|_| RunError::Internal("runs lock poisoned".into()))?;
        if live.contains_key(thread) {
            return Err(RunError::Refused(Rejection::new(
                Code::StaleCheckpoint,
                "the run is already going on from an answer; read its status again",
            )));
        }
        live.insert(thread.to_owned(), Live::default());
        Ok(())
    }

    /// [`Self::track`] with a subscriber attached before the run starts, so it sees every event.
    fn track_watched(&self, thread: &str) -> Result<mpsc::UnboundedReceiver<Event>, RunError> {
        self.track(thread)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let mut live = self.live.lock().map_err(|_| RunError::Internal("runs lock poisoned".into()))?;
        if let Some(entry) = live.get_mut(thread) {
            entry.subscribers.push(tx);
        }
        Ok(rx)
    }

    /// Runs `stream` in the background: keeps `first` (who started or answered) and then each
    /// event in the run's history before handing it to the live map and subscribers, so a run
    /// seen as finished has its history complete. `prune` drops old histories first (a start).
    fn run_kept(&self, thread: String, mut stream: RunStream, first: Vec<Value>, prune: bool) {
        let checkpointer = self.runtime.checkpointer.clone();
        let feed = self.feeder(thread.clone());
        self.runtime.spawn_background(async move {
            if prune {
                history::prune(&checkpointer).await;
            }
            for record in first {
                history::keep(&checkpointer, &thread, record).await;
            }
            while let Some(event) = stream.next().await {
                if let Some(record) = history::record(&event) {
                    history::keep(&checkpointer, &thread, record).await;
                }
                feed(&event);
            }
        });
    }

    /// Keeps the shape of `graph` for drawings of its runs.
    fn remember(&self, graph: &Graph) {
        if let Ok(mut shapes) = self.shapes.lock()
            && !shapes.contains_key(graph.id())
        {
            shapes.insert(graph.id().to_owned(), graph.shape());
        }
    }

    /// The shape of the graph `graph_id` (`name@hash`) of a run of `pipeline` in `tenant`: kept,
    /// else built again (a pipeline's, or an unchanged workflow file's); `None` when it cannot be.
    fn shape_of(&self, pipeline: &str, graph_id: &str, tenant: &str, thread: &str) -> Option<GraphShape> {
        if let Some(shape) = self.shapes.lock().ok().and_then(|s| s.get(graph_id).cloned()) {
            return Some(shape);
        }
        let nobody = Principal::new("", tenant, &[], &[]);
        let graph = if pipeline == "workflow" {
            let workflow = crate::workflow::find_by_graph(graph_id, &self.runtime.config)?;
            self.workflow(workflow, &nobody, thread).ok()?.graph().clone()
        } else {
            self.graph(pipeline, &nobody, thread).ok()?
        };
        // Another version of the pipeline's graph: its shape is not this run's.
        (graph.id() == graph_id).then(|| {
            self.remember(&graph);
            graph.shape()
        })
    }

    /// The `on_event` callback of a run: keeps the event, copies it to the subscribers, and
    /// forgets the run after `finished`.
    fn feeder(&self, thread: String) -> impl Fn(&Event) + Send + 'static {
        let live = self.live.clone();
        move |event: &Event| {
            let Ok(mut map) = live.lock() else { return };
            let finished = matches!(event, Event::Finished { .. });
            if let Some(entry) = map.get_mut(&thread) {
                entry.subscribers.retain(|s| s.send(event.clone()).is_ok());
                if !finished {
                    entry.events.push(event.clone());
                }
            }
            if finished {
                map.remove(&thread);
            }
        }
    }

    /// Who a run acts for: the recorded starter of a pipeline with a `starter_field` or of a
    /// workflow (a run without one, or with another tenant's, is refused rather than run as
    /// someone else); other pipelines act for the tenant.
    fn starter_of(&self, pipeline: &str, tenant: &str, checkpoint: &Checkpoint) -> Result<Principal, RunError> {
        let field = match pipeline {
            "workflow" => WORKFLOW_REQUESTER,
            other => match self.pipeline(other).and_then(|p| p.starter_field) {
                Some(field) => field,
                None => return Ok(Principal::new("", tenant, &[], &[])),
            },
        };
        let recorded = checkpoint.state.get(field).cloned().unwrap_or(Value::Null);
        match serde_json::from_value::<Principal>(recorded) {
            Ok(p) if p.tenant == tenant => Ok(p),
            _ => Err(RunError::Internal("the run has no starter of this tenant in its state".into())),
        }
    }

    /// The API name of the pipeline that wrote `checkpoint`.
    fn pipeline_of(&self, checkpoint: &Checkpoint) -> Option<&'static str> {
        self.pipeline_of_graph(&checkpoint.graph)
    }

    /// The API name of the pipeline of `graph` (`name@hash`).
    fn pipeline_of_graph(&self, graph: &str) -> Option<&'static str> {
        if graph.starts_with("workflow/") {
            return Some("workflow");
        }
        let graph = graph.split('@').next().unwrap_or_default();
        self.pipelines.iter().find(|p| p.graph == graph).map(|p| p.name)
    }
}

fn not_found(run_id: &str) -> RunError {
    RunError::NotFound(format!("no run `{run_id}`"))
}

/// A run's timing from its first and newest kept events (empty without history).
fn span_timing(
    first: Option<&bridle_core::checkpoint::RunEventRow>,
    last: Option<&bridle_core::checkpoint::RunEventRow>,
    status: ThreadStatus,
) -> Timing {
    match first.zip(last) {
        Some((first, last)) => history::timing(first, last, status),
        None => Timing::default(),
    }
}
