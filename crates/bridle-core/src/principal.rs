//! Who is calling and within which run: the authenticated principal and the run context.
//!
//! A principal only ever comes from authentication (a verified token, a configured fixture),
//! never from tool arguments. This module holds data; it decides nothing.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    /// Stable subject id (`sub`).
    pub subject: String,
    /// Isolation boundary the subject belongs to.
    pub tenant: String,
    /// Services the subject may act on.
    pub services: BTreeSet<String>,
    /// Granted scopes such as `service:read` or `approval:grant`.
    pub scopes: BTreeSet<String>,
    /// The agent the credential belongs to (a token's `agent` claim): every call it makes is
    /// that agent's, whatever the request says. `None`: the credential names no agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl Principal {
    /// Builds a principal from string slices (fixtures, tests, token claims).
    pub fn new(subject: &str, tenant: &str, services: &[&str], scopes: &[&str]) -> Self {
        Self {
            subject: subject.to_owned(),
            tenant: tenant.to_owned(),
            services: services.iter().map(|s| (*s).to_owned()).collect(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            agent: None,
        }
    }

    /// The same principal as the credential of `agent`.
    #[must_use]
    pub fn with_agent(mut self, agent: &str) -> Self {
        self.agent = Some(agent.to_owned());
        self
    }

    /// Whether the principal holds `scope`.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.contains(scope)
    }
}

/// The run a call belongs to, as its caller drives it. The run's record, its limits and its taint
/// are the server's (`crate::runs`, `[limits]`): nothing here can raise them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunContext {
    /// Run id; part of every plan.
    pub run_id: String,
    /// Incident id; part of every plan.
    pub incident: String,
    /// Set when the run was cancelled.
    pub cancelled: bool,
    /// Set by the caller once the run has taken in untrusted content (a retrieved document);
    /// every later `change` call needs at least `approval`. The gate also records taint itself,
    /// in the store's `RunFlags`, when a tool marked `untrusted_output` returns a result.
    #[serde(default)]
    pub tainted: bool,
    /// The session canary placed in the model's system prompt: a tool result containing it is
    /// withheld with `output_blocked` (gate step 11).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canary: Option<String>,
}

impl RunContext {
    /// A run of `run_id` (empty: the gate mints one) for `incident`.
    pub fn new(run_id: &str, incident: &str) -> Self {
        Self {
            run_id: run_id.to_owned(),
            incident: incident.to_owned(),
            cancelled: false,
            tainted: false,
            canary: None,
        }
    }
}
