//! The built-in adapter: runs an application's in-process tools ([`InProcessTools`], such as the
//! workbench's `search_law`, `calculate`, `convert_unit` from `bridle-tools`) that the
//! configuration registers as read tools. They only read, so only the read entry point works,
//! and only with the executor identity their contract names.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use bridle_core::config::Config;
use bridle_core::contract::Mode;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, InProcessTools, Outcome};
use serde_json::Value;

/// No in-process tools: what an engine gets when its application passes none.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTools;

impl InProcessTools for NoTools {
    fn names(&self) -> &[&'static str] {
        &[]
    }

    fn run(&self, _tool: &str, _args: &Value) -> Option<Result<Value, bridle_core::Rejection>> {
        None
    }
}

/// Runs the in-process tools registered in a configuration.
#[derive(Clone)]
pub struct BuiltinAdapter {
    tools: Arc<dyn InProcessTools>,
    /// In-process tool → the read identity its contract names.
    identities: BTreeMap<String, String>,
}

impl std::fmt::Debug for BuiltinAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinAdapter").field("identities", &self.identities).finish_non_exhaustive()
    }
}

impl BuiltinAdapter {
    /// An adapter for those of `tools` the configuration registers as read tools.
    pub fn from_config(config: &Config, tools: Arc<dyn InProcessTools>) -> Self {
        let identities = config
            .registry
            .iter()
            .filter(|t| tools.names().contains(&t.name.as_str()) && t.mode == Mode::Read)
            .filter(|t| config.executors.get(&t.executor).is_some_and(|e| e.mode == Mode::Read))
            .map(|t| (t.name.clone(), t.executor.clone()))
            .collect();
        Self { tools, identities }
    }

    /// Whether `tool` is one of its tools (registered or not: an unregistered one is refused
    /// here, never sent on to another adapter).
    pub fn serves(&self, tool: &str) -> bool {
        self.tools.names().contains(&tool)
    }
}

#[async_trait]
impl Adapter for BuiltinAdapter {
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        let Some(identity) = self.identities.get(&call.tool) else {
            return Err(AdapterError::Failed(format!("no built-in tool `{}` is registered", call.tool)));
        };
        if identity != &call.identity {
            return Err(AdapterError::IdentityRejected(call.identity.clone()));
        }
        match self.tools.run(&call.tool, &call.arguments) {
            Some(Ok(result)) => Ok(result),
            Some(Err(rejection)) => Err(AdapterError::Tool(rejection)),
            None => Err(AdapterError::Failed(format!("`{}` is not a built-in tool", call.tool))),
        }
    }

    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        Err(AdapterError::Failed(format!("`{}` is a read tool", call.tool)))
    }

    async fn outcome(&self, _job: &Job) -> Result<Outcome, AdapterError> {
        // Nothing built in ever changes state.
        Ok(Outcome::NotApplied)
    }
}
