//! Raw configuration as written in `bridle.toml`; nothing here is trusted yet.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::contract::{ApprovalLevel, Mode, ParamRule, ResourceRef, RiskTier};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    pub store: RawStore,
    pub policy: RawPolicy,
    #[serde(default)]
    pub executors: BTreeMap<String, RawExecutor>,
    #[serde(default)]
    pub tools: BTreeMap<String, RawTool>,
    #[serde(default)]
    pub principals: BTreeMap<String, RawPrincipal>,
    #[serde(default)]
    pub approvals: RawApprovals,
    #[serde(default)]
    pub adapter: RawAdapter,
    #[serde(default)]
    pub intake: RawIntake,
    #[serde(default)]
    pub guard: RawGuard,
    #[serde(default)]
    pub runtime: super::runtime::RawRuntime,
    #[serde(default)]
    pub llm: Option<super::runtime::RawLlm>,
    #[serde(default)]
    pub webhooks: super::webhooks::RawWebhooks,
    #[serde(default)]
    pub server: super::server::RawServer,
    #[serde(default)]
    pub adapters: super::adapters::RawAdapters,
    #[serde(default)]
    pub levels: super::decisions::RawLevels,
    #[serde(default)]
    pub diagnosis: super::decisions::RawDiagnosis,
    #[serde(default)]
    pub fallback: Vec<super::decisions::RawFallbackRule>,
    #[serde(default)]
    pub audit: super::audit::RawAudit,
    #[serde(default)]
    pub workflows: super::workflows::RawWorkflows,
    #[serde(default)]
    pub drift: super::drift::RawDrift,
    #[serde(default)]
    pub agents: Vec<super::agents::RawAgent>,
    #[serde(default)]
    pub kill_switch: super::kill::RawKillSwitch,
    #[serde(default)]
    pub history: super::history::RawHistory,
    #[serde(default)]
    pub limits: super::runs::RawLimits,
    #[serde(default)]
    pub taint: super::runs::RawTaint,
    #[serde(default)]
    pub identity: super::runs::RawIdentity,
    #[serde(default)]
    pub auth: super::auth::RawAuth,
}

/// `[guard]`: channel limits and sensitive terms; every field optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuard {
    pub chat_max_chars: Option<usize>,
    pub workflow_max_chars: Option<usize>,
    pub document_max_bytes: Option<usize>,
    #[serde(default)]
    pub sensitive_terms: Vec<String>,
    /// `[guard.model]`: the learned detector's block threshold per channel.
    #[serde(default)]
    pub model: RawGuardModel,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuardModel {
    pub chat: Option<f64>,
    pub workflow: Option<f64>,
    pub document: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStore {
    pub url: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    pub schema: String,
    pub files: Vec<String>,
    #[serde(default)]
    pub expectations: Option<String>,
    #[serde(default)]
    pub version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExecutor {
    pub mode: Mode,
    #[serde(default)]
    pub credential_env: Option<String>,
    #[serde(default)]
    pub credential_file: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTool {
    pub description: String,
    /// A human-readable name for consoles and MCP clients (default: from the name).
    #[serde(default)]
    pub title: Option<String>,
    /// The title in Korean, for the console in Korean (default: `title`).
    #[serde(default)]
    pub title_ko: Option<String>,
    /// The description in Korean, for the console in Korean (default: `description`); never
    /// shown to models.
    #[serde(default)]
    pub description_ko: Option<String>,
    /// Calling it again with the same arguments has no further effect (MCP `idempotentHint`).
    #[serde(default)]
    pub idempotent: bool,
    pub mode: Mode,
    pub scope: String,
    pub risk: RiskTier,
    pub executor: String,
    #[serde(default)]
    pub approval: Option<ApprovalLevel>,
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(default)]
    pub resource: Option<ResourceRef>,
    #[serde(default)]
    pub schema: Option<String>,
    #[serde(default)]
    pub input_schema: Option<toml::Value>,
    /// The JSON Schema of a successful result (inline, like `input_schema`).
    #[serde(default)]
    pub output_schema: Option<toml::Value>,
    #[serde(default)]
    pub params: BTreeMap<String, ParamRule>,
    #[serde(default)]
    pub untrusted_output: bool,
    /// `http:NAME`, `command:NAME` or `mcp:NAME`; absent: in process.
    #[serde(default)]
    pub adapter: Option<String>,
    /// The HTTP request template of an `http:` tool.
    #[serde(default)]
    pub request: Option<super::adapters::RawRequest>,
    /// The upstream tool of an `mcp:` tool (default: the tool's own name).
    #[serde(default)]
    pub upstream_tool: Option<String>,
    /// The pin of the upstream definition an operator reviewed (`sha256:…`, see
    /// `contract::pin`); written by `bridle gateway import` and `bridle gateway pin`.
    #[serde(default)]
    pub upstream_pin: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrincipal {
    pub tenant: String,
    #[serde(default)]
    pub services: Vec<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApprovals {
    #[serde(default = "default_ttl")]
    pub ttl_seconds: u64,
}

impl Default for RawApprovals {
    fn default() -> Self {
        Self { ttl_seconds: default_ttl() }
    }
}

fn default_ttl() -> u64 {
    900
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAdapter {
    #[serde(default)]
    pub memory: Vec<RawMemoryResource>,
    /// `"fab"`: the in-process adapter is the fab simulator over the memory resources.
    #[serde(default)]
    pub simulator: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMemoryResource {
    pub tenant: String,
    pub key: String,
    pub state: toml::Value,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawIntake {
    #[serde(default = "default_max_calls")]
    pub max_calls: usize,
    #[serde(default = "default_max_chars")]
    pub max_chars: usize,
}

impl Default for RawIntake {
    fn default() -> Self {
        Self { max_calls: default_max_calls(), max_chars: default_max_chars() }
    }
}

fn default_max_calls() -> usize {
    crate::answer::DEFAULT_MAX_CALLS
}

fn default_max_chars() -> usize {
    crate::answer::DEFAULT_MAX_CHARS
}
