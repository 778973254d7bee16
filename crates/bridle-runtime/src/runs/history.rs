//! A run's kept history: the events of every graph run recorded as server records through the
//! checkpointer (`Checkpointer::append_run_event`), so a running, paused or finished run shows
//! what happened (nodes with their durations, pauses and who answered them, how it ended), on
//! any replica and after a restart; and what the run view derives from them: the state of each
//! node of the graph, start time, starter and duration. Tool calls come from the audit log (the
//! gate's records), which also makes a run known only by its calls (a caller-chosen `run_id` of
//! `POST /v1/calls`) viewable.
//!
//! Bounds: a run keeps its first event and its newest [`KEEP_EVENTS`]` - 1`; the history of a run
//! idle for [`RETENTION`] is dropped when a later run starts. Each kept string is cut at
//! [`MAX_TEXT`] characters; node updates, custom events and whole states are not kept (the state
//! is the checkpoint's).

use std::sync::Arc;

use bridle_core::Principal;
use bridle_core::checkpoint::{InterruptRecord, RunEventRow, ThreadStatus};
use bridle_core::ports::{AuditLog, Checkpointer};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::graph::{Event, GraphShape};

/// Events kept per run (its first one and the newest `KEEP_EVENTS - 1`).
pub const KEEP_EVENTS: u32 = 500;
/// How long the history of a run with no new event is kept.
pub const RETENTION: time::Duration = time::Duration::days(30);
/// Longest kept string (messages, reasons, answers).
pub const MAX_TEXT: usize = 300;
/// How many of the tenant's newest audit events are searched for a run's tool calls.
pub const AUDIT_WINDOW: u64 = 10_000;
/// Tool calls and approval events shown per run.
pub const MAX_CALLS: usize = 200;

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> i64 {
    ms_of(OffsetDateTime::now_utc())
}

