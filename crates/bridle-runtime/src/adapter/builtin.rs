//! The built-in adapter: runs the workbench tools of `bridle_core::tools` (`search_law`,
//! `calculate`, `convert_unit`) in process. They only read, so only the read entry point works,
//! and only with the executor identity their contract names.

use std::collections::BTreeMap;

use async_trait::async_trait;
use bridle_core::config::Config;
use bridle_core::contract::Mode;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use bridle_core::tools;
use serde_json::Value;

/// Runs the built-in tools registered in a configuration.
#[derive(Debug, Clone, Default)]
pub struct BuiltinAdapter {
    /// Built-in tool → the read identity its contract names.
    identities: BTreeMap<String, String>,
}

impl BuiltinAdapter {
    /// An adapter for the built-in tools the configuration registers as read tools.
    pub fn from_config(config: &Config) -> Self {
        let identities = config
            .registry
            .iter()
            .filter(|t| tools::is_builtin(&t.name) && t.mode == Mode::Read)
            .filter(|t| config.executors.get(&t.executor).is_some_and(|e| e.mode == Mode::Read))
            .map(|t| (t.name.clone(), t.executor.clone()))
            .collect();
        Self { identities }
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
        match tools::run(&call.tool, &call.arguments) {
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
