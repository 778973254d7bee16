//! The nodes of a compiled workflow: each checks the workflow's deadline first, then does its
//! kind's work and writes its output (a parallel branch writes into its parallel node's output).
//! Conditions and loops write their choice under `_route`, which the graph's routers read.

use std::sync::Arc;

use bridle_core::approval::ApprovalStatus;
use bridle_core::guard::sanitize::Channel;
use bridle_core::workflow::{AiNode, Next, Node, NodeKind, OnRefused, Reduce, ToolNode};
use bridle_core::{Code, Rejection, RunContext};
use serde_json::{Map, Value, json};

use super::Shared;
use crate::agent::{Agent, CallOptions, DecisionContext};
use crate::gate::{CallOutcome, CallRequest, Verdict};
use crate::graph::tool::call_tool;
use crate::graph::{NodeContext, NodeError, State, Update};
use crate::llm::Message;

/// Internal state keys: the routers' choices, loop counters, visits per node.
pub(super) const ROUTE: &str = "_route";
pub(super) const LOOPS: &str = "_loops";
pub(super) const VISITS: &str = "_visits";

/// Most times a tool node re-enters its approval pause while the request is still pending.
const MAX_WAITS: u32 = 20;

fn failed(code: Code, message: impl Into<String>) -> NodeError {
    NodeError::rejected(Rejection::new(code, message))
}

fn counter(s: &State, field: &str, node: &str) -> u64 {
    s.get(field).and_then(|m| m.get(node)).and_then(Value::as_u64).unwrap_or(0)
}

fn target(next: &Next) -> Value {
    match next {
        Next::Node(n) => json!(n),
        Next::End => json!(bridle_core::workflow::END),
    }
}

/// Runs one node.
pub(super) async fn run(shared: Arc<Shared>, node: Arc<Node>, s: State, ctx: NodeContext) -> Result<Update, NodeError> {
    shared.check_deadline(ctx.thread_id())?;
    let visits = counter(&s, VISITS, &node.name) + 1;
    let update = Update::new().set(VISITS, json!({ node.name.as_str(): visits }));
    match &node.kind {
        NodeKind::Tool(tool) => {
            let value = tool_call(&shared, &node, tool, &s, &ctx).await?;
            Ok(write(&shared, &node, update, value))
        }
        NodeKind::AiAnalysis(ai) => {
            let turn = u32::try_from(visits).unwrap_or(u32::MAX);
            let value = analyse(&shared, &node, ai, turn, &s, &ctx).await?;
            Ok(write(&shared, &node, update, value))
        }
        NodeKind::Condition { expr, then, otherwise } => {
            let holds = expr
                .eval_bool(s.as_map())
                .map_err(|e| failed(Code::NodeFailed, format!("condition `{}`: {e}", node.name)))?;
            let to = if holds { then } else { otherwise };
            Ok(update.set(ROUTE, json!({ node.name.as_str(): target(to) })))
        }
        NodeKind::Loop(l) => {
            let done = counter(&s, LOOPS, &node.name);
            let again = l
                .condition
                .eval_bool(s.as_map())
                .map_err(|e| failed(Code::NodeFailed, format!("loop `{}`: {e}", node.name)))?;
            if !again {
                let next = node.next.clone().unwrap_or(Next::End);
                return Ok(update
                    .set(LOOPS, json!({ node.name.as_str(): 0 }))
                    .set(ROUTE, json!({ node.name.as_str(): target(&next) })));
            }
            if done >= u64::from(l.max_iterations) {
                return Err(NodeError::rejected(
                    Rejection::new(
                        Code::MaxIterationsExceeded,
                        format!(
                            "loop `{}` ran {} times and its condition `{}` still holds",
                            node.name,
                            l.max_iterations,
                            l.condition.source()
                        ),
                    )
                    .with_detail(json!({"node": node.name, "max_iterations": l.max_iterations})),
                ));
            }
            ctx.emit("loop_iteration", json!({"node": node.name, "iteration": done + 1, "max": l.max_iterations}));
            Ok(update
                .set(LOOPS, json!({ node.name.as_str(): done + 1 }))
                .set(ROUTE, json!({ node.name.as_str(): l.body })))
        }
        NodeKind::Parallel { branches, .. } => {
            ctx.emit("parallel_fan_out", json!({"node": node.name, "branches": branches}));
            Ok(update)
        }
        NodeKind::Approval { message, payload, output } => {
            let mut data = Map::new();
            for (field, expr) in payload {
                let v = expr.eval(s.as_map()).map_err(|e| {
                    failed(Code::NodeFailed, format!("approval `{}` payload `{field}`: {e}", node.name))
                })?;
                data.insert(field.clone(), v);
            }
            let answer = ctx.interrupt(json!({
                "kind": "workflow_approval",
                "workflow": shared.workflow.name,
                "node": node.name,
                "message": message,
                "data": data,
            }))?;
            ctx.emit("approval_answered", json!({"node": node.name}));
            Ok(match output {
                Some(key) => update.set(key, answer),
                None => update,
            })
        }
    }
}

