//! Graph runs started over HTTP: the pipeline registry, the runs in flight and their event
//! streams, all over the running [`Runtime`] (its checkpointer, hooks, session model, run
//! settings and decision log).
//!
//! A run's thread id is `{tenant}/{run_id}` with a server-made UUID as the run id, so every
//! lookup goes through the caller's tenant and another tenant's run id is simply unknown. While
//! a run is in flight its events are kept in memory and copied to every subscriber; once it has
//! finished, what remains is the checkpointer's latest checkpoint.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bridle_core::checkpoint::{Checkpoint, ThreadStatus};
use bridle_core::{Code, Rejection};
use bridle_runtime::graph::{Event, Graph};
use bridle_runtime::pipelines::analysis::{AnalysisOptions, Recorder, analysis_graph_recorded};
use bridle_runtime::runtime::Runtime;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The pipelines a run may name: API name → graph name (the part of a checkpoint's `graph`
/// before `@`).
pub const PIPELINES: [(&str, &str); 1] = [("analysis", "seed001-analysis")];

/// A run in flight: the events so far and who listens.
#[derive(Default)]
struct Live {
    events: Vec<Event>,
    subscribers: Vec<mpsc::UnboundedSender<Event>>,
}

type LiveMap = Arc<Mutex<HashMap<String, Live>>>;

/// Why a run could not be started, read or resumed.
#[derive(Debug)]
pub enum RunError {
    /// Unknown run (or another tenant's).
    NotFound(String),
    /// Refused with a stable code (`unknown_interrupt`, `stale_checkpoint`, `bad_request`).
    Refused(Rejection),
    /// A store or the runtime failed.
    Internal(String),
}

/// Where a run stands, from the checkpointer and the runs in flight.
#[derive(Debug, Clone)]
pub struct RunView {
    /// The run id (without the tenant).
    pub run_id: String,
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

/// The runs service `AppState::with_runs` installs.
pub struct Runs {
    runtime: Arc<Runtime>,
    live: LiveMap,
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
    /// Runs over `runtime`; background runs are drained by [`Runtime::drain`].
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Self { runtime, live: Arc::default() }
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }

    /// The graph of `pipeline` for `tenant`: the runtime's session model, analysts recorded in
    /// the tenant's decision log.
    fn graph(&self, pipeline: &str, tenant: &str) -> Result<Graph, RunError> {
        match pipeline {
            "analysis" => {
                let recorder = Recorder { log: self.runtime.stores.decisions.clone(), tenant: tenant.to_owned() };
                analysis_graph_recorded(self.runtime.session_llm(), AnalysisOptions::default(), recorder)
                    .map_err(|e| RunError::Internal(e.clone()))
            }
            other => Err(RunError::Refused(Rejection::new(Code::BadRequest, format!("no pipeline `{other}`")))),
        }
    }

    /// Starts `pipeline` on `input` for `tenant` in the background; returns the run id.
    pub fn start(&self, tenant: &str, pipeline: &str, input: Value) -> Result<String, RunError> {
        let graph = self.graph(pipeline, tenant)?;
        let run_id = uuid::Uuid::new_v4().to_string();
        let thread = thread_id(tenant, &run_id);
        self.track(&thread)?;
        let stream = graph.stream(self.runtime.run_config(&thread), input);
        self.runtime.spawn_stream(stream, self.feeder(thread));
        Ok(run_id)
    }

    /// Answers `interrupt_id` of the caller's run with `value`; the rest runs in the background.
    pub async fn resume(&self, tenant: &str, run_id: &str, interrupt_id: &str, value: Value) -> Result<(), RunError> {
        let thread = thread_id(tenant, run_id);
        let checkpoint = self.latest(&thread).await?.ok_or_else(|| not_found(run_id))?;
        let pending = checkpoint.status == ThreadStatus::Interrupted;
        if !pending || !checkpoint.interrupts.iter().any(|i| i.id == interrupt_id) {
            return Err(RunError::Refused(Rejection::new(
                Code::UnknownInterrupt,
                format!("run `{run_id}` has no pending interrupt `{interrupt_id}`"),
            )));
        }
        let pipeline = pipeline_of(&checkpoint).ok_or_else(|| not_found(run_id))?;
        let graph = self.graph(pipeline, tenant)?;
        self.track(&thread)?;
        let stream = graph.resume(self.runtime.run_config(&thread), interrupt_id, value);
        self.runtime.spawn_stream(stream, self.feeder(thread));
        Ok(())
    }

    /// Where the caller's run stands.
    pub async fn view(&self, tenant: &str, run_id: &str) -> Result<RunView, RunError> {
        let thread = thread_id(tenant, run_id);
        let live = self.is_live(&thread);
        match self.latest(&thread).await? {
            Some(checkpoint) => Ok(RunView {
                run_id: run_id.to_owned(),
                pipeline: pipeline_of(&checkpoint).unwrap_or("unknown").to_owned(),
                status: self.status_of(&thread, &checkpoint),
                steps: checkpoint.step,
                interrupts: serde_json::to_value(&checkpoint.interrupts).map_err(|e| internal(&e))?,
                state: checkpoint.state,
                error: checkpoint.error,
            }),
            // Started, no checkpoint written yet.
            None if live => Ok(RunView {
                run_id: run_id.to_owned(),
                pipeline: String::new(),
                status: ThreadStatus::Running,
                steps: 0,
                interrupts: json!([]),
                state: json!({}),
                error: None,
            }),
            None => Err(not_found(run_id)),
        }
    }

    /// The events of the caller's run: those so far and the rest as they come while it runs;
    /// for a finished run, one `finished` event built from its latest checkpoint.
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
}

fn not_found(run_id: &str) -> RunError {
    RunError::NotFound(format!("no run `{run_id}`"))
}

/// The API name of the pipeline that wrote `checkpoint`.
fn pipeline_of(checkpoint: &Checkpoint) -> Option<&'static str> {
    let graph = checkpoint.graph.split('@').next().unwrap_or_default();
    PIPELINES.iter().find(|(_, g)| *g == graph).map(|(name, _)| *name)
}
