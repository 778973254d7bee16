//! The MCP gateway adapter: calls a tool of an upstream MCP server (`[adapters.mcp.NAME]`) with
//! rmcp's client, over stdio (a child process: argv only, cleared environment + `env_allow`) or
//! Streamable HTTP (Bridle's own bearer credential from `credential_env` / `credential_file`; the
//! caller's token is never passed through).
//!
//! - The tool's contract is Bridle's (mode, scope, risk, approval, executor, closed input
//!   schema from the config); upstream annotations (`readOnlyHint` …) are never read.
//! - The connection is opened at the first call and kept; it then checks once that the upstream
//!   lists every tool routed here and that each contract's properties are the upstream schema's
//!   (a mismatch fails every call of that tool). A broken connection is reopened at the next call.
//! - `isError` → `Failed` with a clipped, masked message; no answer in time → `Timeout`; a
//!   change whose answer is lost after sending → `Lost`; `outcome` → always unknown.
//! - Results (structured content, else the text contents) go through the gate's step 11 like
//!   every adapter's: masked, and spotlighted when the tool is `untrusted_output`.

use std::collections::BTreeMap;
use std::process::Stdio;

use async_trait::async_trait;
use bridle_core::config::{McpAdapterSettings, McpUpstream};
use bridle_core::contract::Mode;
use bridle_core::guard::mask::Masker;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// Characters of an upstream error quoted in a failure.
const ERROR_CHARS: usize = 200;

/// One tool served by an upstream: its Bridle mode and identity, the upstream name, and the
/// property names of its Bridle schema.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// Bridle's mode for the tool.
    pub mode: Mode,
    /// Executor identity.
    pub executor: String,
    /// The upstream tool's name.
    pub upstream_tool: String,
    /// Property names of the contract's input schema.
    pub properties: Vec<String>,
}

struct Connection {
    client: RunningService<RoleClient, ()>,
    /// Tool → why it does not match the upstream, for tools that do not.
    mismatched: BTreeMap<String, String>,
}

/// An upstream MCP server and the tools imported from it.
pub struct McpAdapter {
    name: String,
    settings: McpAdapterSettings,
    credential: Option<String>,
    tools: BTreeMap<String, McpTool>,
    connection: Mutex<Option<Connection>>,
}

/// Clips `text` to one line of at most [`ERROR_CHARS`] characters with secrets and PII masked.
fn clip(text: &str) -> String {
    let masked = Masker::new().map_or_else(|_| "[unmaskable]".to_owned(), |m| m.mask(text).masked);
    let line: String = masked.chars().take(ERROR_CHARS).map(|c| if c.is_control() { ' ' } else { c }).collect();
    line.trim().to_owned()
}

/// The texts of a result's content.
fn texts(result: &CallToolResult) -> Vec<String> {
    let value = serde_json::to_value(&result.content).unwrap_or(Value::Null);
    value
        .as_array()
        .map(|items| items.iter().filter_map(|i| i.get("text").and_then(Value::as_str).map(str::to_owned)).collect())
        .unwrap_or_default()
}

impl McpAdapter {
    /// The upstream `name` serving `tools`; `credential` is Bridle's own for a URL upstream.
    pub fn new(
        name: &str,
        settings: McpAdapterSettings,
        tools: BTreeMap<String, McpTool>,
        credential: Option<String>,
    ) -> Self {
        Self { name: name.to_owned(), settings, credential, tools, connection: Mutex::new(None) }
    }

