//! The pipeline scenarios of `bridle demo fab`, each judged from the store and the simulator.

use bridle_core::Code;
use bridle_core::audit::{AuditEvent, Decision, EventKind};
use bridle_core::contract::ApprovalLevel;
use bridle_core::level::CallSignals;
use bridle_core::{RunContext, checkpoint::ThreadStatus};
use bridle_runtime::gate::CallRequest;
use bridle_runtime::graph::RunOutcome;
use serde_json::{Value, json};

use super::{Check, Fixture, Rig, ensure, finished, outcome_of};

macro_rules! script {
    ($name:literal) => {
        include_str!(concat!("../../../../examples/fab/scripts/", $name, ".toml"))
    };
}

/// Runs one scenario by name.
pub(super) async fn run(fx: &Fixture, name: &str) -> Check {
    match name {
        "etch_delta_rejected" => etch_delta_rejected(fx).await,
        "diagnosis_candidates_need_human" => candidates_need_human(fx).await,
        "chat_injection_blocked" => super::chat::injection_blocked(fx).await,
        "canary_leak_blocked" => super::chat::canary_leak_blocked(fx).await,
        "runaway_loop_stopped" => super::chat::runaway_loop_stopped(fx).await,
        "negative_temperature_rejected" => negative_temperature_rejected(fx).await,
        "llm_down_rule_fallback" => llm_down_rule_fallback(fx).await,
        "reject_regenerate_reapprove" => reject_regenerate_reapprove(fx).await,
        "history_escalates_failed_action" => history_escalates_failed_action(fx).await,
        "auto_limit_escalates" => auto_limit_escalates(fx).await,
        other => Err(format!("no scenario `{other}`")),
    }
}

fn anomaly(equipment: &str, metric: &str, value: f64, incident: &str) -> Value {
    json!({"anomaly": {"equipment": equipment, "metric": metric, "value": value}, "incident": incident})
}

async fn start(fx: &Fixture, rig: &Rig, input: Value) -> Result<RunOutcome, String> {
    finished(rig.graph.invoke(fx.run_config(&rig.thread), input).await)
}

/// Resumes the run's single pending interrupt with `value`.
async fn resume(fx: &Fixture, rig: &Rig, run: &RunOutcome, value: Value) -> Result<RunOutcome, String> {
    let [pause] = run.interrupts.as_slice() else {
        return Err(format!("expected one pending interrupt, found {}", run.interrupts.len()));
    };
    finished(rig.graph.resume_invoke(fx.run_config(&rig.thread), &pause.id, value).await)
}

static NULL: Value = Value::Null;

/// The value at a JSON pointer, `null` when absent.
fn at<'a>(v: &'a Value, pointer: &str) -> &'a Value {
    v.pointer(pointer).unwrap_or(&NULL)
}

/// The value at a pointer into the first pending interrupt's payload.
fn pause<'a>(run: &'a RunOutcome, pointer: &str) -> &'a Value {
    run.interrupts.first().map_or(&NULL, |p| at(&p.payload, pointer))
}

fn count(list: &Value) -> usize {
    list.as_array().map_or(0, Vec::len)
}

fn pause_kind(run: &RunOutcome) -> Option<&str> {
    run.interrupts.first().and_then(|p| p.payload.get("kind")).and_then(Value::as_str)
}

fn tool_calls<'a>(events: &'a [AuditEvent], tool: &str) -> Vec<&'a AuditEvent> {
    events.iter().filter(|e| e.record.kind == EventKind::ToolCall && e.record.tool == tool).collect()
}

fn nothing_executed(rig: &Rig) -> Check {
    let applied = rig.fab.applied();
    ensure(applied.is_empty(), || format!("the fab applied {} change(s)", applied.len()))
}

/// Refused by the contract or state rules: the audit event carries `code` and nothing ran.
async fn refused_with(fx: &Fixture, rig: &Rig, script_input: Value, tool: &str, code: Code, check: &str) -> Check {
    let run = start(fx, rig, script_input).await?;
    let outcome = outcome_of(&run);
    ensure(outcome.get("code") == Some(&json!(code)), || format!("outcome {outcome}"))?;
    nothing_executed(rig)?;
    let events = fx.events(&rig.thread).await?;
    let calls = tool_calls(&events, tool);
    ensure(calls.len() == 1 && calls.iter().all(|e| e.record.code.as_deref() == Some(code.as_str())), || {
        format!(
            "{} `{tool}` audit event(s), codes {:?}",
            calls.len(),
            calls.iter().map(|e| &e.record.code).collect::<Vec<_>>()
        )
    })?;
    let decisions = fx.decisions(&rig.thread).await?;
    let advisor = decisions.iter().find(|d| d.agent == "advisor").ok_or("no advisor decision record")?;
    ensure(advisor.final_verdict == "rejected" && advisor.harness_checks.get(check) == Some(&json!(false)), || {
        format!("advisor record: verdict {} checks {}", advisor.final_verdict, advisor.harness_checks)
    })
}

