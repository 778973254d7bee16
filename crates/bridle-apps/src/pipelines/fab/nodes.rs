//! The fab pipeline's nodes. Each writes `outcome` when the run must end; the routes in
//! `fab.rs` send a run with an outcome to `END`.

use std::sync::Arc;

use bridle_core::approval::ApprovalStatus;
use bridle_core::level::CallSignals;
use bridle_core::{Code, Rejection, RunContext};
use bridle_runtime::agent::{AgentOutput, CallOptions, DecisionContext};
use bridle_runtime::gate::{CallOutcome, CallRequest, Verdict};
use bridle_runtime::graph::tool::call_tool;
use bridle_runtime::graph::{NodeContext, NodeError, State, Update};
use bridle_runtime::llm::{LlmError, Message};
use serde_json::{Value, json};

use super::agents::{self, ADVISOR, Checks, DIAGNOSTICIAN};
use super::{Fab, MAX_WAITS};
use crate::diagnosis::{self, Candidate, Triage};

/// The run context of the pipeline's gate calls: the thread is the run, the incident the input's.
fn run_context(s: &State, ctx: &NodeContext) -> RunContext {
    let incident: String = s.get_as("incident").unwrap_or_default();
    RunContext::new(ctx.thread_id(), &incident)
}

fn decision_context(fab: &Fab, ctx: &NodeContext, agent: &str) -> DecisionContext {
    DecisionContext {
        decision_id: format!("{}/{agent}", ctx.idempotency_key()),
        pipeline_run_id: ctx.thread_id().to_owned(),
        tenant: fab.principal.tenant.clone(),
        created_at: time::OffsetDateTime::now_utc(),
    }
}

/// The call on `agent`'s behalf when the configuration registers agents (`[[agents]]`); with
/// none registered, calls name no agent, as before the registry existed.
fn on_behalf(fab: &Fab, request: CallRequest, agent: &str) -> CallRequest {
    if fab.gate.config().agents.is_empty() { request } else { request.for_agent(agent) }
}

/// Stores a decision record; one recorded by an earlier attempt of the task is kept.
async fn keep(fab: &Fab, record: &bridle_core::decision::DecisionRecord) -> Result<(), NodeError> {
    let mut record = record.clone();
    fab.gate.stamp_decision(&mut record);
    bridle_runtime::agent::record_once(fab.gate.stores().decisions.as_ref(), &record)
        .await
        .map_err(|e| NodeError::transient(Code::StateUnavailable, format!("decision log: {e}")))
}

/// Asks an agent; a model failure is `Err` with its code, an invalid answer after the retry is
/// `Ok` with `is_degraded` — both mean the rules answer instead.
async fn ask(
    fab: &Fab,
    agent: &bridle_runtime::agent::Agent,
    turn: u32,
    input: &Value,
) -> Result<AgentOutput, LlmError> {
    let options = CallOptions { timeout: Some(fab.options.llm_timeout), cancel: None };
    agent.call_with(fab.client.as_ref(), turn, vec![Message::user(input.to_string())], &options).await
}

fn failure(result: &Result<AgentOutput, LlmError>) -> Option<String> {
    match result {
        Ok(out) if !out.is_degraded => None,
        Ok(out) => Some(format!("{}: invalid output after {} attempts", Code::LlmInvalidOutput.as_str(), out.attempts)),
        Err(e) => Some(format!("{}: {e}", e.code().as_str())),
    }
}

