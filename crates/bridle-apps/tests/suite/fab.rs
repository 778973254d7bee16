//! Seed 000's fab pipeline: the demo's scenarios checked through the store (audit events and
//! decision records, never the printed lines), and the pipeline's rules one by one.

use std::sync::Arc;

use bridle_apps::pipelines::fab::{FabOptions, fab_graph};
use bridle_core::Code;
use bridle_core::audit::{AuditEvent, Decision, EventKind, verify_chain};
use bridle_core::checkpoint::ThreadStatus;
use bridle_core::contract::ApprovalLevel;
use bridle_core::level::CallSignals;
use bridle_core::ports::SystemClock;
use bridle_core::{Principal, RunContext};
use bridle_runtime::adapter::FabAdapter;
use bridle_runtime::approvals::ApprovalDesk;
use bridle_runtime::checkpoint::MemoryCheckpointer;
use bridle_runtime::engine::Engine;
use bridle_runtime::gate::CallRequest;
use bridle_runtime::graph::{Graph, RunConfig, RunOutcome};
use bridle_runtime::llm::ScriptedModel;
use bridle_runtime::llm::scripted::{ScriptedError, ScriptedReply};
use bridle_runtime::store::Stores;
use serde_json::{Value, json};

use super::support::{H, T0};

fn fab_config() -> Arc<bridle_core::config::Config> {
    Arc::new(bridle_runtime::bundled::fab().unwrap())
}

async fn all_events(stores: &Stores, tenant: &str) -> Vec<AuditEvent> {
    bridle_runtime::audit::export(stores.audit.as_ref(), Some(tenant)).await.unwrap()
}

fn of_run<'a>(events: &'a [AuditEvent], scenario: &str) -> Vec<&'a AuditEvent> {
    events.iter().filter(|e| e.record.run_id.ends_with(&format!("/{scenario}"))).collect()
}

fn codes(events: &[&AuditEvent], kind: EventKind) -> Vec<String> {
    events.iter().filter(|e| e.record.kind == kind).filter_map(|e| e.record.code.clone()).collect()
}

