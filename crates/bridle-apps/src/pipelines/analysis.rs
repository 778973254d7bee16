//! Seed 001's analysis graph on Bridle's runtime: router → signals → four analysts in parallel
//! with clean context → three evaluators → scoring → verification → back through gather
//! (recording weak areas) while confidence stays under the threshold, else the synthesizer.
//!
//! Analysts are LLM agents with validated outputs (`{score 0–100, confidence 0–1, findings}`;
//! an invalid answer gets one retry, then a degraded analysis with confidence 0). Each analyst
//! branch sees only the entity, the signals and the weak areas to focus on, never another
//! analyst's findings. Evaluators, scoring and verification are code. When the iterations run
//! out the synthesizer still runs, with `forced: true` in the report; `gather` carries the
//! loop's iteration bound as well, so the cycle is bounded by construction. With a [`Recorder`],
//! every analyst call becomes a decision record (input messages, output, tokens, latency, the
//! schema check) for replay and drift.

use std::sync::Arc;

use bridle_core::Code;
use bridle_core::ports::DecisionLog;
use bridle_runtime::agent::{Agent, AgentSpec, CallOptions, DecisionContext};
use bridle_runtime::graph::{
    END, Graph, GraphBuilder, Kind, NodeError, NodeOptions, Reducer, START, State, StateSchema, Target, Update, node_fn,
};
use bridle_runtime::llm::{LlmClient, Message};
use serde_json::{Value, json};

use super::PipelineError;

pub use bridle_runtime::replay::schemas::analyst_schema;

/// The analysts, each a separate agent `analyst.{type}`.
pub const ANALYSTS: [&str; 4] = ["market", "technical", "community", "risk"];
/// The evaluators.
pub const EVALUATORS: [&str; 3] = ["consistency", "evidence", "coverage"];
/// A sub-score under this is a weak area for the next iteration.
pub const WEAK_BELOW: f64 = 50.0;

/// Thresholds of the feedback loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnalysisOptions {
    /// Confidence (0–1) at which verification passes.
    pub confidence_threshold: f64,
    /// Iterations before the synthesizer is forced.
    pub max_iterations: u32,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        Self { confidence_threshold: 0.7, max_iterations: 5 }
    }
}

fn schema() -> StateSchema {
    StateSchema::new()
        .field("entity", Kind::String, Reducer::Replace)
        .field("data", Kind::Object, Reducer::Replace)
        .field("signals", Kind::Array, Reducer::Replace)
        .field("iteration", Kind::Integer, Reducer::Replace)
        .field("analyses", Kind::Array, Reducer::Append)
        .field("evaluations", Kind::Object, Reducer::Merge)
        .field("subscores", Kind::Object, Reducer::Replace)
        .field("analyst_confidence", Kind::Number, Reducer::Replace)
        .field("verification", Kind::Object, Reducer::Replace)
        .field("weak_areas", Kind::Array, Reducer::Replace)
        .field("iteration_history", Kind::Array, Reducer::Append)
        .field("errors", Kind::Array, Reducer::Append)
        .field("report", Kind::Object, Reducer::Replace)
}

/// Where analysts' calls are recorded: a decision log, the tenant the records belong to and the
/// versions in force, so a record says what produced it.
#[derive(Clone)]
pub struct Recorder {
    /// The decision log.
    pub log: Arc<dyn DecisionLog>,
    /// Tenant of the records.
    pub tenant: String,
    /// The tool-schema version in force (`Registry::schema_hash`), when known.
    pub tool_schema_hash: Option<String>,
    /// The policy version in force, when known.
    pub policy_version: Option<String>,
}

impl Recorder {
    /// A recorder into `log` for `tenant`, stamping the versions of `config`.
    pub fn new(log: Arc<dyn DecisionLog>, tenant: &str, config: &bridle_core::config::Config) -> Self {
        Self {
            log,
            tenant: tenant.to_owned(),
            tool_schema_hash: Some(config.registry.schema_hash().to_owned()),
            policy_version: Some(config.policy.version().to_owned()),
        }
    }
}

