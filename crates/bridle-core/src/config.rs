//! Configuration in two phases: `bridle.toml` is read into raw values (unknown fields refused),
//! then validated into a ready [`Config`], collecting every error before failing.
//!
//! This module parses strings only; reading files is the caller's job through [`Files`].

mod adapters;
mod agents;
mod audit;
mod auth;
mod bounds;
mod decisions;
mod drift;
mod history;
mod kill;
mod raw;
mod runs;
mod runtime;
mod server;
mod validate;
mod webhooks;
mod workflows;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::answer::IntakeLimits;
use crate::contract::{Mode, Registry};
use crate::policy::PolicyEngine;
use crate::principal::Principal;

pub use adapters::{
    AdapterSettings, CommandAdapterSettings, ContextField, HttpAdapterSettings, McpAdapterSettings, McpUpstream,
    PlaceholderError, RequestBody, ToolRoute, placeholders,
};
pub use audit::{AuditSettings, EvidenceMode};
pub use auth::{AuthSettings, ClaimNames};
pub use bounds::{
    MAX_DESCRIPTION_CHARS, MAX_KEY_BYTES, MAX_LIST_ITEMS, MAX_NAME_CHARS, MAX_SENSITIVE_TERM_CHARS,
    MAX_SENSITIVE_TERMS, MAX_STRING_BYTES, MAX_TABLE_KEYS, MAX_TEXT_BYTES, problems as bound_problems,
};
pub use drift::DriftSettings;
pub use kill::KillSwitchSettings;
pub use runs::{DEFAULT_TAINT_WINDOW, IdentitySettings, TaintSettings};
pub use runtime::{LlmSettings, RuntimeSettings, llm_from_toml};
pub use server::ServerSettings;
pub use validate::load;
pub use webhooks::{DEFAULT_SECRET_ENV, WebhookSettings};
pub use workflows::WorkflowSettings;

/// Where referenced files (schemas, policies) come from: a directory, or an embedded bundle.
pub trait Files {
    /// The text of `path` (relative to the config's directory).
    fn read(&self, path: &str) -> Result<String, FileError>;
}

/// Any `Fn(&str) -> Result<String, E>` reads files, `E` being anything that converts to a
/// [`FileError`] (the reader's own message, an I/O error).
impl<F, E> Files for F
where
    F: Fn(&str) -> Result<String, E>,
    E: Into<FileError>,
{
    fn read(&self, path: &str) -> Result<String, FileError> {
        self(path).map_err(Into::into)
    }
}

/// A referenced file that could not be read, in the reader's words (missing, too large, not
/// UTF-8, not part of a bundle); the configuration error adds where it was referenced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FileError(pub String);

impl From<String> for FileError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for FileError {
    fn from(message: &str) -> Self {
        Self(message.to_owned())
    }
}

impl From<std::io::Error> for FileError {
    fn from(e: std::io::Error) -> Self {
        Self(e.to_string())
    }
}

/// One configuration problem, located by its dotted path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted location (`tools.scale_replicas.params.replicas`).
    pub at: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.at, self.message)
    }
}

/// Every problem found in a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} configuration error(s):", self.0.len())?;
        for e in &self.0 {
            writeln!(f, "  - {e}")?;
        }
        Ok(())
    }
}

/// An executor identity: who the adapter acts as. Reads and changes never share one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executor {
    /// Identity name.
    pub name: String,
    /// What it may do.
    pub mode: Mode,
    /// Environment variable holding its credential, if any.
    pub credential_env: Option<String>,
    /// File holding its credential, if any.
    pub credential_file: Option<String>,
}

/// Initial state of one resource in the in-memory adapter.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryResource {
    /// Tenant.
    pub tenant: String,
    /// Resource key (the value of the tool's resource parameter).
    pub key: String,
    /// State object.
    pub state: Value,
}

/// A validated configuration, ready to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Store URL, if the file names one.
    pub store_url: Option<String>,
    /// Registered tools.
    pub registry: Arc<Registry>,
    /// Loaded policies.
    pub policy: Arc<PolicyEngine>,
    /// Executor identities by name.
    pub executors: BTreeMap<String, Executor>,
    /// Named development principals (fixtures, demo, tokens).
    pub principals: BTreeMap<String, Principal>,
    /// Lifetime of a new approval request.
    pub approval_ttl: time::Duration,
    /// In-memory adapter state.
    pub memory_adapter: Vec<MemoryResource>,
    /// Limits of answer intake (`[intake]`).
    pub intake: IntakeLimits,
    /// Guard settings (`[guard]`).
    pub guard: GuardSettings,
    /// Graph runs: checkpoints, deadlines, model budgets (`[runtime]`).
    pub runtime: RuntimeSettings,
    /// Which model answers (`[llm]`).
    pub llm: LlmSettings,
    /// Operator notifications (`[webhooks]`).
    pub webhooks: WebhookSettings,
    /// What `bridle serve` listens on and its request limits (`[server]`).
    pub server: ServerSettings,
    /// HTTP and command adapters and the tools routed to them (`[adapters]`, `[tools.X] adapter`).
    pub adapters: AdapterSettings,
    /// Thresholds of the approval level (`[levels]`).
    pub levels: crate::level::LevelSettings,
    /// Thresholds of diagnoses and the regenerate loop (`[diagnosis]`).
    pub diagnosis: crate::diagnosis::DiagnosisSettings,
    /// Rules that answer when the model cannot (`[[fallback]]`), in order.
    pub fallback: Vec<crate::diagnosis::FallbackRule>,
    /// The in-process simulator standing in for the systems tools act on (`[adapter] simulator`).
    pub simulator: Option<Simulator>,
    /// Audit evidence and retention (`[audit]`).
    pub audit: AuditSettings,
    /// Workflow files the API may start (`[workflows]`).
    pub workflows: WorkflowSettings,
    /// The drift scan `bridle serve` runs on an interval (`[drift]`; off by default).
    pub drift: DriftSettings,
    /// Registered agents (`[[agents]]`); empty: calls name no agent.
    pub agents: Arc<crate::agents::AgentRegistry>,
    /// How long a gate may reuse a kill-switch read (`[kill_switch]`).
    pub kill_switch: KillSwitchSettings,
    /// How the action history weighs on proposals (`[history]`).
    pub history: crate::history::HistorySettings,
    /// Per-run limits: calls, deadline, concurrency (`[limits]`; empty: none).
    pub limits: crate::runs::LimitSettings,
    /// How long taint follows an agent or subject beyond its run (`[taint]`).
    pub taint: TaintSettings,
    /// Whether changes need a credential that names its agent (`[identity]`).
    pub identity: IdentitySettings,
    /// Which claims of a verified token name the principal (`[auth]`).
    pub auth: AuthSettings,
}

/// A simulator of a system Bridle does not own, run in process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Simulator {
    /// Seed 000's fab: equipment, recipes and parts, with the fab's own preconditions.
    Fab,
}

/// Validated `[guard]` settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GuardSettings {
    /// Length limit per channel.
    pub limits: crate::guard::sanitize::Limits,
    /// Terms masked in outputs (internal tool names, table names).
    pub sensitive_terms: Vec<String>,
    /// The learned detector's block threshold per channel (`[guard.model]`; defaults: the values
    /// chosen by cross-validation, [`crate::guard::combine::Thresholds::BUNDLED`]).
    pub thresholds: crate::guard::combine::Thresholds,
}