async fn etch_delta_rejected(fx: &Fixture) -> Check {
    let rig = fx.rig("etch_delta_rejected", script!("etch_delta_rejected"))?;
    let input = anomaly("etch-01", "chamber_temp_c", 391.0, "inc-etch-delta");
    refused_with(fx, &rig, input, "set_temperature", Code::DeltaTooLarge, "within_delta").await
}

async fn negative_temperature_rejected(fx: &Fixture) -> Check {
    let rig = fx.rig("negative_temperature_rejected", script!("negative_temperature_rejected"))?;
    let input = anomaly("etch-01", "chamber_temp_c", 420.0, "inc-negative-temp");
    refused_with(fx, &rig, input, "set_temperature", Code::OutOfRange, "params_in_range").await
}

/// Grants the pipeline's pending approval as the operator.
async fn grant(fx: &Fixture, rig: &Rig, run: &RunOutcome) -> Result<String, String> {
    let id = run
        .interrupts
        .first()
        .and_then(|p| p.payload.pointer("/plan/approval_id"))
        .and_then(Value::as_str)
        .ok_or("the pause carries no approval id")?
        .to_owned();
    rig.desk.grant(&fx.approver, &id).await.map_err(|e| format!("grant: {e}"))?;
    Ok(id)
}

async fn candidates_need_human(fx: &Fixture) -> Check {
    let rig = fx.rig("diagnosis_candidates_need_human", script!("diagnosis_candidates_need_human"))?;
    let run = start(fx, &rig, anomaly("etch-01", "gas_flow_sccm", 61.0, "inc-gas-flow")).await?;
    ensure(run.status == ThreadStatus::Interrupted && pause_kind(&run) == Some("choose_candidate"), || {
        format!("expected a pause to choose, got {:?} {:?}", run.status, pause_kind(&run))
    })?;
    let offered: Vec<&str> = pause(&run, "/options")
        .as_array()
        .map(|o| o.iter().filter_map(|c| at(c, "/cause").as_str()).collect())
        .unwrap_or_default();
    ensure(offered == ["vacuum pump wear", "stuck gas valve"], || format!("offered {offered:?}"))?;
    // Nothing was picked automatically: no tool call and no Advisor call yet.
    ensure(fx.events(&rig.thread).await?.is_empty(), || "a tool was called before the operator chose".to_owned())?;
    let run = resume(fx, &rig, &run, json!({"cause": "stuck gas valve"})).await?;
    ensure(pause_kind(&run) == Some("approve_plan"), || format!("expected an approval pause, got {:?}", run.status))?;
    nothing_executed(&rig)?;
    let id = grant(fx, &rig, &run).await?;
    let run = resume(fx, &rig, &run, json!({})).await?;
    let outcome = outcome_of(&run);
    ensure(at(&outcome, "/status") == "executed", || format!("outcome {outcome}"))?;
    let applied = Value::Array(rig.fab.applied());
    ensure(count(&applied) == 1 && at(&applied, "/0/arguments/part") == "gas_valve", || format!("applied {applied}"))?;
    let events = fx.events(&rig.thread).await?;
    let executed: Vec<_> = tool_calls(&events, "replace_part")
        .into_iter()
        .filter(|e| e.record.decision == Some(Decision::Executed))
        .collect();
    ensure(
        executed.len() == 1 && executed.first().and_then(|e| e.record.approval_id.as_deref()) == Some(id.as_str()),
        || format!("{} executed replace_part event(s)", executed.len()),
    )?;
    let diagnosis = at(&run.state, "/diagnosis");
    ensure(at(diagnosis, "/chosen_by") == "operator" && at(diagnosis, "/cause") == "stuck gas valve", || {
        format!("diagnosis {diagnosis}")
    })
}