/// Builds the graph over `client`. Input: `{"entity": "…", "data": {"signals": […]}}`.
pub fn analysis_graph(client: Arc<dyn LlmClient>, options: AnalysisOptions) -> Result<Graph, PipelineError> {
    build(client, options, None)
}

/// [`analysis_graph`] recording every analyst's call in `recorder`'s decision log (one record
/// per call, keyed by the task, so a resumed or retried run never records it twice).
pub fn analysis_graph_recorded(
    client: Arc<dyn LlmClient>,
    options: AnalysisOptions,
    recorder: Recorder,
) -> Result<Graph, PipelineError> {
    build(client, options, Some(recorder))
}

fn build(
    client: Arc<dyn LlmClient>,
    options: AnalysisOptions,
    recorder: Option<Recorder>,
) -> Result<Graph, PipelineError> {
    let agents: Arc<Vec<(String, Agent)>> = Arc::new(
        ANALYSTS
            .iter()
            .map(|t| {
                let spec = AgentSpec::new(
                    format!("analyst.{t}"),
                    format!(
                        "You are the {t} analyst. Judge the entity from the signals only. Answer with a JSON \
                         object: score (0-100), confidence (0-1), findings (one or two sentences)."
                    ),
                    analyst_schema(),
                );
                Agent::new(spec).map(|a| ((*t).to_owned(), a))
            })
            .collect::<Result<_, _>>()?,
    );
    let threshold = options.confidence_threshold;
    let max_iterations = options.max_iterations.max(1);
    GraphBuilder::new("seed001-analysis", schema())
        .node(
            "router",
            node_fn(|s: State, _| async move { Ok(Update::new().set("iteration", s.int("iteration").max(1))) }),
        )
        .node("signals", node_fn(|s: State, _| async move { Ok(Update::new().set("signals", signals(&s))) }))
        .node(
            "analyst",
            node_fn(move |s: State, ctx| analyst(agents.clone(), client.clone(), recorder.clone(), s, ctx)),
        )
        .node("evaluate", node_fn(|_, _| async { Ok(Update::new()) }))
        .node("evaluator", node_fn(|s: State, ctx| async move { evaluator(&s, &ctx) }))
        .node("scoring", node_fn(|s: State, ctx| async move { Ok(scoring(&s, &ctx)) }))
        .node("verification", node_fn(move |s: State, ctx| async move { Ok(verification(&s, &ctx, threshold)) }))
        .node_with("gather", node_fn(|s: State, _| async move { Ok(gather(&s)) }), {
            NodeOptions::default().max_iterations(max_iterations)
        })
        .node("synthesizer", node_fn(move |s: State, _| async move { Ok(synthesize(&s, max_iterations)) }))
        .edge(START, "router")
        .edge("router", "signals")
        .route("signals", &["analyst"], |s| {
            let focus = s.get("weak_areas").cloned().unwrap_or(json!([]));
            ANALYSTS
                .iter()
                .map(|t| {
                    // Clean context: the branch gets no `analyses`, so no anchoring on the others.
                    Target::send(
                        "analyst",
                        json!({
                            "analyst_type": t,
                            "entity": s.get("entity"),
                            "signals": s.get("signals"),
                            "focus": focus,
                            "iteration": s.int("iteration"),
                        }),
                    )
                })
                .collect()
        })
        .edge("analyst", "evaluate")
        .route("evaluate", &["evaluator"], |s| {
            let current = current_analyses(s);
            EVALUATORS.iter().map(|e| Target::send("evaluator", json!({"evaluator": e, "analyses": current}))).collect()
        })
        .edge("evaluator", "scoring")
        .edge("scoring", "verification")
        .route("verification", &["synthesizer", "gather"], move |s| {
            let passed = s.get("verification").and_then(|v| v.get("passed")).and_then(Value::as_bool) == Some(true);
            let exhausted = s.int("iteration") >= i64::from(max_iterations);
            vec![Target::node(if passed || exhausted { "synthesizer" } else { "gather" })]
        })
        .edge("gather", "signals")
        .edge("synthesizer", END)
        .build()
        .map_err(PipelineError::from)
}

