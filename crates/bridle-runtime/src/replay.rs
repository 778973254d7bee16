//! Replay: recorded decisions asked again of a model, compared with what was recorded
//! (`bridle replay`). Nothing is executed: a replayed proposal is only checked against its
//! tool's contract, as the gate's step 3 would.
//!
//! A record is replayable when its `input` is the message list the agent sent (every agent
//! call records it so); the request goes to the model with the record's agent name, so a
//! scripted model can answer by the messages' hash (`llm::messages_hash`). The answer is read
//! like the agent reads it (JSON, a fenced block tolerated), validated against the agent's
//! output schema when the agent is known (`diagnostician`, `advisor`, `analyst.*`), and compared
//! by [`bridle_core::replay::compare`]. `--run` replays one pipeline run's records in order and
//! stops at the first that disagrees, naming its agent. `bridle_apps::replay_html` draws the report.

pub mod gate;
pub mod schemas;

use std::collections::BTreeMap;
use std::sync::Arc;

use bridle_core::contract::Registry;
use bridle_core::decision::DecisionRecord;
use bridle_core::replay::{self as compare, AgentAgreement, Comparison, ReplayedChecks, Tolerance};
use serde::Serialize;
use serde_json::Value;

use crate::agent::{Agent, AgentSpec, advisor_output_schema};
use crate::llm::{ChatRequest, LlmClient, Message};
use schemas::{analyst_schema, diagnosis_schema};

/// One decision replayed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayItem {
    /// The record.
    pub decision_id: String,
    /// Its run.
    pub pipeline_run_id: String,
    /// Its agent.
    pub agent: String,
    /// What was recorded.
    pub recorded: Value,
    /// What the model answered now (`null` when it could not be asked or failed).
    pub replayed: Value,
    /// The comparison (`None` on an error).
    pub comparison: Option<Comparison>,
    /// Why it could not be replayed.
    pub error: Option<String>,
}

/// A replay of many decisions on one model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// A label for the model (its name as it reported it, or the config's path).
    pub model: String,
    /// Decisions replayed.
    pub total: usize,
    /// Of which agreed in full.
    pub agree: usize,
    /// Per agent.
    pub agents: Vec<AgentAgreement>,
    /// Every decision, in the order replayed.
    pub items: Vec<ReplayItem>,
}

impl ReplayReport {
    /// `agree / total` (1 when empty).
    pub fn rate(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        if self.total == 0 { 1.0 } else { self.agree as f64 / self.total as f64 }
    }

    /// The decisions that disagreed or failed.
    pub fn disagreements(&self) -> impl Iterator<Item = &ReplayItem> {
        self.items.iter().filter(|i| !i.comparison.as_ref().is_some_and(|c| c.agree))
    }
}

/// Where a run's replay first diverged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDivergence {
    /// The run.
    pub run_id: String,
    /// Records replayed up to and including the divergence.
    pub replayed: usize,
    /// Records of the run.
    pub recorded: usize,
    /// The first decision that disagreed (`None`: the whole run agrees).
    pub first: Option<ReplayItem>,
}

/// Asks recorded inputs of a model.
pub struct Replayer {
    client: Arc<dyn LlmClient>,
    registry: Arc<Registry>,
    tolerance: Tolerance,
    agents: BTreeMap<String, Agent>,
}

impl std::fmt::Debug for Replayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replayer").field("tolerance", &self.tolerance).finish_non_exhaustive()
    }
}

/// The output schema of a known agent.
fn schema_for(agent: &str) -> Option<Value> {
    match agent {
        "diagnostician" => Some(diagnosis_schema()),
        "advisor" => Some(advisor_output_schema()),
        a if a.starts_with("analyst.") => Some(analyst_schema()),
        _ => None,
    }
}

impl Replayer {
    /// Replays on `client`; proposals are checked against `registry`'s contracts.
    pub fn new(client: Arc<dyn LlmClient>, registry: Arc<Registry>, tolerance: Tolerance) -> Self {
        Self { client, registry, tolerance, agents: BTreeMap::new() }
    }

    fn agent(&mut self, name: &str) -> Option<&Agent> {
        if !self.agents.contains_key(name) {
            let schema = schema_for(name)?;
            let agent = Agent::new(AgentSpec::new(name, "", schema)).ok()?;
            self.agents.insert(name.to_owned(), agent);
        }
        self.agents.get(name)
    }

