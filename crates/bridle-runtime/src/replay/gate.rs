//! The release gate (`bridle replay --gate THRESHOLD`): passes when the replay's agreement on
//! the recorded set is at least the threshold, and names which versions changed relative to the
//! records (model, prompt, tool schema, policy), so a failing CI job says what it blocked.

use std::collections::BTreeSet;

use bridle_core::config::Config;
use bridle_core::decision::DecisionRecord;
use serde::Serialize;

use super::ReplayReport;

/// One version that differs between the records and what is in force now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionChange {
    /// `model`, `prompt`, `tool_schema` or `policy`.
    pub what: &'static str,
    /// The agent it concerns (`None`: every agent; tool schema and policy are configuration-wide).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The distinct values the records carry.
    pub recorded: Vec<String>,
    /// The value in force now.
    pub current: String,
}

/// The gate's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateVerdict {
    /// Agreement reached is at least the threshold.
    pub passed: bool,
    /// Agreement reached (0–1).
    pub agreement: f64,
    /// Threshold asked (0–1).
    pub threshold: f64,
    /// Decisions compared.
    pub total: usize,
    /// Versions that changed relative to the records.
    pub changes: Vec<VersionChange>,
}

impl GateVerdict {
    /// Why it failed (or passed), in one line.
    pub fn summary(&self) -> String {
        let changed: Vec<String> = self
            .changes
            .iter()
            .map(|c| match &c.agent {
                Some(a) => format!("{} of `{a}`", c.what),
                None => c.what.to_owned(),
            })
            .collect();
        let changed = if changed.is_empty() {
            "no version changed".to_owned()
        } else {
            format!("changed: {}", changed.join(", "))
        };
        format!(
            "release gate {}: agreement {:.1}% on {} recorded decisions, threshold {:.1}% ({changed})",
            if self.passed { "passed" } else { "FAILED" },
            self.agreement * 100.0,
            self.total,
            self.threshold * 100.0,
        )
    }
}

/// Judges `report` (a replay of `records` on `model_label`'s model) against `threshold`, and
/// compares the records' versions with `config`'s: each agent's registered model and prompt
/// version (or, with `replay_model`, that model), the tool-schema and the policy versions.
/// Records written before versions were recorded carry none and count as unchanged.
pub fn judge(
    report: &ReplayReport,
    records: &[DecisionRecord],
    config: &Config,
    replay_model: Option<&str>,
    threshold: f64,
) -> GateVerdict {
    let mut changes = Vec::new();
    let agents: BTreeSet<&str> = records.iter().map(|r| r.agent.as_str()).collect();
    for agent in agents {
        let mine: Vec<&DecisionRecord> = records.iter().filter(|r| r.agent == agent).collect();
        let entry = config.agents.get(agent);
        let current_model = replay_model.map(str::to_owned).or_else(|| entry.map(|e| e.model.clone()));
        if let Some(current) = current_model {
            let recorded = distinct(mine.iter().map(|r| Some(r.model.as_str())));
            if !recorded.is_empty() && recorded.iter().any(|m| *m != current) {
                changes.push(VersionChange { what: "model", agent: Some(agent.to_owned()), recorded, current });
            }
        }
        if let Some(entry) = entry {
            let recorded = distinct(mine.iter().map(|r| r.prompt_hash.as_deref()));
            if recorded.iter().any(|h| *h != entry.prompt_hash) {
                changes.push(VersionChange {
                    what: "prompt",
                    agent: Some(agent.to_owned()),
                    recorded,
                    current: entry.prompt_hash.clone(),
                });
            }
        }
    }
    let config_wide = [
        (
            "tool_schema",
            config.registry.schema_hash().to_owned(),
            distinct(records.iter().map(|r| r.tool_schema_hash.as_deref())),
        ),
        ("policy", config.policy.version().to_owned(), distinct(records.iter().map(|r| r.policy_version.as_deref()))),
    ];
    for (what, current, recorded) in config_wide {
        if recorded.iter().any(|v| *v != current) {
            changes.push(VersionChange { what, agent: None, recorded, current });
        }
    }
    let agreement = report.rate();
    GateVerdict {
        passed: report.total > 0 && agreement >= threshold,
        agreement,
        threshold,
        total: report.total,
        changes,
    }
}

fn distinct<'a>(values: impl Iterator<Item = Option<&'a str>>) -> Vec<String> {
    values.flatten().filter(|v| !v.is_empty()).map(str::to_owned).collect::<BTreeSet<_>>().into_iter().collect()
}
