//! The configured adapter: sends each tool to the HTTP or command adapter its configuration
//! names (`[tools.X] adapter = "http:NAME"`), and every other tool to the in-process ones.
//!
//! Credentials are read here, once, at start-up: each executor identity of an HTTP tool from its
//! own `credential_env` or `credential_file`. A named credential that cannot be read fails the
//! start (fail closed); an identity with none sends no credential header.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use bridle_core::config::{Config, Executor, McpUpstream, ToolRoute};
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use serde_json::Value;

use super::SetupError;
use super::command::CommandAdapter;
use super::http::{HttpAdapter, HttpTool};
use super::mcp::{McpAdapter, McpTool};

/// Routes configured tools to their adapters and the rest to a fallback.
pub struct ConfiguredAdapter {
    routes: BTreeMap<String, Arc<dyn Adapter>>,
    fallback: Arc<dyn Adapter>,
}

/// The credential of an executor identity, if it names one.
fn credential(executor: &Executor) -> Result<Option<String>, SetupError> {
    let owner = || format!("executor `{}`", executor.name);
    if let Some(var) = &executor.credential_env {
        let value = std::env::var(var).map_err(|_| SetupError::CredentialEnv { owner: owner(), var: var.clone() })?;
        return Ok(Some(value.trim().to_owned()));
    }
    if let Some(path) = &executor.credential_file {
        let value = std::fs::read_to_string(path).map_err(|cause| SetupError::CredentialFile {
            owner: owner(),
            path: path.clone(),
            cause,
        })?;
        return Ok(Some(value.trim().to_owned()));
    }
    Ok(None)
}

fn no_adapter(kind: &'static str, name: &str) -> SetupError {
    SetupError::NoAdapter { kind, name: name.to_owned() }
}

impl ConfiguredAdapter {
    /// The adapters `config` names, over `fallback` for tools without one.
    pub fn from_config(config: &Config, fallback: Arc<dyn Adapter>) -> Result<Self, SetupError> {
        let settings = &config.adapters;
        let mut http_tools: BTreeMap<&str, BTreeMap<String, HttpTool>> = BTreeMap::new();
        let mut command_tools: BTreeMap<&str, BTreeMap<String, _>> = BTreeMap::new();
        let mut credentials: BTreeMap<&str, BTreeMap<String, String>> = BTreeMap::new();
        let mut mcp_tools: BTreeMap<&str, BTreeMap<String, McpTool>> = BTreeMap::new();
        for (tool, route) in &settings.routes {
            let Some(contract) = config.registry.get(tool) else { continue };
            match route {
                ToolRoute::Http { adapter, method, path, body } => {
                    let method = reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| SetupError::Method {
                        tool: tool.clone(),
                        method: method.clone(),
                        cause: e.to_string(),
                    })?;
                    let entry = HttpTool {
                        mode: contract.mode,
                        executor: contract.executor.clone(),
                        method,
                        path: path.clone(),
                        body: *body,
                    };
                    http_tools.entry(adapter).or_default().insert(tool.clone(), entry);
                    let executor = config.executors.get(&contract.executor).ok_or_else(|| SetupError::NoExecutor {
                        tool: tool.clone(),
                        executor: contract.executor.clone(),
                    })?;
                    if let Some(secret) = credential(executor)? {
                        credentials.entry(adapter).or_default().insert(executor.name.clone(), secret);
                    }
                }
                ToolRoute::Mcp { adapter, upstream_tool, pin } => {
                    let properties = contract
                        .schema
                        .source()
                        .get("properties")
                        .and_then(Value::as_object)
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default();
                    let entry = McpTool {
                        mode: contract.mode,
                        executor: contract.executor.clone(),
                        upstream_tool: upstream_tool.clone(),
                        properties,
                        pin: pin.clone(),
                    };
                    mcp_tools.entry(adapter).or_default().insert(tool.clone(), entry);
                }
                ToolRoute::Command { adapter } => {
                    command_tools
                        .entry(adapter)
                        .or_default()
                        .insert(tool.clone(), (contract.mode, contract.executor.clone()));
                }
            }
        }
        let mut routes: BTreeMap<String, Arc<dyn Adapter>> = BTreeMap::new();
        for (name, tools) in http_tools {
            let http = settings.http.get(name).ok_or_else(|| no_adapter("HTTP", name))?;
            let names: Vec<String> = tools.keys().cloned().collect();
            let secrets = credentials.remove(name).unwrap_or_default();
            let adapter: Arc<dyn Adapter> = Arc::new(HttpAdapter::new(name, http.clone(), tools, secrets)?);
            for tool in names {
                routes.insert(tool, adapter.clone());
            }
        }
        for (name, tools) in command_tools {
            let command = settings.command.get(name).ok_or_else(|| no_adapter("command", name))?;
            let names: Vec<String> = tools.keys().cloned().collect();
            let adapter: Arc<dyn Adapter> = Arc::new(CommandAdapter::new(name, command.clone(), tools));
            for tool in names {
                routes.insert(tool, adapter.clone());
            }
        }
        for (name, tools) in mcp_tools {
            let mcp = settings.mcp.get(name).ok_or_else(|| no_adapter("MCP", name))?;
            let credential = mcp_credential(name, mcp)?;
            let names: Vec<String> = tools.keys().cloned().collect();
            let adapter: Arc<dyn Adapter> = Arc::new(McpAdapter::new(name, mcp.clone(), tools, credential));
            for tool in names {
                routes.insert(tool, adapter.clone());
            }
        }
        Ok(Self { routes, fallback })
    }

    fn pick(&self, tool: &str) -> &Arc<dyn Adapter> {
        self.routes.get(tool).unwrap_or(&self.fallback)
    }
}

#[async_trait]
impl Adapter for ConfiguredAdapter {
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.pick(&call.tool).read(call).await
    }

    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.pick(&call.tool).change(call).await
    }

    async fn outcome(&self, job: &Job) -> Result<Outcome, AdapterError> {
        self.pick(&job.plan.tool).outcome(job).await
    }
}

/// Bridle's own credential for the HTTP upstream `name` (`credential_env` / `credential_file`),
/// read once; `None` for a stdio upstream or one that needs none. Fails closed: a credential
/// that is configured but cannot be read is an error, never an unauthenticated connection.
pub fn mcp_credential(name: &str, mcp: &bridle_core::config::McpAdapterSettings) -> Result<Option<String>, SetupError> {
    Ok(match &mcp.upstream {
        McpUpstream::Http { credential_env: Some(var), .. } => Some(
            std::env::var(var)
                .map_err(|_| SetupError::CredentialEnv { owner: format!("MCP adapter `{name}`"), var: var.clone() })?
                .trim()
                .to_owned(),
        ),
        McpUpstream::Http { credential_file: Some(path), .. } => Some(
            std::fs::read_to_string(path)
                .map_err(|cause| SetupError::CredentialFile {
                    owner: format!("MCP adapter `{name}`"),
                    path: path.clone(),
                    cause,
                })?
                .trim()
                .to_owned(),
        ),
        _ => None,
    })
}