/// Diagnostician: candidates from the model, else from the first matching rule (degraded).
pub(super) async fn diagnose(fab: Arc<Fab>, s: State, ctx: NodeContext) -> Result<Update, NodeError> {
    let anomaly = s.get("anomaly").cloned().unwrap_or(Value::Null);
    let input = json!({"anomaly": anomaly});
    let result = ask(&fab, &fab.diagnostician, 1, &input).await;
    let failed = failure(&result);
    let (candidates, degraded, source) = match (&result, &failed) {
        (Ok(out), None) => {
            let list: Vec<Candidate> =
                serde_json::from_value(out.value.get("candidates").cloned().unwrap_or(Value::Null)).unwrap_or_default();
            (list, false, json!("model"))
        }
        _ => match diagnosis::evaluate(&fab.options.fallback, &anomaly) {
            Some(rule) => (rule.candidates, true, json!({"rule": rule.rule})),
            None => (Vec::new(), true, Value::Null),
        },
    };
    let top = candidates.iter().map(|c| c.confidence).fold(0.0_f64, f64::max);
    let checks =
        Checks { schema_valid: failed.is_none(), params_in_range: None, injection_detected: false, confidence: top };
    let verdict = if degraded { "degraded" } else { "accepted" };
    let fallback = json!({"candidates": candidates, "source": source});
    let record = agents::record(
        result.as_ref().ok(),
        DIAGNOSTICIAN,
        &input,
        &fallback,
        checks,
        verdict,
        &decision_context(&fab, &ctx, DIAGNOSTICIAN),
    );
    keep(&fab, &record).await?;
    ctx.emit("diagnosis_complete", json!({"candidates": candidates.len(), "degraded": degraded, "source": source}));
    let mut update = Update::new().set("candidates", &candidates).set("degraded", degraded);
    if let Some(why) = failed {
        update = update.set("errors", vec![format!("{DIAGNOSTICIAN}: {why}")]);
    }
    if candidates.is_empty() {
        update = update.set(
            "outcome",
            json!({"status": "inconclusive", "reason": "the model gave no diagnosis and no fallback rule matched"}),
        );
    }
    Ok(update)
}

/// Triage by code: inconclusive, a human's choice among near-equal causes, or the clear top.
pub(super) async fn triage(fab: Arc<Fab>, s: State, ctx: NodeContext) -> Result<Update, NodeError> {
    let candidates: Vec<Candidate> = s.get_as("candidates").unwrap_or_default();
    let degraded = s.get("degraded").and_then(Value::as_bool).unwrap_or(false);
    let by = if degraded { "rules" } else { "model" };
    match diagnosis::triage(&candidates, &fab.options.diagnosis) {
        Triage::Inconclusive { top_confidence } => Ok(Update::new().set(
            "outcome",
            json!({
                "status": "inconclusive",
                "top_confidence": top_confidence,
                "threshold": fab.options.diagnosis.inconclusive_below,
            }),
        )),
        Triage::Proceed { chosen } => Ok(Update::new().set("diagnosis", diagnosis_value(&chosen, by, 1))),
        Triage::Choose { options } => {
            let mut problem = Value::Null;
            for _ in 0..MAX_WAITS {
                let answer = ctx.interrupt(json!({
                    "kind": "choose_candidate",
                    "equipment": s.get("anomaly").and_then(|a| a.get("equipment")),
                    "options": options,
                    "problem": problem,
                }))?;
                let cause = answer.get("cause").and_then(Value::as_str).unwrap_or_default();
                if let Some(chosen) = options.iter().find(|o| o.cause == cause) {
                    ctx.emit("candidate_chosen", json!({"cause": cause, "options": options.len()}));
                    return Ok(Update::new().set("diagnosis", diagnosis_value(chosen, "operator", options.len())));
                }
                problem = json!(format!("`{cause}` is not one of the offered causes; answer {{\"cause\": …}}"));
            }
            Err(NodeError::rejected(Rejection::new(Code::HumanChoiceRequired, "no valid choice among the candidates")))
        }
    }
}

fn diagnosis_value(c: &Candidate, chosen_by: &str, options: usize) -> Value {
    json!({
        "cause": c.cause,
        "confidence": c.confidence,
        "evidence": c.evidence,
        "chosen_by": chosen_by,
        "options": options,
    })
}