fn executed(events: &[&AuditEvent], tool: &str) -> usize {
    events
        .iter()
        .filter(|e| e.record.kind == EventKind::ToolCall && e.record.tool == tool)
        .filter(|e| e.record.decision == Some(Decision::Executed))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_demo_scenario_leaves_its_evidence_in_the_store() {
    let dir = tempfile::TempDir::new().unwrap();
    let url = format!("sqlite://{}", dir.path().join("fab.db").display());
    let stores = Stores::open(&url).await.unwrap();
    let report = bridle_apps::demo_fab::run(fab_config(), stores).await.unwrap();
    assert_eq!(report.diverged, None, "{:?}", report.lines);
    // Read back through a second, independent connection to the same file.
    let stores = Stores::open(&url).await.unwrap();
    let events = all_events(&stores, "fab-1").await;
    assert!(verify_chain("fab-1", &events).is_ok());

    let run = of_run(&events, "etch_delta_rejected");
    assert_eq!(codes(&run, EventKind::ToolCall), ["delta_too_large"]);
    assert_eq!(executed(&run, "set_temperature"), 0);

    let run = of_run(&events, "negative_temperature_rejected");
    assert_eq!(codes(&run, EventKind::ToolCall), ["out_of_range"]);

    let run = of_run(&events, "diagnosis_candidates_need_human");
    assert_eq!(executed(&run, "replace_part"), 1);
    assert_eq!(run.iter().filter(|e| e.record.kind == EventKind::ApprovalGranted).count(), 1);
    let replaced = run.iter().find(|e| {
        e.record.kind == EventKind::ToolCall
            && e.record.tool == "replace_part"
            && e.record.decision == Some(Decision::Executed)
    });
    assert_eq!(replaced.unwrap().record.approver.as_deref(), Some("operator-kim"));

    let run = of_run(&events, "chat_injection_blocked");
    assert_eq!(codes(&run, EventKind::ChatBlocked), ["injection_detected"]);
    let run = of_run(&events, "canary_leak_blocked");
    assert_eq!(codes(&run, EventKind::ChatBlocked), ["output_blocked"]);
    for (part, code) in [("tools", "too_many_tool_calls"), ("tokens", "budget_exhausted"), ("circuit", "circuit_open")]
    {
        let run = of_run(&events, &format!("runaway_loop_stopped/{part}"));
        assert_eq!(codes(&run, EventKind::ChatStopped), [code], "{part}");
    }

    let run = of_run(&events, "llm_down_rule_fallback");
    assert_eq!(codes(&run, EventKind::ToolCall).last().map(String::as_str), Some("approval_required"));
    assert_eq!(executed(&run, "replace_part"), 0);

    let run = of_run(&events, "reject_regenerate_reapprove");
    assert_eq!(run.iter().filter(|e| e.record.kind == EventKind::ApprovalRejected).count(), 1);
    assert_eq!(executed(&run, "set_temperature"), 1);
    assert_eq!(executed(&run, "replace_part"), 0);

    let run = of_run(&events, "history_escalates_failed_action");
    assert_eq!(executed(&run, "set_temperature"), 1);
    // The operator's rating of that execution is audited (call id: the job id).
    let job = run.iter().find(|e| e.record.kind == EventKind::JobDispatched).unwrap().record.call_id.clone();
    assert!(events.iter().any(|e| e.record.kind == EventKind::ActionOutcome && e.record.call_id == job));
    assert_eq!(codes(&run, EventKind::ToolCall).last().map(String::as_str), Some("approval_required"));
    assert!(run.iter().all(|e| e.record.versions.tool_schema_hash.is_some()));

    let run = of_run(&events, "auto_limit_escalates");
    assert_eq!(executed(&run, "set_temperature"), 3);
    assert_eq!(codes(&run, EventKind::ToolCall), ["approval_required"]);

    // One decision record per LLM call, in seed 000's shape.
    let decisions = stores.decisions.recent("fab-1", 1000).await.unwrap();
    let by = |scenario: &str| -> Vec<(String, String)> {
        let mut v: Vec<_> = decisions
            .iter()
            .filter(|d| d.pipeline_run_id.ends_with(&format!("/{scenario}")))
            .map(|d| (d.agent.clone(), d.final_verdict.clone()))
            .collect();
        v.sort();
        v
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(by("etch_delta_rejected"), [pair("advisor", "rejected"), pair("diagnostician", "accepted")]);
    assert_eq!(by("llm_down_rule_fallback"), [pair("advisor", "approval_required"), pair("diagnostician", "degraded")]);
    assert_eq!(
        by("reject_regenerate_reapprove"),
        [pair("advisor", "approval_required"), pair("advisor", "approval_required"), pair("diagnostician", "accepted")]
    );
    // The chat's model calls are records too; a blocked input never reached the model.
    assert_eq!(by("canary_leak_blocked"), [pair("chat", "blocked")]);
    assert_eq!(by("chat_injection_blocked"), []);
    assert_eq!(by("runaway_loop_stopped/tools").len(), 6, "five tool-call rounds and the sixth ask");
    let leak = decisions.iter().find(|d| d.pipeline_run_id.ends_with("/canary_leak_blocked")).unwrap();
    assert!(!leak.output.to_string().contains("Never reveal"), "{}", leak.output);
    assert!(!leak.input.to_string().contains("BRIDLE-CANARY-"), "the canary is not kept");
    let advisor = decisions
        .iter()
        .find(|d| d.pipeline_run_id.ends_with("/etch_delta_rejected") && d.agent == "advisor")
        .unwrap()
        .to_seed_json();
    let keys: Vec<&str> = advisor.as_object().unwrap().keys().map(String::as_str).collect();
    for key in ["decision_id", "agent", "pipeline_run_id", "input", "output", "model", "tokens", "latency_ms"] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    assert_eq!(advisor["output"]["parameters"]["temp_celsius"], 365);
    assert_eq!(advisor["harness_checks"]["schema_valid"], true);
    // 365 °C is in range and on the step; the 15 °C step from 380 is what the state rule refused.
    assert_eq!(advisor["harness_checks"]["params_in_range"], true);
    assert_eq!(advisor["harness_checks"]["within_delta"], false);
    assert_eq!(advisor["harness_checks"]["injection_detected"], false);
    assert!(advisor["tokens"]["input"].as_u64().unwrap() > 0);
    assert!(advisor["timestamp"].as_str().unwrap().contains('T'));
}

// ---- the pipeline's rules, one by one ----

struct P {
    graph: Graph,
    desk: ApprovalDesk,
    fab: Arc<FabAdapter>,
    model: Arc<ScriptedModel>,
    cp: Arc<MemoryCheckpointer>,
    approver: Principal,
}

fn reply(agent: &str, turn: u32, value: Value) -> ScriptedReply {
    ScriptedReply { agent: Some(agent.into()), turn: Some(turn), json: Some(value), ..ScriptedReply::default() }
}

fn diagnosis(candidates: &[(&str, f64)]) -> Value {
    json!({"candidates": candidates.iter().map(|(c, p)| json!({"cause": c, "confidence": p, "evidence": "trend"})).collect::<Vec<_>>()})
}

fn advice(tool: &str, parameters: Value, confidence: f64) -> Value {
    json!({"action_id": tool, "parameters": parameters, "confidence": confidence, "reasoning": "because the trend says so"})
}

fn pipeline(replies: Vec<ScriptedReply>) -> P {
    let config = fab_config();
    let fab = Arc::new(FabAdapter::from_config(&config));
    let Engine { gate, desk, .. } =
        Engine::builder(config.clone(), Stores::memory(), fab.clone()).clock(Arc::new(SystemClock)).build().unwrap();
    let model = Arc::new(ScriptedModel::new("test", replies).unwrap());
    let mut options = FabOptions::from_config(&config);
    options.llm_timeout = std::time::Duration::from_millis(500);
    let requester = config.principals["advisor-agent"].clone();
    let graph = fab_graph(gate, model.clone(), requester.clone(), options).unwrap();
    let approver = config.principals["operator-kim"].clone();
    P { graph, desk, fab, model, cp: Arc::new(MemoryCheckpointer::new()), approver }
}

impl P {
    fn config(&self) -> RunConfig {
        RunConfig::new("t-1").checkpointer(self.cp.clone())
    }
    async fn start(&self, metric: &str, value: f64) -> RunOutcome {
        let input = json!({"anomaly": {"equipment": "etch-01", "metric": metric, "value": value}, "incident": "inc-1"});
        self.graph.invoke(self.config(), input).await.unwrap()
    }
    async fn resume(&self, run: &RunOutcome, value: Value) -> RunOutcome {
        self.graph.resume_invoke(self.config(), &run.interrupts[0].id, value).await.unwrap()
    }
    fn advisor_calls(&self) -> usize {
        self.model.requests().iter().filter(|r| r.agent == "advisor").count()
    }
    fn approval_id(run: &RunOutcome) -> String {
        run.interrupts[0].payload["plan"]["approval_id"].as_str().unwrap().to_owned()
    }
}

#[tokio::test]
async fn a_weak_lone_top_candidate_is_inconclusive_and_nothing_is_proposed() {
    let p = pipeline(vec![reply("diagnostician", 1, diagnosis(&[("rf drift", 0.22), ("liner wear", 0.1)]))]);
    let run = p.start("chamber_temp_c", 391.0).await;
    assert_eq!(run.status, ThreadStatus::Done);
    assert_eq!(run.state["outcome"]["status"], "inconclusive");
    assert_eq!(p.advisor_calls(), 0);
    assert!(p.fab.applied().is_empty());
}

#[tokio::test]
async fn near_equal_candidates_are_never_picked_and_a_bad_choice_is_asked_again() {
    let p = pipeline(vec![
        reply("diagnostician", 1, diagnosis(&[("vacuum pump wear", 0.31), ("stuck gas valve", 0.29)])),
        reply("advisor", 1, advice("replace_part", json!({"equipment": "etch-01", "part": "gas_valve"}), 0.9)),
    ]);
    let run = p.start("gas_flow_sccm", 61.0).await;
    assert_eq!(run.interrupts[0].payload["kind"], "choose_candidate");
    let run = p.resume(&run, json!({"cause": "cosmic rays"})).await;
    assert_eq!(run.interrupts[0].payload["kind"], "choose_candidate", "an unknown cause is not accepted");
    assert!(run.interrupts[0].payload["problem"].as_str().unwrap().contains("cosmic rays"));
    assert_eq!(p.advisor_calls(), 0);
    let run = p.resume(&run, json!({"cause": "stuck gas valve"})).await;
    assert_eq!(run.interrupts[0].payload["kind"], "approve_plan");
    assert_eq!(run.state["diagnosis"]["chosen_by"], "operator");
}

#[tokio::test]
async fn low_confidence_from_either_agent_escalates_an_auto_tool_to_approval() {
    // The Diagnostician is sure; the Advisor is not: the lower confidence goes to the gate.
    let p = pipeline(vec![
        reply("diagnostician", 1, diagnosis(&[("heater drift", 0.9)])),
        reply("advisor", 1, advice("set_temperature", json!({"equipment": "etch-01", "temp_celsius": 375}), 0.42)),
    ]);
    let run = p.start("chamber_temp_c", 388.0).await;
    let plan = &run.interrupts[0].payload["plan"];
    assert_eq!(plan["level"], "approval");
    assert!(plan["why"].as_str().unwrap().contains("confidence 0.42"), "{plan}");
    // Operator-facing: why it waits, not the agent's instruction to retry.
    assert!(!plan["why"].as_str().unwrap().contains("retry"), "{plan}");
    assert!(p.fab.applied().is_empty());
    // A confident pair runs automatically (set_temperature is `auto` below 400).
    let p = pipeline(vec![
        reply("diagnostician", 1, diagnosis(&[("heater drift", 0.9)])),
        reply("advisor", 1, advice("set_temperature", json!({"equipment": "etch-01", "temp_celsius": 375}), 0.8)),
    ]);
    let run = p.start("chamber_temp_c", 388.0).await;
    assert_eq!(run.state["outcome"]["status"], "executed");
    assert_eq!(p.fab.applied().len(), 1);
}

#[tokio::test]
async fn an_invalid_answer_after_its_retry_falls_back_to_the_rules_degraded() {
    let bad = |agent: &str, attempt| ScriptedReply {
        agent: Some(agent.into()),
        turn: Some(1),
        attempt: Some(attempt),
        content: Some("the valve, probably".into()),
        ..ScriptedReply::default()
    };
    let down = ScriptedReply {
        agent: Some("advisor".into()),
        turn: Some(1),
        error: Some(ScriptedError::RateLimited),
        ..ScriptedReply::default()
    };
    let p = pipeline(vec![bad("diagnostician", 1), bad("diagnostician", 2), down]);
    let run = p.start("gas_flow_sccm", 40.0).await;
    assert_eq!(run.state["degraded"], true);
    assert_eq!(run.state["candidates"][0]["cause"], "stuck gas valve");
    let plan = &run.interrupts[0].payload["plan"];
    assert_eq!((plan["tool"].as_str(), plan["degraded"].as_bool()), (Some("replace_part"), Some(true)));
    // Granted, the degraded plan runs once.
    p.desk.grant(&p.approver, &P::approval_id(&run)).await.unwrap();
    let run = p.resume(&run, json!({})).await;
    assert_eq!(run.state["outcome"]["status"], "executed");
    assert_eq!(p.fab.applied().len(), 1);
}

#[tokio::test]
async fn rejected_plans_end_the_run_after_max_rounds_and_nothing_runs() {
    let same = advice("replace_part", json!({"equipment": "etch-01", "part": "heater"}), 0.9);
    let p = pipeline(vec![
        reply("diagnostician", 1, diagnosis(&[("heater drift", 0.8)])),
        reply("advisor", 1, same.clone()),
        reply("advisor", 2, same.clone()),
        reply("advisor", 3, same),
    ]);
    let mut run = p.start("chamber_temp_c", 388.0).await;
    for round in 1..=3 {
        assert_eq!(run.interrupts[0].payload["plan"]["round"], round);
        p.desk.reject(&p.approver, &P::approval_id(&run), &format!("no heater swap, round {round}")).await.unwrap();
        run = p.resume(&run, json!({})).await;
    }
    assert_eq!(run.status, ThreadStatus::Done);
    assert_eq!(run.state["outcome"]["status"], "rejected");
    assert_eq!(run.state["rejections"].as_array().unwrap().len(), 3);
    assert_eq!(p.advisor_calls(), 3);
    assert!(p.fab.applied().is_empty());
    // Each later round saw every earlier reason.
    let last = p.model.requests().into_iter().filter(|r| r.agent == "advisor").last().unwrap();
    let prompt: String = last.messages.iter().map(|m| m.content.clone()).collect();
    assert!(prompt.contains("round 1") && prompt.contains("round 2"));
}

#[tokio::test]
async fn resuming_an_approved_plan_twice_executes_it_once() {
    let p = pipeline(vec![
        reply("diagnostician", 1, diagnosis(&[("stuck gas valve", 0.8)])),
        reply("advisor", 1, advice("replace_part", json!({"equipment": "etch-01", "part": "gas_valve"}), 0.9)),
    ]);
    let run = p.start("gas_flow_sccm", 40.0).await;
    p.desk.grant(&p.approver, &P::approval_id(&run)).await.unwrap();
    let done = p.resume(&run, json!({})).await;
    assert_eq!(done.state["outcome"]["status"], "executed");
    // The same answer again is refused (already answered); continuing changes nothing.
    assert!(p.graph.resume_invoke(p.config(), &run.interrupts[0].id, json!({})).await.is_err());
    p.graph.continue_invoke(p.config()).await.unwrap();
    assert_eq!(p.fab.applied().len(), 1);
}

#[tokio::test]
async fn the_fab_enforces_its_own_preconditions_whatever_the_gate_decided() {
    use bridle_core::ports::{Adapter, AdapterCall};
    let fab = FabAdapter::from_config(&fab_config());
    let call = |tool: &str, arguments: Value, identity: &str| AdapterCall {
        tool: tool.into(),
        tenant: "fab-1".into(),
        subject: "engineer".into(),
        run_id: "run-1".into(),
        incident: "inc-1".into(),
        arguments,
        identity: identity.into(),
        job_id: Some(format!("job-{tool}")),
    };
    let refused = [
        call("replace_part", json!({"equipment": "cvd-02", "part": "rf_generator"}), "fab-operator"),
        call("set_temperature", json!({"equipment": "etch-01", "temp_celsius": 365}), "fab-operator"),
        call("set_temperature", json!({"equipment": "etch-01", "temp_celsius": -500}), "fab-operator"),
        call("adjust_gas_flow", json!({"equipment": "etch-01", "gas": "SiH4", "flow_sccm": 10}), "fab-operator"),
        call("set_temperature", json!({"equipment": "etch-09", "temp_celsius": 380}), "fab-operator"),
    ];
    for c in &refused {
        assert!(fab.change(c).await.is_err(), "{} {}", c.tool, c.arguments);
    }
    // The reader identity never changes anything.
    let as_reader = call("set_temperature", json!({"equipment": "etch-01", "temp_celsius": 385}), "fab-reader");
    assert!(fab.change(&as_reader).await.is_err());
    assert!(fab.applied().is_empty());
    let ok = call("set_temperature", json!({"equipment": "etch-01", "temp_celsius": 385}), "fab-operator");
    assert_eq!(fab.change(&ok).await.unwrap()["temp_celsius"], 385);
    // The same job again is answered from memory, not applied twice.
    fab.change(&ok).await.unwrap();
    assert_eq!(fab.applied().len(), 1);
}

#[tokio::test]
async fn the_auto_limit_slides_with_the_clock() {
    let h = H::new(bridle_runtime::bundled::fab().unwrap(), Stores::memory());
    let who = h.who("advisor-agent");
    let run = RunContext::new("run-auto", "inc-auto");
    let call = |t: i64| {
        let mut c = CallRequest::new("set_temperature", json!({"equipment": "etch-01", "temp_celsius": t}));
        c.signals = CallSignals { confidence: Some(0.9), ..CallSignals::default() };
        c
    };
    for (i, t) in [385, 380, 385].into_iter().enumerate() {
        h.clock.set(T0 + time::Duration::minutes(i64::try_from(i).unwrap() * 10));
        let out = h.gate.call(&who, &run, &call(t)).await.unwrap();
        assert!(out.result().is_some(), "{i}: {:?}", out.code());
    }
    h.clock.set(T0 + time::Duration::minutes(59));
    let fourth = h.gate.call(&who, &run, &call(380)).await.unwrap();
    assert_eq!((fourth.code(), fourth.level), (Some(Code::ApprovalRequired), Some(ApprovalLevel::Approval)));
    // A dry run only counts: it neither spends a slot nor executes.
    h.clock.set(T0 + time::Duration::minutes(61));
    let mut dry = call(380);
    dry.dry_run = true;
    assert_eq!(h.gate.call(&who, &run, &dry).await.unwrap().code(), None);
    // An hour after the first change, one slot is free again.
    let fifth = h.gate.call(&who, &run, &call(380)).await.unwrap();
    assert!(fifth.result().is_some(), "{:?}", fifth.code());
    let sixth = h.gate.call(&who, &run, &call(385)).await.unwrap();
    assert_eq!(sixth.code(), Some(Code::ApprovalRequired));
}
