//! Declarative workflows: TOML files operators write without Rust, read in two phases (raw
//! tables with unknown fields refused → a validated [`Workflow`], every problem listed with
//! its path) and run by the runtime on its graph engine.
//!
//! Node kinds: `tool` (a call through the gate), `ai_analysis` (a model call whose answer must
//! fit an output schema, its parameters through the input guard), `condition` (a CEL
//! expression over the state choosing `then` or `else`), `loop` (a CEL `while` with a hard bound
//! of at most [`MAX_LOOP_BOUND`] iterations), `parallel` (branches fanned out and reduced into one
//! state key) and `approval` (a human pause whose payload is made from the state). This module
//! holds values and pure checks only: no I/O, no async runtime.

mod expr;
mod raw;
mod validate;

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::code::Code;
use crate::config::Config;
use crate::verdict::Rejection;

pub use expr::{Expr, ExprError, MAX_SOURCE_BYTES as MAX_EXPR_BYTES, from_cel, to_cel};

/// Most iterations a `loop` node may allow.
pub const MAX_LOOP_BOUND: u32 = 100;

/// The target name that ends the run (`next = "end"`).
pub const END: &str = "end";

/// One problem of a workflow file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted location (`nodes.check.expr`).
    pub at: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

/// Every problem found in a workflow file (`workflow_invalid`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct WorkflowError {
    /// The problems, in file order where one exists.
    pub problems: Vec<Problem>,
}

impl fmt::Display for WorkflowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {} problem(s) in the workflow:", Code::WorkflowInvalid.as_str(), self.problems.len())?;
        for p in &self.problems {
            writeln!(f, "  - {p}")?;
        }
        Ok(())
    }
}

impl WorkflowError {
    /// The rejection carrying every problem (`workflow_invalid`).
    pub fn rejection(&self) -> Rejection {
        let list: Vec<String> = self.problems.iter().map(ToString::to_string).collect();
        Rejection::new(Code::WorkflowInvalid, list.join("; ")).with_detail(serde_json::json!({
            "problems": self.problems.iter().map(|p| serde_json::json!({"at": p.at, "message": p.message})).collect::<Vec<_>>(),
        }))
    }
}

/// The JSON type of a state key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateType {
    /// Anything.
    Any,
    /// `true` / `false`.
    Bool,
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl StateType {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "any" => Self::Any,
            "bool" => Self::Bool,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "string" => Self::String,
            "array" => Self::Array,
            "object" => Self::Object,
            _ => return None,
        })
    }
}

/// Where a node leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Another node.
    Node(String),
    /// The end of the run (or of a parallel branch).
    End,
}

/// What a tool node does when the gate refuses its call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRefused {
    /// The run fails with the gate's code (the default).
    Fail,
    /// The refusal is written to the output (`status = "refused"`) and the run goes on.
    Continue,
}

/// How a parallel node combines its branches' results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    /// An object keyed by branch name.
    Merge,
    /// An array, in branch order.
    Append,
}

/// A call through the gate.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolNode {
    /// Registered tool.
    pub tool: String,
    /// Literal arguments.
    pub arguments: BTreeMap<String, Value>,
    /// Arguments computed from the state.
    pub bind: BTreeMap<String, Expr>,
    /// State key receiving `{status, result, code, …}`.
    pub output: Option<String>,
    /// A refusal fails the run or is written to the output.
    pub on_refused: OnRefused,
}

/// A model call with a validated answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AiNode {
    /// Agent name (decision records and scripted replies are keyed by it).
    pub agent: String,
    /// System prompt.
    pub prompt: String,
    /// State keys sent to the model.
    pub inputs: Vec<String>,
    /// Operator parameters (each through the input guard, at most the workflow channel's limit).
    pub parameters: BTreeMap<String, Value>,
    /// JSON Schema (draft 2020-12) of the answer.
    pub output_schema: Value,
    /// State key receiving the answer.
    pub output: Option<String>,
}

/// A loop: while `condition` holds, run `body` (which leads back here), at most `max_iterations`.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopNode {
    /// CEL, evaluated each time the loop is reached.
    pub condition: Expr,
    /// First node of the body.
    pub body: String,
    /// Hard bound (1–100); one more true condition stops the run with `max_iterations_exceeded`.
    pub max_iterations: u32,
}

/// A node's behaviour.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A gate call.
    Tool(ToolNode),
    /// A model call.
    AiAnalysis(AiNode),
    /// A CEL choice between `then` and `otherwise`.
    Condition {
        /// The condition.
        expr: Expr,
        /// Where a true condition leads.
        then: Next,
        /// Where a false condition leads.
        otherwise: Next,
    },
    /// A bounded loop.
    Loop(LoopNode),
    /// Branches run concurrently, their results reduced into `output`.
    Parallel {
        /// Branch nodes (tool or ai_analysis nodes without `next` or `output`).
        branches: Vec<String>,
        /// How results combine.
        reduce: Reduce,
        /// State key of the reduced result.
        output: String,
    },
    /// A human pause.
    Approval {
        /// What the human is asked.
        message: String,
        /// Payload fields computed from the state.
        payload: BTreeMap<String, Expr>,
        /// State key receiving the human's answer.
        output: Option<String>,
    },
}

/// A validated node.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Name (the table's key).
    pub name: String,
    /// Behaviour.
    pub kind: NodeKind,
    /// Where it leads (`None` for conditions, and for parallel branches, which lead to their join).
    pub next: Option<Next>,
    /// The parallel node this one is a branch of.
    pub branch_of: Option<String>,
}

impl Node {
    /// The kind's name as written in files.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            NodeKind::Tool(_) => "tool",
            NodeKind::AiAnalysis(_) => "ai_analysis",
            NodeKind::Condition { .. } => "condition",
            NodeKind::Loop(_) => "loop",
            NodeKind::Parallel { .. } => "parallel",
            NodeKind::Approval { .. } => "approval",
        }
    }
}

/// A validated workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct Workflow {
    /// Name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The configuration's principal its calls act as.
    pub principal: String,
    /// First node.
    pub start: String,
    /// Declared state keys and their types.
    pub state: BTreeMap<String, StateType>,
    /// Nodes by name.
    pub nodes: BTreeMap<String, Node>,
    /// SHA-256 (hex) of the file's text: a resume with a changed file is refused.
    pub digest: String,
}

impl Workflow {
    /// Reads and validates a workflow file's text against `config` (tools, principals, the guard's
    /// workflow limit), listing every problem at once.
    pub fn parse(text: &str, config: &Config) -> Result<Self, WorkflowError> {
        validate::parse(text, config)
    }

    /// How many nodes it has (the deadline scales with it).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Super-steps a run may take at most: every node once per iteration of every loop.
    pub fn step_bound(&self) -> u64 {
        let nodes = u64::try_from(self.nodes.len()).unwrap_or(u64::MAX);
        let per_visit = self
            .nodes
            .values()
            .filter_map(|n| match &n.kind {
                NodeKind::Loop(l) => Some(u64::from(l.max_iterations) + 1),
                _ => None,
            })
            .fold(1u64, u64::saturating_mul);
        nodes.saturating_mul(per_visit).saturating_add(2).min(1_000_000)
    }
}