/// Reads the equipment's running recipe through the gate (the reader identity).
pub(super) async fn read_recipe(fab: Arc<Fab>, s: State, ctx: NodeContext) -> Result<Update, NodeError> {
    let equipment = s.get("anomaly").and_then(|a| a.get("equipment")).cloned().unwrap_or(Value::Null);
    let request = on_behalf(&fab, CallRequest::new("get_recipe", json!({"equipment": equipment})), ADVISOR);
    let outcome = call_tool(&fab.gate, &ctx, &fab.principal, &run_context(&s, &ctx), request).await?;
    Ok(match outcome.result() {
        Some(recipe) => Update::new().set("recipe", recipe),
        None => Update::new().set("errors", vec![format!("get_recipe: {}", code_of(&outcome))]),
    })
}

fn code_of(outcome: &CallOutcome) -> &'static str {
    outcome.code().map_or("ok", Code::as_str)
}

/// Advisor: one action from the model, else the matching rule's action (degraded).
pub(super) async fn advise(fab: Arc<Fab>, s: State, ctx: NodeContext) -> Result<Update, NodeError> {
    let round = u32::try_from(s.int("round").max(1)).unwrap_or(1);
    let input = json!({
        "anomaly": s.get("anomaly"),
        "diagnosis": s.get("diagnosis"),
        "recipe": s.get("recipe"),
        "rejected_before": s.get("rejections"),
    });
    let result = ask(&fab, &fab.advisor, round, &input).await;
    let failed = failure(&result);
    let advice = match (&result, &failed) {
        (Ok(out), None) => {
            let mut a = out.value.clone();
            if let Value::Object(m) = &mut a {
                m.insert("source".to_owned(), json!("model"));
                m.insert("degraded".to_owned(), json!(false));
            }
            Some(a)
        }
        _ => {
            s.get("anomaly").and_then(|anomaly| diagnosis::evaluate(&fab.options.fallback, anomaly)).and_then(|rule| {
                let action = rule.action?;
                Some(json!({
                    "action_id": action.tool,
                    "parameters": action.arguments,
                    "confidence": Value::Null,
                    "reasoning": format!("fallback rule `{}` (the model failed)", rule.rule),
                    "source": {"rule": rule.rule},
                    "degraded": true,
                }))
            })
        }
    };
    // The record is finished by `propose`, once the gate has judged the parameters.
    let record = agents::record(
        result.as_ref().ok(),
        ADVISOR,
        &input,
        advice.as_ref().unwrap_or(&Value::Null),
        Checks { schema_valid: failed.is_none(), ..Checks::default() },
        "proposed",
        &decision_context(&fab, &ctx, ADVISOR),
    );
    let mut update = Update::new().set(
        "advice",
        advice.clone().map(|mut a| {
            if let Value::Object(m) = &mut a {
                m.insert("record".to_owned(), serde_json::to_value(&record).unwrap_or(Value::Null));
                m.insert("round".to_owned(), json!(round));
            }
            a
        }),
    );
    if let Some(why) = &failed {
        update = update.set("errors", vec![format!("{ADVISOR}: {why}")]);
    }
    if advice.is_none() {
        keep(&fab, &record).await?;
        update = update.set(
            "outcome",
            json!({"status": "failed", "code": Code::LlmUnavailable, "reason": "the model gave no proposal and no fallback rule has an action"}),
        );
    }
    Ok(update)
}

/// The proposal's signals: the lower of the two agents' confidences, and degradation.
fn signals(s: &State, advice: &Value) -> CallSignals {
    let degraded = s.get("degraded").and_then(Value::as_bool).unwrap_or(false)
        || advice.get("degraded").and_then(Value::as_bool).unwrap_or(false);
    let diag = s.get("diagnosis").and_then(|d| d.get("confidence")).and_then(Value::as_f64);
    let own = advice.get("confidence").and_then(Value::as_f64);
    let confidence = match (diag, own) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    CallSignals { confidence, degraded, ..CallSignals::default() }
}