async fn llm_down_rule_fallback(fx: &Fixture) -> Check {
    let rig = fx.rig("llm_down_rule_fallback", script!("llm_down_rule_fallback"))?;
    let run = start(fx, &rig, anomaly("etch-01", "gas_flow_sccm", 42.0, "inc-llm-down")).await?;
    ensure(pause_kind(&run) == Some("approve_plan"), || {
        format!("expected the rule's plan to wait for approval, got {:?} {}", run.status, outcome_of(&run))
    })?;
    let plan = pause(&run, "/plan");
    ensure(at(plan, "/degraded") == true && at(plan, "/tool") == "replace_part", || format!("plan {plan}"))?;
    nothing_executed(&rig)?;
    let decisions = fx.decisions(&rig.thread).await?;
    let verdicts: Vec<(&str, &str)> = decisions.iter().map(|d| (d.agent.as_str(), d.final_verdict.as_str())).collect();
    ensure(
        decisions.len() == 2
            && decisions.iter().all(|d| d.harness_checks.get("schema_valid") == Some(&json!(false)))
            && verdicts.contains(&("diagnostician", "degraded"))
            && verdicts.contains(&("advisor", "approval_required")),
        || format!("decision records {verdicts:?}"),
    )?;
    let events = fx.events(&rig.thread).await?;
    let calls = tool_calls(&events, "replace_part");
    ensure(
        calls.len() == 1
            && calls.first().and_then(|e| e.record.code.as_deref()) == Some(Code::ApprovalRequired.as_str())
            && calls.first().and_then(|e| e.record.reason.as_deref()).is_some_and(|r| r.contains("degraded")),
        || {
            format!(
                "replace_part events {:?}",
                calls.iter().map(|e| (&e.record.code, &e.record.reason)).collect::<Vec<_>>()
            )
        },
    )
}

async fn reject_regenerate_reapprove(fx: &Fixture) -> Check {
    const REASON: &str = "the heater was replaced last week; trim the setpoint instead of another replacement";
    let rig = fx.rig("reject_regenerate_reapprove", script!("reject_regenerate_reapprove"))?;
    let run = start(fx, &rig, anomaly("etch-01", "chamber_temp_c", 388.0, "inc-reject")).await?;
    let first = pause(&run, "/plan").clone();
    let first_id = at(&first, "/approval_id").as_str().ok_or("the first plan did not wait for approval")?;
    rig.desk.reject(&fx.approver, first_id, REASON).await.map_err(|e| format!("reject: {e}"))?;
    let run = resume(fx, &rig, &run, json!({})).await?;
    let second = pause(&run, "/plan").clone();
    ensure(at(&second, "/round") == 2 && at(&second, "/tool") != at(&first, "/tool"), || {
        format!("second plan {second}")
    })?;
    // The Advisor's second call carried the operator's reason.
    let asked_with_reason = rig
        .model
        .requests()
        .iter()
        .any(|r| r.agent == "advisor" && r.turn == 2 && r.messages.iter().any(|m| m.content.contains(REASON)));
    ensure(asked_with_reason, || "the reason never reached the Advisor's second prompt".to_owned())?;
    grant(fx, &rig, &run).await?;
    let run = resume(fx, &rig, &run, json!({})).await?;
    let outcome = outcome_of(&run);
    ensure(at(&outcome, "/status") == "executed" && at(&outcome, "/tool") == "set_temperature", || {
        format!("outcome {outcome}")
    })?;
    // Resuming the finished run again changes nothing: executed once.
    let again = rig.graph.continue_invoke(fx.run_config(&rig.thread)).await;
    ensure(again.is_ok(), || format!("continuing a finished run: {again:?}"))?;
    let applied = Value::Array(rig.fab.applied());
    ensure(count(&applied) == 1 && at(&applied, "/0/arguments/temp_celsius") == 375, || format!("applied {applied}"))?;
    let events = fx.events(&rig.thread).await?;
    let rejected = events.iter().filter(|e| e.record.kind == EventKind::ApprovalRejected).count();
    let granted = events.iter().filter(|e| e.record.kind == EventKind::ApprovalGranted).count();
    ensure(rejected == 1 && granted == 1, || format!("{rejected} rejection(s), {granted} grant(s) audited"))
}

