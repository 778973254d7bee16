//! The MCP gateway adapter: calls a tool of an upstream MCP server (`[adapters.mcp.NAME]`) with
//! rmcp's client, over stdio (a child process: argv only, cleared environment + `env_allow`) or
//! Streamable HTTP (Bridle's own bearer credential from `credential_env` / `credential_file`; the
//! caller's token is never passed through).
//!
//! - The tool's contract is Bridle's (mode, scope, risk, approval, executor, closed input
//!   schema from the config); upstream annotations (`readOnlyHint` …) are never read.
//! - The connection is opened at the first call and kept, in either protocol era (a
//!   `server/discover` probe, falling back to the 2025 `initialize` handshake). It then checks
//!   that the upstream lists every tool routed here and that each contract's properties are the
//!   upstream schema's (a mismatch fails every call of that tool). A broken connection is
//!   reopened at the next call.
//! - **Pins.** Each fronted tool's upstream definition is hashed (`contract::pin`) at connect and
//!   again after every `notifications/tools/list_changed` (the next call re-lists) and at the
//!   latest every `relist_ms` (a stateless upstream sends no notification). A hash that
//!   differs from the tool's `upstream_pin` (or, for a tool with none, from the first definition
//!   this process saw) refuses every call of it with `upstream_changed` before anything is sent,
//!   until an operator reviews and re-pins (`bridle gateway pin`).
//! - `isError` → `Failed` with a clipped, masked message; no answer in time → `Timeout`; a
//!   change whose answer is lost after sending → `Lost`; `outcome` → always unknown.
//! - Results (structured content, else the text contents) go through the gate's step 11 like
//!   every adapter's: masked, and spotlighted when the tool is `untrusted_output`.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use bridle_core::config::{McpAdapterSettings, McpUpstream};
use bridle_core::contract::Mode;
use bridle_core::contract::pin::definition_pin;
use bridle_core::guard::mask::Masker;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use bridle_core::{Code, Rejection};
use rmcp::ClientHandler;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion, Tool};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RoleClient, RunningService};
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
    /// The reviewed definition's pin (`[tools.X] upstream_pin`), if any.
    pub pin: Option<String>,
}

/// The gateway's MCP client: it only listens for the upstream's `tools/list_changed`.
#[derive(Clone, Default)]
struct Watch {
    /// Set by `notifications/tools/list_changed`: the next call re-lists before it runs.
    stale: Arc<AtomicBool>,
}

impl ClientHandler for Watch {
    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.stale.store(true, Ordering::SeqCst);
    }
}

/// Why calls of a tool are refused on this connection.
#[derive(Debug, Clone)]
enum Refusal {
    /// The contract does not match the upstream tool (`adapter_failed`).
    Mismatch(String),
    /// The upstream definition is not the pinned one (`upstream_changed`).
    Changed {
        /// The pin the definition must have.
        pinned: String,
        /// The pin it has now (`None`: the upstream no longer lists it in a hashable form).
        now: Option<String>,
    },
}

struct Connection {
    client: RunningService<RoleClient, Watch>,
    stale: Arc<AtomicBool>,
    /// When the tools were last judged.
    checked: std::time::Instant,
    /// Tool → why its calls are refused, for tools that are.
    refused: BTreeMap<String, Refusal>,
}