/// What the approver of this run's plan is shown (`context.evidence` of its approval request):
/// the anomaly, the chosen diagnosis, every candidate cause with its confidence, and the Advisor's
/// reasoning, confidence and source.
fn evidence(s: &State, advice: &Value) -> Value {
    json!({
        "pipeline": "fab",
        "anomaly": s.get("anomaly"),
        "diagnosis": s.get("diagnosis"),
        "candidates": s.get("candidates"),
        "advice": {
            "reasoning": advice.get("reasoning"),
            "confidence": advice.get("confidence"),
            "source": advice.get("source"),
            "degraded": advice.get("degraded"),
        },
    })
}

/// The history a proposal of this run is judged against: the chosen cause and the class of the
/// anomalous equipment (`class` in its `[[adapter.memory]]` state; its own name when absent).
fn history_key(fab: &Fab, s: &State) -> Option<bridle_core::history::HistoryKey> {
    let diagnosis = s.get("diagnosis").and_then(|d| d.get("cause")).and_then(Value::as_str)?;
    let equipment = s.get("anomaly").and_then(|a| a.get("equipment")).and_then(Value::as_str)?;
    let class = fab
        .gate
        .config()
        .memory_adapter
        .iter()
        .find(|m| m.tenant == fab.principal.tenant && m.key == equipment)
        .and_then(|m| m.state.get("class"))
        .and_then(Value::as_str)
        .unwrap_or(equipment);
    Some(bridle_core::history::HistoryKey { diagnosis: diagnosis.to_owned(), equipment_class: class.to_owned() })
}

fn executed(outcome: &CallOutcome, result: &Value) -> Value {
    json!({
        "status": "executed",
        "tool": outcome.tool,
        "result": result,
        "job_id": outcome.job_id,
        "approval_id": outcome.approval_id,
        "level": outcome.level,
        "plan_hash": outcome.plan_hash,
    })
}

/// `[[history.observe]]`: reads back an executed change on its resource and rates the action by
/// what was read (source `observation`). `None` when no rule observes the tool; a read that is
/// refused leaves the action unrated (`unobserved` with the code): nothing is guessed.
async fn observe(
    fab: &Fab,
    s: &State,
    ctx: &NodeContext,
    outcome: &CallOutcome,
    arguments: &Value,
    round: u64,
) -> Result<Option<Value>, NodeError> {
    let config = fab.gate.config();
    let Some(rule) = config.history.observe.iter().find(|r| r.after == outcome.tool) else { return Ok(None) };
    let param = |tool: &str| config.registry.get(tool).and_then(|t| t.resource.as_ref()).map(|r| r.param.clone());
    let (Some(job_id), Some(from), Some(to)) = (outcome.job_id.as_deref(), param(&rule.after), param(&rule.read))
    else {
        return Ok(None);
    };
    let target = arguments.get(&from).cloned().unwrap_or(Value::Null);
    let call = CallRequest::new(&rule.read, json!({ to: target }))
        .with_key(&format!("{}/round-{round}/observe", ctx.thread_id()));
    let call = on_behalf(fab, call, ADVISOR);
    let seen = call_tool(&fab.gate, ctx, &fab.principal, &run_context(s, ctx), call).await?;
    let Some(result) = seen.result() else {
        return Ok(Some(json!({"read": rule.read, "status": "unobserved", "code": seen.code()})));
    };
    let expected = arguments.get(&rule.argument).cloned().unwrap_or(Value::Null);
    let observed = result.get(&rule.field);
    let verdict = bridle_core::history::ObserveRule::judge(&expected, observed);
    let shown = observed.map_or_else(|| "absent".to_owned(), Value::to_string);
    let rating = bridle_core::history::Rating {
        outcome: verdict,
        source: bridle_core::history::OutcomeSource::Observation,
        rated_by: format!("observation:{}", rule.read),
        note: Some(format!("{} = {shown} (expected {expected})", rule.field)),
        rated_at: fab.gate.now(),
    };
    bridle_runtime::history::rate(&fab.gate, &fab.principal.tenant, job_id, &rating)
        .await
        .map_err(|e| NodeError::transient(Code::StateUnavailable, format!("action history: {e}")))?;
    Ok(Some(json!({
        "read": rule.read, "field": rule.field, "expected": expected, "observed": observed, "outcome": verdict.as_str(),
    })))
}