/// More than three automatic changes on one equipment within the hour: the next needs approval.
async fn auto_limit_escalates(fx: &Fixture) -> Check {
    let fab = std::sync::Arc::new(bridle_runtime::adapter::FabAdapter::from_config(&fx.config));
    let gate = fx.engine(fab.clone())?.gate;
    let limit = fx.config.levels.auto_limit.ok_or("`[levels] auto_limit` is off")?;
    let run = RunContext::new(&format!("fab-demo/{}/auto_limit_escalates", fx.tag), "inc-auto");
    let mut setpoint = 300;
    let signals = CallSignals { confidence: Some(0.9), ..CallSignals::default() };
    // Earlier demo runs on this database may have used part of the window already.
    let now = time::OffsetDateTime::now_utc();
    let used = fx
        .stores
        .actions
        .count_auto(&fx.requester.tenant, &bridle_core::level::auto_limit_key("equipment", "cvd-02"), now, limit.window)
        .await
        .map_err(|e| format!("ledger: {e}"))?;
    let room = u64::from(limit.max).saturating_sub(used);
    for n in 1..=room.saturating_add(1) {
        setpoint += if n % 2 == 0 { -5 } else { 5 };
        let mut call = CallRequest::new("set_temperature", json!({"equipment": "cvd-02", "temp_celsius": setpoint}));
        call.signals = signals.clone();
        let outcome = gate.call(&fx.requester, &run, &call).await.map_err(|e| format!("gate: {e}"))?;
        if outcome.code() == Some(Code::ApprovalRequired) {
            ensure(n == room + 1, || format!("escalated at call {n}, expected {}", room + 1))?;
            ensure(outcome.level == Some(ApprovalLevel::Approval), || format!("level {:?}", outcome.level))?;
            let events = fx.events(&run.run_id).await?;
            let last = events.last().ok_or("no audit event")?;
            return ensure(last.record.reason.as_deref().is_some_and(|r| r.contains("automatic changes")), || {
                format!("reason {:?}", last.record.reason)
            });
        }
        ensure(outcome.result().is_some(), || format!("call {n}: {:?}", outcome.code()))?;
    }
    Err(format!("{} automatic changes in a row were allowed", room.saturating_add(1)))
}

/// An action executed for a diagnosis on an equipment class and rated a failure: the Advisor's
/// next proposal of the same action for the same diagnosis on the same class needs approval, and
/// the approval request shows the approver that failure.
async fn history_escalates_failed_action(fx: &Fixture) -> Check {
    let fab = std::sync::Arc::new(bridle_runtime::adapter::FabAdapter::from_config(&fx.config));
    let bridle_runtime::engine::Engine { gate, desk, .. } = fx.engine(fab.clone())?;
    let run = RunContext::new(&format!("fab-demo/{}/history_escalates_failed_action", fx.tag), "inc-history");
    // This invocation's own diagnosis, so earlier demo runs on the same database do not count.
    let key = bridle_core::history::HistoryKey {
        diagnosis: format!("heater controller drift ({})", fx.tag),
        equipment_class: "etch".to_owned(),
    };
    let signals = CallSignals { confidence: Some(0.9), history: Some(key.clone()), ..CallSignals::default() };
    let mut call = CallRequest::new("set_temperature", json!({"equipment": "etch-01", "temp_celsius": 385}))
        .for_agent(crate::pipelines::fab::ADVISOR);
    call.signals = signals;
    let gate_err = |e: bridle_runtime::gate::GateError| format!("gate: {e}");
    let mut first = gate.call(&fx.requester, &run, &call).await.map_err(gate_err)?;
    // The automatic-change limit (other demo runs this hour) may want a human first: grant it.
    if first.code() == Some(Code::ApprovalRequired) {
        let id = first.approval_id.clone().ok_or("no approval id")?;
        desk.grant(&fx.approver, &id).await.map_err(|e| format!("grant: {e:?}"))?;
        first = gate.call(&fx.requester, &run, &call.clone().with_approval(&id)).await.map_err(gate_err)?;
    }
    let job = first
        .job_id
        .clone()
        .filter(|_| first.result().is_some())
        .ok_or_else(|| format!("first call: {:?}", first.code()))?;
    let rating = bridle_core::history::Rating {
        outcome: bridle_core::history::Outcome::Failure,
        source: bridle_core::history::OutcomeSource::Operator,
        rated_by: fx.approver.subject.clone(),
        note: Some("chamber temperature drifted again within the hour".to_owned()),
        rated_at: time::OffsetDateTime::now_utc(),
    };
    bridle_runtime::history::rate(&gate, &fx.requester.tenant, &job, &rating)
        .await
        .map_err(|e| format!("rate: {e}"))?;
    // The same action for the same diagnosis on the same class: escalated, history attached.
    call.arguments = json!({"equipment": "etch-01", "temp_celsius": 390});
    call.approval_id = None;
    let again = gate.call(&fx.requester, &run, &call).await.map_err(gate_err)?;
    ensure(again.code() == Some(Code::ApprovalRequired), || format!("second call: {:?}", again.code()))?;
    let id = again.approval_id.clone().ok_or("no approval id")?;
    let request = fx
        .stores
        .approvals
        .get_request(&fx.requester.tenant, &id)
        .await
        .map_err(|e| format!("ledger: {e}"))?
        .ok_or("no approval request")?;
    let failures = request.context.as_ref().and_then(|c| c.pointer("/history/failures")).and_then(Value::as_array);
    ensure(
        failures.is_some_and(|f| f.len() == 1 && f.first().and_then(|x| x.get("job_id")) == Some(&json!(job))),
        || format!("approval context {:?}", request.context),
    )
}