/// An upstream MCP server and the tools imported from it.
pub struct McpAdapter {
    name: String,
    settings: McpAdapterSettings,
    credential: Option<String>,
    tools: BTreeMap<String, McpTool>,
    connection: Mutex<Option<Connection>>,
    /// For tools without a configured pin: the pin of the first definition this process saw.
    first_seen: std::sync::Mutex<BTreeMap<String, String>>,
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
        Self {
            name: name.to_owned(),
            settings,
            credential,
            tools,
            connection: Mutex::new(None),
            first_seen: std::sync::Mutex::new(BTreeMap::new()),
        }
    }

    /// The upstream's tool definitions as it lists them now (for `bridle gateway import` and
    /// `bridle gateway pin`), over a connection of its own.
    pub async fn definitions(&self) -> Result<Vec<Value>, String> {
        let client = self.open(Watch::default()).await?;
        let listed = client.list_all_tools().await.map_err(|e| e.to_string())?;
        let _ = client.cancel().await;
        listed.iter().map(|t| serde_json::to_value(t).map_err(|e| e.to_string())).collect()
    }

    /// A client of the upstream in whichever era it speaks: `server/discover` first, the 2025
    /// handshake when the upstream answers as a legacy server.
    async fn open(&self, watch: Watch) -> Result<RunningService<RoleClient, Watch>, String> {
        let lifecycle = ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        };
        match &self.settings.upstream {
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
                watch.serve_with_lifecycle(child, lifecycle).await.map_err(|e| e.to_string())
            }
            McpUpstream::Http { url, .. } => {
                // rmcp's reqwest client uses the build's one rustls provider (ring).
                crate::llm::openai::install_tls_provider();
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(secret) = &self.credential {
                    config = config.auth_header(secret.clone());
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                watch.serve_with_lifecycle(transport, lifecycle).await.map_err(|e| e.to_string())
            }
        }
    }

    async fn connect(&self) -> Result<Connection, String> {
        let watch = Watch::default();
        let stale = watch.stale.clone();
        let client = self.open(watch).await?;
        let refused = self.check(&client).await?;
        Ok(Connection { client, stale, checked: std::time::Instant::now(), refused })
    }

    /// Lists the upstream's tools and judges each fronted tool: its schema against the
    /// contract, its definition against its pin.
    async fn check(&self, client: &RunningService<RoleClient, Watch>) -> Result<BTreeMap<String, Refusal>, String> {
        let listed = client.list_all_tools().await.map_err(|e| e.to_string())?;
        let mut refused = BTreeMap::new();
        for (tool, t) in &self.tools {
            let Some(up) = listed.iter().find(|u| u.name == t.upstream_tool) else {
                let why = format!("the upstream has no tool `{}`", t.upstream_tool);
                refused.insert(tool.clone(), Refusal::Mismatch(why));
                continue;
            };
            if let Some(changed) = self.pin_check(tool, t, up) {
                refused.insert(tool.clone(), changed);
                continue;
            }
            let schema = Value::Object((*up.input_schema).clone());
            let props = schema.get("properties").and_then(Value::as_object);
            let unknown: Vec<&String> =
                t.properties.iter().filter(|p| !props.is_some_and(|ps| ps.contains_key(p.as_str()))).collect();
            let required = schema.get("required").and_then(Value::as_array).cloned().unwrap_or_default();
            let missing: Vec<&str> =
                required.iter().filter_map(Value::as_str).filter(|r| !t.properties.iter().any(|p| p == r)).collect();
            if !unknown.is_empty() || !missing.is_empty() {
                let why = format!(
                    "the contract's schema does not match upstream `{}` (unknown {unknown:?}, missing {missing:?})",
                    t.upstream_tool
                );
                refused.insert(tool.clone(), Refusal::Mismatch(why));
            }
        }
        Ok(refused)
    }

    /// `Some` when `up`'s definition is not the one `tool` may call: its configured pin, else
    /// the first this process saw (recorded here on first sight).
    fn pin_check(&self, tool: &str, t: &McpTool, up: &Tool) -> Option<Refusal> {
        let now = serde_json::to_value(up).ok().as_ref().and_then(definition_pin);
        let pinned = match &t.pin {
            Some(pin) => pin.clone(),
            None => {
                let mut seen = self.first_seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                match (seen.get(tool), &now) {
                    (Some(first), _) => first.clone(),
                    (None, Some(now)) => {
                        seen.insert(tool.to_owned(), now.clone());
                        return None;
                    }
                    (None, None) => return Some(Refusal::Changed { pinned: "(none)".into(), now: None }),
                }
            }
        };
        (now.as_deref() != Some(pinned.as_str())).then_some(Refusal::Changed { pinned, now })
    }

    /// The refusal of a call of `tool` for `why`.
    fn refusal(&self, tool: &McpTool, why: &Refusal) -> AdapterError {
        match why {
            Refusal::Mismatch(why) => AdapterError::Failed(format!("MCP upstream `{}`: {why}", self.name)),
            Refusal::Changed { pinned, now } => AdapterError::Tool(
                Rejection::new(
                    Code::UpstreamChanged,
                    format!(
                        "the definition of upstream `{}` tool `{}` changed since it was pinned; nothing was sent \
                         (an operator reviews it and re-pins with `bridle gateway pin --upstream {}`)",
                        self.name, tool.upstream_tool, self.name
                    ),
                )
                .with_detail(json!({
                    "upstream": self.name, "upstream_tool": tool.upstream_tool, "pinned": pinned, "now": now,
                })),
            ),
        }
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
        let Some(connection) = guard.as_mut() else {
            return Err(AdapterError::Failed(format!("MCP upstream `{}` is not connected", self.name)));
        };
        // The upstream said its tools changed, or they were last judged too long ago: judge them
        // again before calling one.
        let due = connection.checked.elapsed() >= self.settings.relist;
        if connection.stale.swap(false, Ordering::SeqCst) || due {
            let checked = tokio::time::timeout(timeout, self.check(&connection.client)).await;
            match checked {
                Ok(Ok(refused)) => {
                    connection.refused = refused;
                    connection.checked = std::time::Instant::now();
                }
                Ok(Err(e)) => {
                    *guard = None;
                    return Err(AdapterError::Failed(format!("MCP upstream `{}`: {}", self.name, clip(&e))));
                }
                Err(_) => {
                    *guard = None;
                    return Err(AdapterError::Timeout);
                }
            }
        }
        if let Some(why) = connection.refused.get(&call.tool) {
            return Err(self.refusal(tool, why));
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
