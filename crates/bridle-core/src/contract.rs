//! Tool contracts and the registry: what a tool is, what its arguments may be, who sees it.
//!
//! A contract is checked statically here (schema, then range, then step). Rules that need the
//! current state (`max_delta`) are declared here but evaluated by the gate after policy.

mod expose;
pub mod pin;
mod rules;
mod schema;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::principal::Principal;
use crate::verdict::Rejection;

pub use rules::{MaxDelta, ParamRule, read_field};
pub use schema::{CompiledSchema, SchemaError};

/// Whether a tool only reads or changes the outside world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Reads state; never changes it.
    Read,
    /// Changes state; runs through approvals and jobs.
    Change,
}

impl Mode {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Change => "change",
        }
    }
}

/// Risk tier of a tool (seed 004's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RiskTier {
    /// Bounded reads.
    Read,
    /// Drafts with no outside effect until a later step.
    Draft,
    /// A single, reversible change.
    LimitedChange,
    /// Broad or irreversible change.
    Destructive,
}

impl RiskTier {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            RiskTier::Read => "read",
            RiskTier::Draft => "draft",
            RiskTier::LimitedChange => "limited_change",
            RiskTier::Destructive => "destructive",
        }
    }
}

/// How much human involvement a call needs; ordered by strictness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalLevel {
    /// Runs without a human.
    Auto,
    /// One grant by an approver other than the requester.
    Approval,
    /// Two grants by distinct approvers, one holding `approval:sign_off`.
    SignOff,
}

impl ApprovalLevel {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ApprovalLevel::Auto => "auto",
            ApprovalLevel::Approval => "approval",
            ApprovalLevel::SignOff => "sign_off",
        }
    }

    /// Parses a stable name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(Self::Auto),
            "approval" => Some(Self::Approval),
            "sign_off" => Some(Self::SignOff),
            _ => None,
        }
    }
}

/// Which argument names the resource a call acts on, and of what kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceRef {
    /// Resource kind as seen by policy (`service`, `equipment`).
    pub kind: String,
    /// Argument holding the resource name.
    pub param: String,
}

/// A registered tool: the only thing a model's proposal can name.
#[derive(Debug, Clone)]
pub struct ToolContract {
    /// Unique name.
    pub name: String,
    /// Human-readable name (`[tools.X] title`, default from the name: `Scale replicas`).
    pub title: String,
    /// What the tool does, shown to models.
    pub description: String,
    /// The title in Korean, for operators (`[tools.X] title_ko`); `None`: `title`.
    pub title_ko: Option<String>,
    /// The description in Korean, for operators only (`[tools.X] description_ko`; never shown
    /// to models, not part of the schema hash); `None`: `description`.
    pub description_ko: Option<String>,
    /// Calling it again with the same arguments has no further effect
    /// (`[tools.X] idempotent = true`; default false).
    pub idempotent: bool,
    /// Read or change.
    pub mode: Mode,
    /// Scope a principal needs to see and call it.
    pub scope: String,
    /// Risk tier.
    pub risk: RiskTier,
    /// Executor identity the adapter uses for it.
    pub executor: String,
    /// Default approval level.
    pub approval: ApprovalLevel,
    /// Adapter timeout.
    pub timeout: Duration,
    /// The argument naming the resource, if any; otherwise the resource is the tenant.
    pub resource: Option<ResourceRef>,
    /// Domain rules per top-level parameter.
    pub params: BTreeMap<String, ParamRule>,
    /// The compiled input schema.
    pub schema: Arc<CompiledSchema>,
    /// The schema of a successful result, when the contract declares one
    /// (`[tools.X] output_schema`; MCP `outputSchema`, and the result becomes the tool result's
    /// `structuredContent`).
    pub output_schema: Option<Arc<CompiledSchema>>,
    /// Its results carry content written outside our control (tickets, web pages, retrieved
    /// documents): a successful call taints its run, and the gate returns the result
    /// spotlighted (`[tools.X] untrusted_output = true`; default false).
    pub untrusted_output: bool,
}

impl ToolContract {
    /// Checks arguments statically: schema, then every range rule, then every step rule.
    pub fn check_arguments(&self, args: &Value) -> Result<(), Rejection> {
        self.schema.check(args)?;
        rules::check_ranges(&self.params, args)?;
        rules::check_steps(&self.params, args)
    }