/// Signals from the input data: its `signals` list, else its keys.
fn signals(s: &State) -> Value {
    let data = s.get("data").cloned().unwrap_or(Value::Null);
    match data.get("signals") {
        Some(Value::Array(list)) => Value::Array(list.clone()),
        _ => Value::Array(data.as_object().map(|m| m.keys().map(|k| json!(k)).collect()).unwrap_or_default()),
    }
}

async fn analyst(
    agents: Arc<Vec<(String, Agent)>>,
    client: Arc<dyn LlmClient>,
    recorder: Option<Recorder>,
    s: State,
    ctx: bridle_runtime::graph::NodeContext,
) -> Result<Update, NodeError> {
    let kind: String = s.get_as("analyst_type").unwrap_or_default();
    let agent = agents
        .iter()
        .find(|(t, _)| *t == kind)
        .map(|(_, a)| a)
        .ok_or_else(|| NodeError::fatal(format!("no analyst of type `{kind}`")))?;
    let iteration = u32::try_from(s.int("iteration").max(1)).unwrap_or(1);
    let input = json!({
        "entity": s.get("entity"),
        "signals": s.get("signals"),
        "focus_on_weak_areas": s.get("focus"),
    });
    let options = CallOptions { timeout: None, cancel: None };
    let out = agent
        .call_with(client.as_ref(), iteration, vec![Message::user(input.to_string())], &options)
        .await
        .map_err(|e| NodeError::transient(e.code(), e.to_string()))?;
    if let Some(recorder) = &recorder {
        let context = DecisionContext {
            decision_id: format!("{}/{}", ctx.idempotency_key(), out.agent),
            pipeline_run_id: ctx.thread_id().to_owned(),
            tenant: recorder.tenant.clone(),
            created_at: time::OffsetDateTime::now_utc(),
        };
        let mut record = out.decision_record(&context);
        record.tool_schema_hash.clone_from(&recorder.tool_schema_hash);
        record.policy_version.clone_from(&recorder.policy_version);
        bridle_runtime::agent::record_once(recorder.log.as_ref(), &record)
            .await
            .map_err(|e| NodeError::transient(Code::StateUnavailable, format!("decision log: {e}")))?;
    }
    let score = out.value.get("score").and_then(Value::as_f64).unwrap_or(0.0);
    let analysis = json!({
        "type": kind,
        "iteration": iteration,
        "score": score,
        "confidence": out.confidence,
        "degraded": out.is_degraded,
        "findings": out.value.get("findings"),
    });
    ctx.emit("analyst_complete", json!({"type": kind, "iteration": iteration, "degraded": out.is_degraded}));
    let mut update = Update::new().set("analyses", vec![analysis]);
    if out.is_degraded {
        update = update.set("errors", out.errors.iter().map(|e| format!("analyst.{kind}: {e}")).collect::<Vec<_>>());
    }
    Ok(update)
}

/// The analyses of the current iteration.
fn current_analyses(s: &State) -> Vec<Value> {
    let iteration = s.int("iteration").max(1);
    s.get("analyses")
        .and_then(Value::as_array)
        .map(|all| {
            all.iter().filter(|a| a.get("iteration").and_then(Value::as_i64) == Some(iteration)).cloned().collect()
        })
        .unwrap_or_default()
}