/// Writes a tool or model result: to the node's output, or into its parallel node's output.
fn write(shared: &Shared, node: &Node, update: Update, value: Value) -> Update {
    if let Some(parallel) = &node.branch_of
        && let Some(NodeKind::Parallel { output, reduce, .. }) = shared.workflow.nodes.get(parallel).map(|p| &p.kind)
    {
        return match reduce {
            Reduce::Merge => update.set(output, json!({ node.name.as_str(): value })),
            Reduce::Append => update.set(output, vec![value]),
        };
    }
    let output = match &node.kind {
        NodeKind::Tool(t) => t.output.as_ref(),
        NodeKind::AiAnalysis(a) => a.output.as_ref(),
        _ => None,
    };
    match output {
        Some(key) => update.set(key, value),
        None => update,
    }
}

fn run_context(s: &State, ctx: &NodeContext) -> RunContext {
    let incident: String = s.get_as("incident").unwrap_or_default();
    RunContext::new(ctx.thread_id(), &incident)
}

fn executed(outcome: &CallOutcome, result: &Value) -> Value {
    json!({
        "status": "executed",
        "tool": outcome.tool,
        "result": result,
        "call_id": outcome.call_id,
        "job_id": outcome.job_id,
        "approval_id": outcome.approval_id,
    })
}

fn rejection_of(outcome: &CallOutcome) -> Rejection {
    match &outcome.verdict {
        Verdict::Rejected { rejection } => rejection.clone(),
        _ => Rejection::new(outcome.code().unwrap_or(Code::NodeFailed), "the call was not executed"),
    }
}

/// A refusal: the run fails with the gate's code, or the refusal becomes the output.
fn refused(tool: &ToolNode, outcome: &CallOutcome) -> Result<Value, NodeError> {
    let rejection = rejection_of(outcome);
    match tool.on_refused {
        OnRefused::Fail => Err(NodeError::rejected(rejection)),
        OnRefused::Continue => Ok(json!({
            "status": "refused",
            "tool": outcome.tool,
            "code": rejection.code,
            "message": rejection.message,
        })),
    }
}