    /// Replays one record.
    pub async fn replay(&mut self, record: &DecisionRecord) -> ReplayItem {
        let mut item = ReplayItem {
            decision_id: record.decision_id.clone(),
            pipeline_run_id: record.pipeline_run_id.clone(),
            agent: record.agent.clone(),
            recorded: record.output.clone(),
            replayed: Value::Null,
            comparison: None,
            error: None,
        };
        let messages: Vec<Message> = match serde_json::from_value(record.input.clone()) {
            Ok(m) => m,
            Err(_) => {
                item.error = Some("the recorded input is not a message list (the model was never asked)".into());
                return item;
            }
        };
        let request = ChatRequest {
            json_mode: schema_for(&record.agent).is_some(),
            ..ChatRequest::new(&record.agent, 1, messages)
        };
        let content = match self.client.chat(&request).await {
            Ok(response) => response.content,
            Err(e) => {
                item.error = Some(format!("{}: {e}", e.code().as_str()));
                return item;
            }
        };
        let parsed = crate::agent::parse_json(&content).unwrap_or(Value::String(content.clone()));
        let schema_valid = match self.agent(&record.agent) {
            Some(agent) => agent.validate(&content).is_ok(),
            None => true,
        };
        // A tool this configuration does not register cannot be checked here: no verdict on it.
        let params_in_range = parsed.get("action_id").and_then(Value::as_str).and_then(|tool| {
            let args = parsed.get("parameters").cloned().unwrap_or(Value::Null);
            self.registry.get(tool).map(|t| t.check_arguments(&args).is_ok())
        });
        let checks = ReplayedChecks { schema_valid, params_in_range };
        item.comparison =
            Some(compare::compare(&record.output, &record.harness_checks, &parsed, checks, &self.tolerance));
        item.replayed = parsed;
        item
    }

    /// Replays `records` in order, telling `progress` after each (done, total).
    pub async fn replay_all(
        &mut self,
        model: &str,
        records: &[DecisionRecord],
        mut progress: impl FnMut(usize, usize),
    ) -> ReplayReport {
        let mut items = Vec::with_capacity(records.len());
        for (i, record) in records.iter().enumerate() {
            items.push(self.replay(record).await);
            progress(i.saturating_add(1), records.len());
        }
        let agents = compare::by_agent(items.iter().map(|i| (i.agent.as_str(), i.comparison.as_ref())));
        let agree = items.iter().filter(|i| i.comparison.as_ref().is_some_and(|c| c.agree)).count();
        ReplayReport { model: model.to_owned(), total: items.len(), agree, agents, items }
    }

    /// Replays a run's records oldest first and stops at the first that disagrees.
    pub async fn replay_run(&mut self, run_id: &str, records: &[DecisionRecord]) -> RunDivergence {
        let mut ordered: Vec<&DecisionRecord> = records.iter().filter(|r| r.pipeline_run_id == run_id).collect();
        ordered.sort_by(|a, b| a.created_at.cmp(&b.created_at).then_with(|| a.decision_id.cmp(&b.decision_id)));
        let recorded = ordered.len();
        for (i, record) in ordered.into_iter().enumerate() {
            let item = self.replay(record).await;
            if !item.comparison.as_ref().is_some_and(|c| c.agree) {
                return RunDivergence {
                    run_id: run_id.to_owned(),
                    replayed: i.saturating_add(1),
                    recorded,
                    first: Some(item),
                };
            }
        }
        RunDivergence { run_id: run_id.to_owned(), replayed: recorded, recorded, first: None }
    }
}

/// Two reports on the same decisions, side by side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AbReport {
    /// On model A.
    pub a: ReplayReport,
    /// On model B.
    pub b: ReplayReport,
    /// Decisions where A and B agree with each other.
    pub a_b_agree: usize,
}

impl AbReport {
    /// Compares the two replays item by item (same records, same order).
    pub fn new(a: ReplayReport, b: ReplayReport, tolerance: &Tolerance) -> Self {
        let none = ReplayedChecks { schema_valid: true, params_in_range: None };
        let a_b_agree = a
            .items
            .iter()
            .zip(&b.items)
            .filter(|(x, y)| {
                x.error.is_none()
                    && y.error.is_none()
                    && compare::compare(&x.replayed, &Value::Null, &y.replayed, none, tolerance).agree
            })
            .count();
        Self { a, b, a_b_agree }
    }
}