fn ms_of(at: OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// RFC 3339 of a time in milliseconds.
pub(crate) fn rfc3339(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

fn cut(text: &str) -> String {
    if text.chars().count() <= MAX_TEXT {
        text.to_owned()
    } else {
        text.chars().take(MAX_TEXT).collect::<String>() + "…"
    }
}

/// The kind of pause an interrupt is (`choose_candidate`, `approve_plan`, …), from its payload.
fn kind_of(interrupt: &InterruptRecord) -> String {
    let p = &interrupt.payload;
    p.get("kind").or_else(|| p.get("type")).and_then(Value::as_str).map_or_else(|| interrupt.node.clone(), cut)
}

/// The record kept for a graph event; `None` for those not kept (updates, custom events, step
/// ends, hook failures).
pub(crate) fn record(event: &Event) -> Option<Value> {
    let value = match event {
        Event::RunStarted { step, resumed, .. } => json!({"event": "run_started", "step": step, "resumed": resumed}),
        Event::NodeEnter { step, node, .. } => json!({"event": "node_enter", "step": step, "node": node}),
        Event::NodeExit { step, node, duration_us, degraded, .. } => json!({
            "event": "node_exit", "step": step, "node": node, "duration_us": duration_us, "degraded": degraded,
        }),
        Event::NodeError { step, node, error, attempt, retrying, .. } => json!({
            "event": "node_error", "step": step, "node": node, "attempt": attempt, "retrying": retrying,
            "error": {"code": error.code.as_str(), "message": cut(&error.message)},
        }),
        Event::Interrupted { interrupts } => json!({
            "event": "interrupted",
            "interrupts": interrupts.iter().map(|i| json!({"id": i.id, "node": i.node, "kind": kind_of(i)})).collect::<Vec<_>>(),
        }),
        Event::Finished { outcome } => json!({
            "event": "finished", "status": outcome.status.as_str(), "steps": outcome.steps,
            "error": outcome.error.as_ref().map(|e| json!({"code": e.code.as_str(), "message": cut(&e.message)})),
        }),
        Event::Update { .. } | Event::Custom { .. } | Event::StepDone { .. } | Event::HookFailed { .. } => return None,
    };
    Some(value)
}

/// The first record of a run: who started it, of which pipeline.
pub(crate) fn started(by: &Principal, pipeline: &str) -> Value {
    json!({"event": "started", "by": by.subject, "pipeline": pipeline})
}

/// The record of an answer to a pause: who, to which interrupt, and what (in short).
pub(crate) fn answered(by: &Principal, interrupt: &InterruptRecord, value: &Value) -> Value {
    let mut answer = Map::new();
    if let Some(approved) = value.get("approved").and_then(Value::as_bool) {
        answer.insert("approved".into(), Value::Bool(approved));
    }
    for key in ["reason", "cause"] {
        if let Some(text) = value.get(key).and_then(Value::as_str) {
            answer.insert(key.into(), Value::String(cut(text)));
        }
    }
    if let Some(choice) = value.get("choice").and_then(Value::as_u64) {
        answer.insert("choice".into(), json!(choice));
    }
    json!({
        "event": "answered", "by": by.subject, "interrupt_id": interrupt.id, "node": interrupt.node,
        "kind": kind_of(interrupt), "answer": answer,
    })
}

/// Keeps `body` (an event record) in the history of `thread` with the current time; a store
/// failure is logged, never fatal to the run.
pub(crate) async fn keep(checkpointer: &Arc<dyn Checkpointer>, thread: &str, mut body: Value) {
    let at = now_ms();
    if let Value::Object(fields) = &mut body {
        fields.insert("at".into(), Value::String(rfc3339(at)));
    }
    if let Err(e) = checkpointer.append_run_event(thread, at, &body, KEEP_EVENTS).await {
        tracing::warn!(thread, error = %e, "run event not kept");
    }
}

/// Drops the histories idle past [`RETENTION`] (when a run starts); a failure is logged.
pub(crate) async fn prune(checkpointer: &Arc<dyn Checkpointer>) {
    let before = ms_of(OffsetDateTime::now_utc() - RETENTION);
    if let Err(e) = checkpointer.prune_run_events(before).await {
        tracing::warn!(error = %e, "old run histories not pruned");
    }
}

/// When a run started, who started it and how long it has run (until now while it runs or
/// waits, else until its last event), from its kept history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timing {
    /// RFC 3339.
    pub started_at: Option<String>,
    /// The subject who started it.
    pub starter: Option<String>,
    /// Milliseconds.
    pub duration_ms: Option<u64>,
}

/// The timing of a run from its first and newest kept events.
pub(crate) fn timing(first: &RunEventRow, last: &RunEventRow, status: ThreadStatus) -> Timing {
    let open = matches!(status, ThreadStatus::Running | ThreadStatus::Interrupted);
    let end = if open { now_ms() } else { last.at_ms };
    Timing {
        started_at: Some(rfc3339(first.at_ms)),
        starter: first.body.get("by").and_then(Value::as_str).map(str::to_owned),
        duration_ms: u64::try_from(end.saturating_sub(first.at_ms)).ok(),
    }
}

/// The graph with each node's state — `done`, `running`, `paused`, `failed` or `not_reached` —
/// from the kept events, the run's status and its pending interrupts.
pub(crate) fn drawing(
    shape: &GraphShape,
    events: &[Value],
    status: ThreadStatus,
    pending: &[InterruptRecord],
) -> Value {
    let mut states: std::collections::HashMap<&str, &'static str> = std::collections::HashMap::new();
    for e in events {
        let node = e.get("node").and_then(Value::as_str).unwrap_or_default();
        match e.get("event").and_then(Value::as_str).unwrap_or_default() {
            "node_enter" | "answered" => {
                states.insert(node, "running");
            }
            "node_exit" => {
                states.insert(node, "done");
            }
            "node_error" if e.get("retrying") == Some(&Value::Bool(false)) => {
                states.insert(node, "failed");
            }
            "interrupted" => {
                for i in e.get("interrupts").and_then(Value::as_array).into_iter().flatten() {
                    if let Some(n) = i.get("node").and_then(Value::as_str) {
                        states.insert(n, "paused");
                    }
                }
            }
            _ => {}
        }
    }
    if status == ThreadStatus::Interrupted {
        for i in pending {
            states.insert(i.node.as_str(), "paused");
        }
    }
    let nodes: Vec<Value> = shape
        .nodes
        .iter()
        .map(|n| {
            let state = match states.get(n.as_str()).copied() {
                // A node still marked running in a run that stopped: it stopped there.
                Some("running") if matches!(status, ThreadStatus::Failed | ThreadStatus::Cancelled) => "failed",
                Some("running") if status == ThreadStatus::Interrupted => "paused",
                Some("running") if status == ThreadStatus::Done => "done",
                Some(s) => s,
                None => "not_reached",
            };
            json!({"id": n, "state": state})
        })
        .collect();
    let edges: Vec<Value> = shape.edges.iter().map(|(from, to)| json!({"from": from, "to": to})).collect();
    json!({"nodes": nodes, "edges": edges})
}

/// A graph shape from the nodes a history names, in order of first appearance, each leading
/// to the next: for a run whose graph cannot be built here any more.
pub(crate) fn shape_from(events: &[Value]) -> GraphShape {
    let mut nodes: Vec<String> = Vec::new();
    for n in events.iter().filter_map(|e| e.get("node").and_then(Value::as_str)) {
        if !nodes.iter().any(|m| m == n) {
            nodes.push(n.to_owned());
        }
    }
    let edges = nodes.windows(2).filter_map(|w| Some((w.first()?.clone(), w.get(1)?.clone()))).collect();
    GraphShape { nodes, edges }
}

/// The tool calls and approval events of `run_id` (as the gate recorded it) among the
/// tenant's newest [`AUDIT_WINDOW`] audit events, oldest first, at most [`MAX_CALLS`] (the
/// newest): when, what, the verdict in an operator's words, who acted and who approved.
pub(crate) async fn calls(audit: &dyn AuditLog, tenant: &str, run_id: &str) -> Result<Vec<Value>, String> {
    let heads = audit.heads().await.map_err(|e| e.to_string())?;
    let Some(head) = heads.iter().find(|h| h.tenant == tenant).map(|h| h.seq) else { return Ok(Vec::new()) };
    let mut after = head.saturating_sub(AUDIT_WINDOW);
    let mut found = Vec::new();
    while after < head {
        let page = audit.events(tenant, after, 1000).await.map_err(|e| e.to_string())?;
        let Some(last) = page.last().map(|e| e.seq) else { break };
        after = last;
        for event in page.iter().filter(|e| e.record.run_id == run_id) {
            let r = &event.record;
            found.push(json!({
                "seq": event.seq,
                "at": r.at.format(&Rfc3339).unwrap_or_default(),
                "kind": r.kind,
                "tool": r.tool,
                "display": r.display(),
                "decision": r.decision,
                "code": r.code,
                "subject": r.subject,
                "agent": r.versions.agent_id,
                "approval_id": r.approval_id,
                "approver": r.approver,
            }));
        }
    }
    let skip = found.len().saturating_sub(MAX_CALLS);
    Ok(found.split_off(skip))
}