/// The tool call: arguments from the literals and the CEL bindings, through the gate with the
/// task's key; a call waiting for approval pauses the run and, once resumed, reads the desk
/// (granted → executed once under `{task}/execute`; rejected or expired → written as such).
async fn tool_call(
    shared: &Shared,
    node: &Node,
    tool: &ToolNode,
    s: &State,
    ctx: &NodeContext,
) -> Result<Value, NodeError> {
    let mut arguments: Map<String, Value> = tool.arguments.clone().into_iter().collect();
    for (param, expr) in &tool.bind {
        let v = expr
            .eval(s.as_map())
            .map_err(|e| failed(Code::NodeFailed, format!("tool `{}` argument `{param}`: {e}", node.name)))?;
        arguments.insert(param.clone(), v);
    }
    let arguments = Value::Object(arguments);
    let key = ctx.idempotency_key();
    let run = run_context(s, ctx);
    let request = CallRequest::new(&tool.tool, arguments.clone()).with_key(&format!("{key}/call"));
    let outcome = call_tool(&shared.gate, ctx, &shared.principal, &run, request).await?;
    if let Some(result) = outcome.result() {
        return Ok(executed(&outcome, result));
    }
    if outcome.code() != Some(Code::ApprovalRequired) {
        return refused(tool, &outcome);
    }
    let id = outcome.approval_id.clone().unwrap_or_default();
    for _ in 0..MAX_WAITS {
        ctx.interrupt(json!({
            "kind": "approve_plan",
            "workflow": shared.workflow.name,
            "node": node.name,
            "approval_id": id,
            "tool": tool.tool,
            "arguments": arguments,
            "plan_hash": outcome.plan_hash,
            "level": outcome.level,
            "why": outcome.approval_reasons(),
        }))?;
        // The desk decides, never the resume value.
        let request = shared
            .gate
            .stores()
            .approvals
            .get_request(&shared.principal.tenant, &id)
            .await
            .map_err(|e| NodeError::transient(Code::StateUnavailable, format!("approval desk: {e}")))?;
        let Some(request) = request else {
            return Err(failed(Code::NotFound, format!("approval `{id}` is not on the desk")));
        };
        match request.status {
            ApprovalStatus::Pending if request.expires_at <= shared.gate.now() => {
                return Ok(json!({"status": "expired", "tool": tool.tool, "approval_id": id}));
            }
            ApprovalStatus::Pending => {}
            ApprovalStatus::Rejected => {
                return Ok(json!({
                    "status": "rejected",
                    "tool": tool.tool,
                    "approval_id": id,
                    "reason": request.rejection_reason,
                }));
            }
            ApprovalStatus::Granted | ApprovalStatus::Consumed => {
                let call = CallRequest::new(&tool.tool, arguments.clone())
                    .with_approval(&id)
                    .with_key(&format!("{key}/execute"));
                let outcome = call_tool(&shared.gate, ctx, &shared.principal, &run, call).await?;
                return match outcome.result() {
                    Some(result) => Ok(executed(&outcome, result)),
                    None => refused(tool, &outcome),
                };
            }
        }
    }
    Err(failed(Code::ApprovalRequired, format!("tool `{}` is still waiting for a decision", node.name)))
}

/// The model call: parameters through the input guard (workflow channel limit and detector),
/// the state inputs through the detector; the answer validated against the output schema (one
/// retry), recorded as a decision; an invalid answer after the retry fails the node.
async fn analyse(
    shared: &Shared,
    node: &Node,
    ai: &AiNode,
    turn: u32,
    s: &State,
    ctx: &NodeContext,
) -> Result<Value, NodeError> {
    for (param, value) in &ai.parameters {
        let text = match value {
            Value::String(t) => t.clone(),
            other => other.to_string(),
        };
        shared.guard.check(&format!("parameters.{param}"), &text, Channel::Workflow).map_err(NodeError::rejected)?;
    }
    let inputs: Map<String, Value> =
        ai.inputs.iter().map(|k| (k.clone(), s.get(k).cloned().unwrap_or(Value::Null))).collect();
    let inputs = Value::Object(inputs);
    shared.guard.check("inputs", &inputs.to_string(), Channel::Document).map_err(NodeError::rejected)?;
    let agent: &Agent = shared
        .agents
        .get(&node.name)
        .ok_or_else(|| NodeError::fatal(format!("no agent compiled for node `{}`", node.name)))?;
    let timeout = shared.remaining(ctx.thread_id()).map_or(shared.llm_timeout, |left| left.min(shared.llm_timeout));
    let options = CallOptions { timeout: Some(timeout), cancel: None };
    let message = json!({"parameters": ai.parameters, "inputs": inputs}).to_string();
    let out = agent
        .call_with(shared.client.as_ref(), turn, vec![Message::user(message)], &options)
        .await
        .map_err(|e| failed(e.code(), format!("ai_analysis `{}`: {e}", node.name)))?;
    let record = out.decision_record(&DecisionContext {
        decision_id: format!("{}/{}", ctx.idempotency_key(), ai.agent),
        pipeline_run_id: ctx.thread_id().to_owned(),
        tenant: shared.principal.tenant.clone(),
        created_at: shared.gate.now(),
    });
    crate::agent::record_once(shared.gate.stores().decisions.as_ref(), &record)
        .await
        .map_err(|e| NodeError::transient(Code::StateUnavailable, format!("decision log: {e}")))?;
    if out.is_degraded {
        return Err(failed(
            Code::LlmInvalidOutput,
            format!(
                "ai_analysis `{}`: no valid answer after {} attempts: {}",
                node.name,
                out.attempts,
                out.errors.join("; ")
            ),
        ));
    }
    ctx.emit("analysis_complete", json!({"node": node.name, "agent": ai.agent, "attempts": out.attempts}));
    Ok(out.value)
}
