//! Seed 001's analysis graph on the scripted model: the confidence loop-back with weak areas,
//! the forced synthesis at the iteration bound, clean context for analysts, degraded analysts.

use std::sync::Arc;

use bridle_apps::pipelines::analysis::{ANALYSTS, AnalysisOptions, analysis_graph};
use bridle_runtime::graph::RunConfig;
use bridle_runtime::llm::ScriptedModel;
use bridle_runtime::llm::scripted::ScriptedReply;
use serde_json::{Value, json};

/// Replies for `iterations` turns: `score(analyst, turn)` and `confidence(turn)`.
fn script(iterations: u32, score: impl Fn(&str, u32) -> f64, confidence: impl Fn(u32) -> f64) -> Arc<ScriptedModel> {
    let mut replies = Vec::new();
    for turn in 1..=iterations {
        for a in ANALYSTS {
            replies.push(ScriptedReply {
                agent: Some(format!("analyst.{a}")),
                turn: Some(turn),
                json: Some(json!({"score": score(a, turn), "confidence": confidence(turn), "findings": format!("{a} looks steady in turn {turn}")})),
                ..ScriptedReply::default()
            });
        }
    }
    Arc::new(ScriptedModel::new("scripted", replies).unwrap())
}

fn input() -> Value {
    json!({"entity": "checkout-service", "data": {"signals": ["p99 latency up 40%", "error rate 2.1%"]}})
}

#[tokio::test]
async fn low_confidence_loops_back_through_gather_with_weak_areas_then_synthesizes() {
    // Turn 1: confidence 0.4 and a weak `risk` score; turn 2: confidence 0.9.
    let model = script(2, |a, t| if a == "risk" && t == 1 { 30.0 } else { 80.0 }, |t| if t == 1 { 0.4 } else { 0.9 });
    let graph = analysis_graph(model.clone(), AnalysisOptions::default()).unwrap();
    let out = graph.invoke(RunConfig::new("a-1"), input()).await.unwrap();
    let report = &out.state["report"];
    assert_eq!(report["iterations"], 2);
    assert_eq!(report["forced"], false);
    assert_eq!(report["confidence"], 0.9);
    assert_eq!(out.state["iteration_history"], json!([{"iteration": 1, "confidence": 0.4, "weak_areas": ["risk"]}]));
    assert_eq!(out.state["analyses"].as_array().unwrap().len(), 8);
    // The second round focuses on the weak area.
    let second_risk = model.requests().into_iter().find(|r| r.agent == "analyst.risk" && r.turn == 2).unwrap();
    assert!(second_risk.messages.last().unwrap().content.contains("\"focus_on_weak_areas\":[\"risk\"]"));
}

#[tokio::test]
async fn confidence_that_never_rises_stops_at_the_iteration_bound_with_a_forced_report() {
    let model = script(5, |_, _| 60.0, |_| 0.3);
    let graph =
        analysis_graph(model.clone(), AnalysisOptions { confidence_threshold: 0.7, max_iterations: 5 }).unwrap();
    let out = graph.invoke(RunConfig::new("a-2"), input()).await.unwrap();
    assert_eq!(out.state["report"]["iterations"], 5);
    assert_eq!(out.state["report"]["forced"], true);
    assert_eq!(out.state["iteration_history"].as_array().unwrap().len(), 4);
    assert_eq!(model.requests().len(), 20, "4 analysts × 5 iterations");
}

#[tokio::test]
async fn analysts_see_only_their_own_context() {
    let model = script(1, |_, _| 90.0, |_| 0.95);
    let graph = analysis_graph(model.clone(), AnalysisOptions::default()).unwrap();
    graph.invoke(RunConfig::new("a-3"), input()).await.unwrap();
    for request in model.requests() {
        let text: String = request.messages.iter().map(|m| m.content.clone()).collect();
        assert!(!text.contains("looks steady"), "{} saw another analyst's findings", request.agent);
        assert!(text.contains("p99 latency up 40%"));
    }
}

#[tokio::test]
async fn an_analyst_whose_answers_fail_validation_is_degraded_not_fatal() {
    let mut replies = Vec::new();
    for a in ANALYSTS {
        let json = if a == "market" {
            json!({"score": 500, "confidence": 2})
        } else {
            json!({"score": 80, "confidence": 0.9, "findings": "all signals are within range"})
        };
        replies.push(ScriptedReply {
            agent: Some(format!("analyst.{a}")),
            turn: Some(1),
            json: Some(json),
            ..ScriptedReply::default()
        });
    }
    let model = Arc::new(ScriptedModel::new("scripted", replies).unwrap());
    let graph =
        analysis_graph(model.clone(), AnalysisOptions { confidence_threshold: 0.5, max_iterations: 1 }).unwrap();
    let out = graph.invoke(RunConfig::new("a-4"), input()).await.unwrap();
    let market = out.state["analyses"].as_array().unwrap().iter().find(|a| a["type"] == "market").unwrap().clone();
    assert_eq!((market["degraded"].clone(), market["confidence"].clone()), (json!(true), json!(0.0)));
    assert_eq!(out.state["errors"].as_array().unwrap().len(), 2, "both attempts' errors kept");
    assert_eq!(model.requests().iter().filter(|r| r.agent == "analyst.market").count(), 2, "one retry");
    // Three sound analysts of four: evidence 75, confidence 0.675 × … = (0.9·3 + 0)/4 · 0.75
    assert_eq!(out.state["analyst_confidence"], 0.506);
    assert_eq!(out.state["report"]["degraded_analyses"], 2);
}

#[tokio::test]
async fn every_analyst_call_becomes_one_decision_record() {
    use bridle_apps::pipelines::analysis::{Recorder, analysis_graph_recorded};
    let stores = bridle_runtime::store::Stores::memory();
    let model = script(2, |a, t| if a == "risk" && t == 1 { 30.0 } else { 80.0 }, |t| if t == 1 { 0.4 } else { 0.9 });
    let config = bridle_runtime::bundled::checkout().unwrap();
    let recorder = Recorder::new(stores.decisions.clone(), "tenant-a", &config);
    let graph = analysis_graph_recorded(model, AnalysisOptions::default(), recorder).unwrap();
    graph.invoke(RunConfig::new("a-5"), input()).await.unwrap();
    let records = stores.decisions.recent("tenant-a", 100).await.unwrap();
    assert_eq!(records.len(), 8, "4 analysts × 2 iterations");
    assert!(records.iter().all(|r| r.pipeline_run_id == "a-5" && r.final_verdict == "accepted"));
    let risk_1 = records.iter().find(|r| r.agent == "analyst.risk" && r.output["score"] == 30.0).unwrap();
    assert_eq!(risk_1.harness_checks["output_schema"]["passed"], true);
    assert!(risk_1.input.to_string().contains("p99 latency up 40%"), "the input messages are kept for replay");
    // Every record says what produced it: prompt, tool schema and policy versions.
    for r in &records {
        assert!(r.prompt_hash.as_deref().is_some_and(|h| h.len() == 64), "{r:?}");
        assert_eq!(r.tool_schema_hash.as_deref(), Some(config.registry.schema_hash()));
        assert_eq!(r.policy_version.as_deref(), Some(config.policy.version()));
    }
    let mut ids: Vec<&str> = records.iter().map(|r| r.decision_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 8, "one id per task");
}