    /// The resource a call acts on: `(kind, name)`; the tenant itself when the tool names none.
    pub fn resource_of(&self, tenant: &str, args: &Value) -> (String, String) {
        match &self.resource {
            Some(r) => {
                let name = args.get(&r.param).and_then(Value::as_str).unwrap_or_default();
                (r.kind.clone(), name.to_owned())
            }
            None => ("tenant".to_owned(), tenant.to_owned()),
        }
    }

    /// Parameters whose text the guard must scan.
    pub fn scanned_params(&self) -> impl Iterator<Item = &str> {
        self.params.iter().filter(|(_, r)| r.scan).map(|(k, _)| k.as_str())
    }
}

/// All registered tools, by name.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<ToolContract>>,
    schema_hash: String,
}

impl Registry {
    /// Builds a registry from contracts (names are unique by construction of the map).
    pub fn new(tools: impl IntoIterator<Item = ToolContract>) -> Self {
        let tools: BTreeMap<String, Arc<ToolContract>> =
            tools.into_iter().map(|t| (t.name.clone(), Arc::new(t))).collect();
        let schema_hash = schema_hash(&tools);
        Self { tools, schema_hash }
    }

    /// The tool-schema version: SHA-256 (hex) of the RFC 8785 form of every contract (name,
    /// description, mode, scope, risk, executor, level, timeout, resource, domain rules, input
    /// schema, untrusted output), ordered by name. Any change to what a model may call, or to
    /// how its arguments are checked, changes it; every audit event and decision record carries it.
    pub fn schema_hash(&self) -> &str {
        &self.schema_hash
    }

    /// Looks a tool up.
    pub fn get(&self, name: &str) -> Option<&Arc<ToolContract>> {
        self.tools.get(name)
    }

    /// Every tool, ordered by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ToolContract>> {
        self.tools.values()
    }

    /// Tools the principal's scopes allow, and for a credential that belongs to an agent, that
    /// agent's tools within its risk ceiling: the list to show a model. Exposure is a convenience,
    /// not the boundary; every call is still checked.
    pub fn model_tools(&self, principal: &Principal, agents: &impl Exposure) -> Vec<&Arc<ToolContract>> {
        self.tools.values().filter(|t| principal.has_scope(&t.scope)).filter(|t| agents.exposes(principal, t)).collect()
    }

    /// [`Self::model_tools`] in MCP `tools/list` format.
    pub fn mcp_tools(&self, principal: &Principal, agents: &impl Exposure) -> Value {
        Value::Array(self.model_tools(principal, agents).iter().map(|t| expose::mcp(t)).collect())
    }

    /// [`Self::model_tools`] in OpenAI function-calling format.
    pub fn openai_tools(&self, principal: &Principal, agents: &impl Exposure) -> Value {
        Value::Array(self.model_tools(principal, agents).iter().map(|t| expose::openai(t)).collect())
    }
}

/// Which tools a credential may be shown beyond its scopes: the agent registry answers it
/// (`bridle_core::agents::AgentRegistry`), so contracts need not know about agents.
pub trait Exposure {
    /// Whether `tool` is offered to `principal`'s agent.
    fn exposes(&self, principal: &Principal, tool: &ToolContract) -> bool;
}

impl<T: Exposure + ?Sized> Exposure for Arc<T> {
    fn exposes(&self, principal: &Principal, tool: &ToolContract) -> bool {
        (**self).exposes(principal, tool)
    }
}

fn schema_hash(tools: &BTreeMap<String, Arc<ToolContract>>) -> String {
    use sha2::{Digest, Sha256};
    let contracts: Vec<Value> = tools
        .values()
        .map(|t| {
            let mut contract = serde_json::json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "idempotent": t.idempotent,
                "mode": t.mode,
                "scope": t.scope,
                "risk": t.risk.as_str(),
                "executor": t.executor,
                "approval": t.approval,
                "timeout_ms": u64::try_from(t.timeout.as_millis()).unwrap_or(u64::MAX),
                "resource": t.resource,
                "params": t.params,
                "schema": t.schema.source(),
                "untrusted_output": t.untrusted_output,
            });
            // Only when declared, so registries without one keep the hash they had.
            if let (Some(output), Some(fields)) = (&t.output_schema, contract.as_object_mut()) {
                fields.insert("output_schema".into(), output.source().clone());
            }
            contract
        })
        .collect();
    // INVARIANT: contracts hold strings, finite numbers (validated rules) and JSON schemas, all
    // canonicalizable; a failure would hash the empty input, which no real registry produces.
    let bytes = crate::plan::canonical_value_bytes(&Value::Array(contracts)).unwrap_or_default();
    hex::encode(Sha256::digest(&bytes))
}