    async fn connect(&self) -> Result<Connection, String> {
        let client = match &self.settings.upstream {
            McpUpstream::Stdio { argv, env_allow } => {
                let (program, args) = argv.split_first().ok_or("no program")?;
                let mut command = tokio::process::Command::new(program);
                command.args(args).env_clear();
                for var in env_allow {
                    if let Some(value) = std::env::var_os(var) {
                        command.env(var, value);
                    }
                }
                let (child, _) = TokioChildProcess::builder(command)
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("could not start: {e}"))?;
                ().serve(child).await.map_err(|e| e.to_string())?
            }
            McpUpstream::Http { url, .. } => {
                // rmcp's reqwest client uses the build's one rustls provider (ring).
                crate::llm::openai::install_tls_provider();
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(secret) = &self.credential {
                    config = config.auth_header(secret.clone());
                }
                ().serve(StreamableHttpClientTransport::from_config(config)).await.map_err(|e| e.to_string())?
            }
        };
        let listed = client.list_all_tools().await.map_err(|e| e.to_string())?;
        let mut mismatched = BTreeMap::new();
        for (tool, t) in &self.tools {
            let Some(up) = listed.iter().find(|u| u.name == t.upstream_tool) else {
                mismatched.insert(tool.clone(), format!("the upstream has no tool `{}`", t.upstream_tool));
                continue;
            };
            let schema = Value::Object((*up.input_schema).clone());
            let props = schema.get("properties").and_then(Value::as_object);
            let unknown: Vec<&String> =
                t.properties.iter().filter(|p| !props.is_some_and(|ps| ps.contains_key(p.as_str()))).collect();
            let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
            let missing: Vec<&str> =
                required.iter().filter_map(Value::as_str).filter(|r| !t.properties.iter().any(|p| p == r)).collect();
            if !unknown.is_empty() || !missing.is_empty() {
                mismatched.insert(
                    tool.clone(),
                    format!(
                        "the contract's schema does not match upstream `{}` (unknown {unknown:?}, missing {missing:?})",
                        t.upstream_tool
                    ),
                );
            }
        }
        Ok(Connection { client, mismatched })
    }

    async fn run(&self, call: &AdapterCall, mode: Mode) -> Result<Value, AdapterError> {
        let tool = self
            .tools
            .get(&call.tool)
            .ok_or_else(|| AdapterError::Failed(format!("`{}` is not served by `{}`", call.tool, self.name)))?;
        if tool.mode != mode {
            return Err(AdapterError::Failed(format!("`{}` is not a {} tool", call.tool, mode.as_str())));
        }
        if tool.executor != call.identity {
            return Err(AdapterError::IdentityRejected(call.identity.clone()));
        }
        let timeout = self.settings.timeout;
        let mut guard = self.connection.lock().await;
        if guard.is_none() {
            let opened = tokio::time::timeout(timeout, self.connect()).await.map_err(|_| AdapterError::Timeout)?;
            let opened =
                opened.map_err(|e| AdapterError::Failed(format!("MCP upstream `{}`: {}", self.name, clip(&e))))?;
            *guard = Some(opened);
        }
        let Some(connection) = guard.as_ref() else {
            return Err(AdapterError::Failed(format!("MCP upstream `{}` is not connected", self.name)));
        };
        if let Some(why) = connection.mismatched.get(&call.tool) {
            return Err(AdapterError::Failed(format!("MCP upstream `{}`: {why}", self.name)));
        }
        let mut params = CallToolRequestParams::new(tool.upstream_tool.clone());
        params.arguments = call.arguments.as_object().cloned();
        let peer = connection.client.peer().clone();
        drop(guard);
        let answered = tokio::time::timeout(timeout, peer.call_tool(params)).await;
        let result = match answered {
            Err(_) => return Err(AdapterError::Timeout),
            Ok(Err(e)) => {
                // The connection is suspect: reopen it at the next call.
                *self.connection.lock().await = None;
                let message = format!("MCP upstream `{}`: {}", self.name, clip(&e.to_string()));
                return Err(if mode == Mode::Change {
                    AdapterError::Lost(message)
                } else {
                    AdapterError::Failed(message)
                });
            }
            Ok(Ok(result)) => result,
        };
        let texts = texts(&result);
        if result.is_error == Some(true) {
            return Err(AdapterError::Failed(format!(
                "MCP upstream `{}` tool `{}` failed: {}",
                self.name,
                tool.upstream_tool,
                clip(&texts.join(" "))
            )));
        }
        Ok(match result.structured_content {
            Some(structured) => structured,
            None => match texts.as_slice() {
                [one] => serde_json::from_str(one).unwrap_or_else(|_| json!({ "output": one })),
                _ => json!({ "output": texts }),
            },
        })
    }
}

#[async_trait]
impl Adapter for McpAdapter {
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.run(call, Mode::Read).await
    }

    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.run(call, Mode::Change).await
    }

    async fn outcome(&self, _job: &Job) -> Result<Outcome, AdapterError> {
        Ok(Outcome::Unknown)
    }
}