/// [`executed`] with the follow-up observation, when one is configured for the tool.
async fn executed_and_observed(
    fab: &Fab,
    s: &State,
    ctx: &NodeContext,
    outcome: &CallOutcome,
    result: &Value,
    arguments: &Value,
    round: u64,
) -> Result<Value, NodeError> {
    let mut done = executed(outcome, result);
    if let (Some(observation), Value::Object(fields)) =
        (observe(fab, s, ctx, outcome, arguments, round).await?, &mut done)
    {
        fields.insert("observation".to_owned(), observation);
    }
    Ok(done)
}

fn refused(outcome: &CallOutcome) -> Value {
    let (code, message) = match &outcome.verdict {
        Verdict::Rejected { rejection } => (Some(rejection.code), rejection.message.clone()),
        _ => (outcome.code(), String::new()),
    };
    json!({"status": "refused", "tool": outcome.tool, "code": code, "message": message, "plan_hash": outcome.plan_hash})
}

/// The gate judges the Advisor's proposal: executed, waiting for approval, or refused.
pub(super) async fn propose(fab: Arc<Fab>, s: State, ctx: NodeContext) -> Result<Update, NodeError> {
    let advice = s.get("advice").cloned().unwrap_or(Value::Null);
    let round = advice.get("round").and_then(Value::as_u64).unwrap_or(1);
    let tool = advice.get("action_id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let arguments = advice.get("parameters").cloned().unwrap_or(Value::Null);
    let mut request =
        CallRequest::new(&tool, arguments.clone()).with_key(&format!("{}/round-{round}/propose", ctx.thread_id()));
    request.signals = signals(&s, &advice);
    request.signals.history = history_key(&fab, &s);
    request.signals.evidence = Some(evidence(&s, &advice));
    let request = on_behalf(&fab, request, ADVISOR);
    let outcome = call_tool(&fab.gate, &ctx, &fab.principal, &run_context(&s, &ctx), request.clone()).await?;
    let code = outcome.code();
    // The contract's verdict (range, step) and the state rule's (delta), kept apart: a replay can
    // check the first without reading the equipment.
    let in_range =
        !matches!(code, Some(Code::UnknownTool | Code::SchemaRejected | Code::OutOfRange | Code::StepMismatch));
    let within_delta = code != Some(Code::DeltaTooLarge);
    let (verdict, update) = match (&outcome.verdict, code) {
        (Verdict::Ok { result }, _) => {
            let done = executed_and_observed(&fab, &s, &ctx, &outcome, result, &arguments, round).await?;
            ("executed", Update::new().set("outcome", done))
        }
        (_, Some(Code::ApprovalRequired | Code::HumanChoiceRequired)) => {
            let reasons = outcome.approval_reasons();
            let pending = json!({
                "approval_id": outcome.approval_id,
                "tool": tool,
                "arguments": arguments,
                "plan_hash": outcome.plan_hash,
                "level": outcome.level,
                // The console asks for a typed confirmation of a destructive plan.
                "risk": fab.gate.config().registry.get(&tool).map(|t| t.risk.as_str()),
                "why": reasons,
                "round": round,
                "degraded": request.signals.degraded,
            });
            ("approval_required", Update::new().set("pending", pending))
        }
        _ => ("rejected", Update::new().set("outcome", refused(&outcome))),
    };
    if let Some(mut record) = advice
        .get("record")
        .cloned()
        .and_then(|r| serde_json::from_value::<bridle_core::decision::DecisionRecord>(r).ok())
    {
        if let Value::Object(h) = &mut record.harness_checks {
            h.insert("params_in_range".to_owned(), json!(in_range));
            h.insert("within_delta".to_owned(), json!(within_delta));
            h.insert("confidence".to_owned(), json!(request.signals.confidence));
        }
        record.final_verdict = verdict.to_owned();
        keep(&fab, &record).await?;
    }
    Ok(update)
}

/// Waits for the operator's decision on the pending plan, read from the approval desk (the
/// resume value only says "look again"): granted → executed once with the approval; rejected →
/// back to the Advisor with the reason; still pending → wait again.
pub(super) async fn await_approval(fab: Arc<Fab>, s: State, ctx: NodeContext) -> Result<Update, NodeError> {
    let pending = s.get("pending").cloned().unwrap_or(Value::Null);
    let id = pending.get("approval_id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let round = pending.get("round").and_then(Value::as_u64).unwrap_or(1);
    for _ in 0..MAX_WAITS {
        ctx.interrupt(json!({"kind": "approve_plan", "plan": pending}))?;
        let request = fab
            .gate
            .stores()
            .approvals
            .get_request(&fab.principal.tenant, &id)
            .await
            .map_err(|e| NodeError::transient(Code::StateUnavailable, format!("approval desk: {e}")))?;
        let Some(request) = request else {
            return Ok(
                Update::new().set("outcome", json!({"status": "failed", "code": Code::NotFound, "approval_id": id}))
            );
        };
        match request.status {
            ApprovalStatus::Pending if request.expires_at <= fab.gate.now() => {
                return Ok(Update::new().set("outcome", json!({"status": "expired", "approval_id": id})));
            }
            ApprovalStatus::Pending => {}
            ApprovalStatus::Rejected => {
                let reason = request.rejection_reason.unwrap_or_default();
                ctx.emit("plan_rejected", json!({"approval_id": id, "round": round}));
                let entry = json!({
                    "round": round,
                    "reason": reason,
                    "tool": pending.get("tool"),
                    "arguments": pending.get("arguments"),
                });
                return Ok(Update::new().set("rejections", vec![entry]).set("pending", Value::Null));
            }
            ApprovalStatus::Granted | ApprovalStatus::Consumed => {
                let tool = pending.get("tool").and_then(Value::as_str).unwrap_or_default();
                let arguments = pending.get("arguments").cloned().unwrap_or(Value::Null);
                // One key per round: a re-run after a crash gets the stored result, never a second change.
                let call = CallRequest::new(tool, arguments.clone())
                    .with_approval(&id)
                    .with_key(&format!("{}/round-{round}/execute", ctx.thread_id()));
                let mut call = on_behalf(&fab, call, ADVISOR);
                call.signals.history = history_key(&fab, &s);
                let outcome = call_tool(&fab.gate, &ctx, &fab.principal, &run_context(&s, &ctx), call).await?;
                let result = match outcome.result() {
                    Some(result) => executed_and_observed(&fab, &s, &ctx, &outcome, result, &arguments, round).await?,
                    None => refused(&outcome),
                };
                return Ok(Update::new().set("outcome", result).set("pending", Value::Null));
            }
        }
    }
    Err(NodeError::rejected(Rejection::new(Code::ApprovalRequired, "the plan is still waiting for a decision")))
}

/// After a rejection: the next round, or the end once `max_rounds` plans were rejected.
pub(super) fn regenerate(s: &State, max_rounds: u32) -> Update {
    let round = s.int("round").max(1);
    if round >= i64::from(max_rounds) {
        return Update::new()
            .set("outcome", json!({"status": "rejected", "rounds": round, "reasons": s.get("rejections")}));
    }
    Update::new().set("round", round + 1)
}