fn evaluator(s: &State, ctx: &bridle_runtime::graph::NodeContext) -> Result<Update, NodeError> {
    let name: String = s.get_as("evaluator").unwrap_or_default();
    let analyses: Vec<Value> = s.get_as("analyses").unwrap_or_default();
    let scores: Vec<f64> = analyses.iter().filter_map(|a| a.get("score").and_then(Value::as_f64)).collect();
    #[allow(clippy::cast_precision_loss)]
    let n = analyses.len().max(1) as f64;
    let score = match name.as_str() {
        // Analysts that agree with each other: 100 minus the spread of their scores.
        "consistency" => {
            let (lo, hi) = scores.iter().fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
            if scores.is_empty() { 0.0 } else { (100.0 - (hi - lo)).max(0.0) }
        }
        // Analyses that are not degraded.
        "evidence" => {
            #[allow(clippy::cast_precision_loss)]
            let sound = analyses.iter().filter(|a| a.get("degraded") == Some(&Value::Bool(false))).count() as f64;
            100.0 * sound / n
        }
        // Analysts that answered at all.
        "coverage" => {
            #[allow(clippy::cast_precision_loss)]
            let answered = analyses.len() as f64;
            100.0 * answered / ANALYSTS.len() as f64
        }
        other => return Err(NodeError::fatal(format!("no evaluator `{other}`"))),
    };
    ctx.emit("evaluator_complete", json!({"evaluator": name, "score": score}));
    Ok(Update::new().set("evaluations", json!({ name: {"score": score} })))
}

fn scoring(s: &State, ctx: &bridle_runtime::graph::NodeContext) -> Update {
    let current = current_analyses(s);
    let subscores: serde_json::Map<String, Value> =
        current.iter().filter_map(|a| Some((a.get("type")?.as_str()?.to_owned(), a.get("score")?.clone()))).collect();
    let confidences: Vec<f64> = current.iter().filter_map(|a| a.get("confidence").and_then(Value::as_f64)).collect();
    #[allow(clippy::cast_precision_loss)]
    let mean = if confidences.is_empty() { 0.0 } else { confidences.iter().sum::<f64>() / confidences.len() as f64 };
    // Weighted by how much of the analysis is sound.
    let evidence = s
        .get("evaluations")
        .and_then(|e| e.get("evidence"))
        .and_then(|e| e.get("score"))
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    let confidence = (mean * evidence / 100.0 * 1000.0).round() / 1000.0;
    ctx.emit("scoring_complete", json!({"confidence": confidence}));
    Update::new().set("subscores", subscores).set("analyst_confidence", confidence)
}

fn verification(s: &State, ctx: &bridle_runtime::graph::NodeContext, threshold: f64) -> Update {
    let confidence = s.number("analyst_confidence");
    let passed = confidence >= threshold;
    let result =
        json!({"passed": passed, "confidence": confidence, "threshold": threshold, "iteration": s.int("iteration")});
    ctx.emit(if passed { "verification_pass" } else { "verification_fail" }, result.clone());
    Update::new().set("verification", result)
}

fn gather(s: &State) -> Update {
    let iteration = s.int("iteration").max(1);
    let weak: Vec<String> = s
        .get("subscores")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter(|(_, v)| v.as_f64().is_some_and(|x| x < WEAK_BELOW)).map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    let entry = json!({"iteration": iteration, "confidence": s.number("analyst_confidence"), "weak_areas": weak});
    Update::new().set("iteration", iteration + 1).set("weak_areas", weak).set("iteration_history", vec![entry])
}

fn synthesize(s: &State, max_iterations: u32) -> Update {
    let passed = s.get("verification").and_then(|v| v.get("passed")).and_then(Value::as_bool) == Some(true);
    let iterations = s.int("iteration");
    Update::new().set(
        "report",
        json!({
            "entity": s.get("entity"),
            "confidence": s.number("analyst_confidence"),
            "iterations": iterations,
            "forced": !passed && iterations >= i64::from(max_iterations),
            "subscores": s.get("subscores"),
            "weak_areas": s.get("weak_areas"),
            "degraded_analyses": s.get("errors").and_then(Value::as_array).map_or(0, Vec::len),
        }),
    )
}
