//! The first phase of reading a workflow file: TOML into raw sections, one table at a time, so
//! an unknown field in one node does not hide the problems of the others.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// `[workflow]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHeader {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub principal: String,
    pub start: String,
}

/// `[nodes.NAME]`, by `kind`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RawNode {
    Tool {
        tool: String,
        #[serde(default)]
        arguments: BTreeMap<String, Value>,
        #[serde(default)]
        bind: BTreeMap<String, String>,
        #[serde(default)]
        output: Option<String>,
        #[serde(default)]
        on_refused: Option<String>,
        #[serde(default)]
        next: Option<String>,
    },
    AiAnalysis {
        #[serde(default)]
        agent: Option<String>,
        prompt: String,
        #[serde(default)]
        inputs: Vec<String>,
        #[serde(default)]
        parameters: BTreeMap<String, Value>,
        output_schema: Value,
        #[serde(default)]
        output: Option<String>,
        #[serde(default)]
        next: Option<String>,
    },
    Condition {
        expr: String,
        then: String,
        #[serde(rename = "else")]
        otherwise: String,
    },
    Loop {
        #[serde(rename = "while")]
        condition: String,
        body: String,
        #[serde(default)]
        max_iterations: Option<i64>,
        #[serde(default)]
        next: Option<String>,
    },
    Parallel {
        branches: Vec<String>,
        #[serde(default)]
        reduce: Option<String>,
        output: String,
        #[serde(default)]
        next: Option<String>,
    },
    Approval {
        message: String,
        #[serde(default)]
        payload: BTreeMap<String, String>,
        #[serde(default)]
        output: Option<String>,
        #[serde(default)]
        next: Option<String>,
    },
}

/// The top-level keys a workflow file may have.
pub const SECTIONS: &[&str] = &["workflow", "state", "nodes"];

/// Node kinds, for the message about an unknown one.
pub const KINDS: &[&str] = &["tool", "ai_analysis", "condition", "loop", "parallel", "approval"];
