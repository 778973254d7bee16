//! The fab pipeline's two agents — Diagnostician and Advisor — their output schemas and
//! prompts, and their decision records in seed 000's shape (`harness_checks` with
//! `schema_valid`, `params_in_range`, `injection_detected`, `confidence`).

use bridle_core::decision::DecisionRecord;
use bridle_runtime::agent::{AgentOutput, AgentSpec, DecisionContext, advisor_output_schema};
use serde_json::{Value, json};

pub use bridle_runtime::replay::schemas::diagnosis_schema;

/// Agent names (decision records and scripted replies are keyed by them).
pub const DIAGNOSTICIAN: &str = "diagnostician";
/// See [`DIAGNOSTICIAN`].
pub const ADVISOR: &str = "advisor";

/// The Diagnostician's built-in prompt (used when `[[agents]]` registers none).
pub const DIAGNOSTICIAN_PROMPT: &str = "You diagnose semiconductor equipment anomalies. From the anomaly event, list up to \
     five candidate root causes with a confidence between 0 and 1 each and the evidence for it. Answer with a JSON \
     object {\"candidates\": [{\"cause\", \"confidence\", \"evidence\"}]}.";

/// The Advisor's built-in prompt template; `{actions}` becomes the list of tools it may propose.
pub const ADVISOR_PROMPT: &str = "You advise the corrective action for a diagnosed equipment anomaly. Propose exactly \
     one action from this list, with its parameters:\n{actions}\nAnswer with a JSON object {\"action_id\", \
     \"parameters\", \"confidence\", \"reasoning\"}. If an operator rejected an earlier proposal, the reasons are \
     given: propose something different that addresses them.";

/// The Diagnostician, with the registered prompt template when there is one.
pub fn diagnostician(template: Option<&str>) -> AgentSpec {
    AgentSpec::new(DIAGNOSTICIAN, template.unwrap_or(DIAGNOSTICIAN_PROMPT), diagnosis_schema())
}

/// The Advisor, offered the tools it may propose (name and description), with the registered
/// prompt template when there is one (`{actions}` replaced by the list).
pub fn advisor(actions: &[(String, String)], template: Option<&str>) -> AgentSpec {
    let list: Vec<String> = actions.iter().map(|(name, what)| format!("- {name}: {what}")).collect();
    AgentSpec::new(
        ADVISOR,
        template.unwrap_or(ADVISOR_PROMPT).replace("{actions}", &list.join("\n")),
        advisor_output_schema(),
    )
}

/// What the harness checked about one agent call.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Checks {
    /// The answer matched the agent's schema.
    pub schema_valid: bool,
    /// The proposed parameters passed the tool's contract (`None`: not a proposal).
    pub params_in_range: Option<bool>,
    /// The guard refused something in it.
    pub injection_detected: bool,
    /// The confidence the harness acted on.
    pub confidence: f64,
}

/// The decision record of an agent call; `output` is `fallback` when the model gave none.
pub fn record(
    out: Option<&AgentOutput>,
    agent: &str,
    input: &Value,
    fallback: &Value,
    checks: Checks,
    verdict: &str,
    context: &DecisionContext,
) -> DecisionRecord {
    let mut harness = json!({
        "schema_valid": checks.schema_valid,
        "injection_detected": checks.injection_detected,
        "confidence": checks.confidence,
    });
    if let (Some(in_range), Value::Object(m)) = (checks.params_in_range, &mut harness) {
        m.insert("params_in_range".to_owned(), json!(in_range));
    }
    match out {
        Some(out) => {
            let mut r = out.decision_record(context);
            if let (Value::Object(h), Some(schema)) = (&mut harness, r.harness_checks.get("output_schema")) {
                h.insert("output_schema".to_owned(), schema.clone());
            }
            r.harness_checks = harness;
            r.final_verdict = verdict.to_owned();
            if out.is_degraded {
                r.output = fallback.clone();
            }
            r
        }
        None => DecisionRecord {
            decision_id: context.decision_id.clone(),
            pipeline_run_id: context.pipeline_run_id.clone(),
            tenant: context.tenant.clone(),
            agent: agent.to_owned(),
            model: String::new(),
            input: input.clone(),
            output: fallback.clone(),
            prompt_tokens: 0,
            completion_tokens: 0,
            latency_ms: 0,
            harness_checks: harness,
            final_verdict: verdict.to_owned(),
            created_at: context.created_at,
            prompt_hash: None,
            tool_schema_hash: None,
            policy_version: None,
        },
    }
}
