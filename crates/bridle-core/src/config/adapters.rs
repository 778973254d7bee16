//! `[adapters]` and each tool's `adapter`: how a tool is executed when it is not in process.
//! Parsing and validation only; the adapters themselves (and reading credentials) are the
//! runtime's. Credentials are never written here: each executor identity names its own
//! `credential_env` or `credential_file` under `[executors]`.
//!
//! ```toml
//! [adapters.http.checkout-api]
//! base_url = "https://checkout.internal"   # http(s), no path templates
//! timeout_ms = 5000
//! auth_header = "Authorization"             # default; value `Bearer <credential>`
//! auth_scheme = "Bearer"                    # "" sends the credential alone
//! status_path = "/jobs/{job_id}"            # optional: where `outcome` asks about a job
//! context_headers = { tenant = "X-Bridle-Tenant", subject = "X-Bridle-Subject" }  # + run_id, incident
//!
//! [adapters.command.kubectl-scale]
//! argv = ["/usr/bin/kubectl", "scale", "{service}", "--replicas", "{replicas}"]
//! env_allow = ["PATH"]
//! timeout_ms = 5000
//! max_output_bytes = 65536
//! context_env = { tenant = "BRIDLE_TENANT", run_id = "BRIDLE_RUN_ID" }   # + subject, incident
//!
//! [adapters.mcp.upstream]                  # an upstream MCP server (the gateway)
//! command = ["/usr/bin/python3", "server.py"]  # stdio: argv only, cleared env + env_allow
//! # url = "https://mcp.internal/mcp"        # or Streamable HTTP, with Bridle's own credential:
//! # credential_env = "UPSTREAM_TOKEN"       # (or credential_file) sent as `Bearer`
//! timeout_ms = 5000
//!
//! [tools.get_service]
//! adapter = "http:checkout-api"
//! request = { method = "GET", path = "/services/{service}" }   # body: "arguments" | "none"
//! ```
//!
//! A `{param}` placeholder must name a parameter of the tool's input schema (`{job_id}` in
//! `status_path`). In `argv` a placeholder is a whole element, never part of one. A request path
//! may also hold `{bridle.tenant}`, `{bridle.subject}`, `{bridle.run_id}` and `{bridle.incident}`.
//!
//! The call's context (tenant, subject, run id, incident) reaches the target only where an
//! adapter asks for it: `context_headers` (HTTP), `context_env` (command) and the `{bridle.…}`
//! path placeholders. Its values come from the authenticated principal and the server's run
//! record, never from the tool's arguments.
//!
//! A tool with `adapter = "mcp:NAME"` calls the upstream tool `upstream_tool` (default: its own
//! name). Its contract is Bridle's like any other (mode, scope, risk, approval, executor and a
//! closed `input_schema` in the config); the adapter checks at its first connection that the
//! upstream offers the tool and that the contract's properties are the upstream's, and on
//! every re-list (after `tools/list_changed`, and at the latest every `relist_ms`, default
//! 30 s) that its definition still has its `upstream_pin`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::raw::RawTool;
use super::validate::Errors;
use crate::contract::Registry;
use crate::ports::AdapterCall;

/// Default adapter timeout.
const DEFAULT_TIMEOUT_MS: u64 = 5_000;
/// Longest adapter timeout.
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Default and largest output cap of a command.
const DEFAULT_MAX_OUTPUT: usize = 64 * 1024;
const MAX_OUTPUT: usize = 16 * 1024 * 1024;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAdapters {
    #[serde(default)]
    http: BTreeMap<String, RawHttp>,
    #[serde(default)]
    command: BTreeMap<String, RawCommand>,
    #[serde(default)]
    mcp: BTreeMap<String, RawMcp>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMcp {
    command: Option<Vec<String>>,
    url: Option<String>,
    #[serde(default)]
    env_allow: Vec<String>,
    credential_env: Option<String>,
    credential_file: Option<String>,
    timeout_ms: Option<u64>,
    relist_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    base_url: String,
    timeout_ms: Option<u64>,
    auth_header: Option<String>,
    auth_scheme: Option<String>,
    status_path: Option<String>,
    context_headers: Option<RawContext>,
}

/// Where each piece of a call's context goes (a header or a variable name per field).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContext {
    tenant: Option<String>,
    subject: Option<String>,
    run_id: Option<String>,
    incident: Option<String>,
}

impl RawContext {
    fn names(&self) -> Vec<(ContextField, String)> {
        [
            (ContextField::Tenant, &self.tenant),
            (ContextField::Subject, &self.subject),
            (ContextField::RunId, &self.run_id),
            (ContextField::Incident, &self.incident),
        ]
        .into_iter()
        .filter_map(|(field, name)| name.clone().map(|n| (field, n)))
        .collect()
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCommand {
    argv: Vec<String>,
    #[serde(default)]
    env_allow: Vec<String>,
    timeout_ms: Option<u64>,
    max_output_bytes: Option<usize>,
    context_env: Option<RawContext>,
}

/// A tool's HTTP request template (`[tools.X] request = { … }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRequest {
    method: String,
    path: String,
    body: Option<String>,
}

/// A configured HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAdapterSettings {
    /// Base URL without a trailing `/`.
    pub base_url: String,
    /// Time allowed for one request.
    pub timeout: Duration,
    /// Header carrying the identity's credential.
    pub auth_header: String,
    /// Prefix of the credential in that header (`Bearer`); empty: the credential alone.
    pub auth_scheme: String,
    /// Path template asked by `outcome` (`{job_id}`), if any.
    pub status_path: Option<String>,
    /// Headers carrying the call's context (`context_headers`), in field order.
    pub context_headers: Vec<(ContextField, String)>,
}

/// A configured command (argv only, never a shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandAdapterSettings {
    /// Program (absolute path) and arguments; `{param}` elements are filled from the call.
    pub argv: Vec<String>,
    /// Environment variables passed through; everything else is cleared.
    pub env_allow: Vec<String>,
    /// Time allowed before the process is killed.
    pub timeout: Duration,
    /// Most stdout bytes accepted; more fails the call.
    pub max_output_bytes: usize,
    /// Environment variables carrying the call's context (`context_env`), in field order.
    pub context_env: Vec<(ContextField, String)>,
}

/// One piece of a call's context an adapter can pass on to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ContextField {
    /// The principal's tenant.
    Tenant,
    /// The principal's subject (for a change: the approved plan's requester).
    Subject,
    /// The run id (the server's run record).
    RunId,
    /// The run's incident.
    Incident,
}

impl ContextField {
    /// Every field, in order.
    pub const ALL: [ContextField; 4] = [Self::Tenant, Self::Subject, Self::RunId, Self::Incident];

    /// Its name in `context_headers` / `context_env`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Tenant => "tenant",
            Self::Subject => "subject",
            Self::RunId => "run_id",
            Self::Incident => "incident",
        }
    }

    /// Its path placeholder: `bridle.tenant`, `bridle.subject`, `bridle.run_id`, `bridle.incident`.
    pub const fn placeholder(self) -> &'static str {
        match self {
            Self::Tenant => "bridle.tenant",
            Self::Subject => "bridle.subject",
            Self::RunId => "bridle.run_id",
            Self::Incident => "bridle.incident",
        }
    }

    /// The field named by a path placeholder.
    pub fn from_placeholder(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.placeholder() == name)
    }

    /// Its value in `call`.
    pub fn value(self, call: &AdapterCall) -> &str {
        match self {
            Self::Tenant => &call.tenant,
            Self::Subject => &call.subject,
            Self::RunId => &call.run_id,
            Self::Incident => &call.incident,
        }
    }
}

/// Headers a context header may not replace (framing, the credential, the job's own headers).
const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "connection",
    "content-length",
    "content-type",
    "cookie",
    "expect",
    "host",
    "idempotency-key",
    "if-match",
    "keep-alive",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

fn is_header_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn context_headers(
    at: &str,
    raw: Option<&RawContext>,
    auth_header: &str,
    errors: &mut Errors,
) -> Vec<(ContextField, String)> {
    let names = raw.map(RawContext::names).unwrap_or_default();
    let mut seen: Vec<String> = Vec::new();
    for (field, name) in &names {
        let at = format!("{at}.context_headers.{}", field.as_str());
        let lower = name.to_ascii_lowercase();
        if !is_header_name(name) {
            errors.push(at, format!("`{name}` is not a header name (letters, digits, `-`; at most 64)"));
        } else if RESERVED_HEADERS.contains(&lower.as_str()) || lower == auth_header.to_ascii_lowercase() {
            errors.push(at, format!("`{name}` is a header Bridle sets itself"));
        } else if seen.contains(&lower) {
            errors.push(at, format!("`{name}` is named twice"));
        }
        seen.push(lower);
    }
    names
}

fn context_env(
    at: &str,
    raw: Option<&RawContext>,
    env_allow: &[String],
    errors: &mut Errors,
) -> Vec<(ContextField, String)> {
    let names = raw.map(RawContext::names).unwrap_or_default();
    let mut seen: Vec<&str> = Vec::new();
    for (field, name) in &names {
        let at = format!("{at}.context_env.{}", field.as_str());
        if !is_env_name(name) {
            errors.push(at, format!("`{name}` is not an environment variable name"));
        } else if matches!(name.as_str(), "BRIDLE_IDENTITY" | "BRIDLE_JOB_ID" | "PATH")
            || name.starts_with("LD_")
            || name.starts_with("DYLD_")
        {
            errors.push(at, format!("`{name}` may not carry the call's context"));
        } else if env_allow.contains(name) {
            errors.push(at, format!("`{name}` is also in `env_allow`"));
        } else if seen.contains(&name.as_str()) {
            errors.push(at, format!("`{name}` is named twice"));
        }
        seen.push(name);
    }
    names
}

/// How Bridle reaches an upstream MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpUpstream {
    /// A child process speaking MCP on stdio (argv only; cleared env + `env_allow`).
    Stdio {
        /// Program (absolute path) and arguments.
        argv: Vec<String>,
        /// Environment variables passed through.
        env_allow: Vec<String>,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint URL.
        url: String,
        /// Environment variable holding Bridle's own bearer credential for the upstream.
        credential_env: Option<String>,
        /// File holding it.
        credential_file: Option<String>,
    },
}

/// A configured upstream MCP server (the gateway).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAdapterSettings {
    /// Where it is.
    pub upstream: McpUpstream,
    /// Time allowed for one call (and for connecting).
    pub timeout: Duration,
    /// Longest time between two judgements of the upstream's tool definitions (`relist_ms`,
    /// default 30 s; 0: before every call). A 2026-07-28 upstream sends no
    /// `tools/list_changed` to a gateway that does not subscribe, so re-listing is what sees it.
    pub relist: Duration,
}

/// How often the gateway re-lists an upstream's tools when `relist_ms` is not set.
pub const DEFAULT_RELIST_MS: u64 = 30_000;

/// Whether a request carries the arguments as a JSON body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestBody {
    /// The arguments as JSON.
    Arguments,
    /// No body.
    None,
}

/// How one tool is executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRoute {
    /// By the named HTTP adapter with this request.
    Http {
        /// Adapter name.
        adapter: String,
        /// HTTP method (upper case).
        method: String,
        /// Path template appended to the base URL.
        path: String,
        /// Body.
        body: RequestBody,
    },
    /// By the named command.
    Command {
        /// Adapter name.
        adapter: String,
    },
    /// By the named upstream MCP server's tool.
    Mcp {
        /// Adapter name.
        adapter: String,
        /// The upstream tool's name.
        upstream_tool: String,
        /// The pin of its reviewed definition (`[tools.X] upstream_pin`); `None`: the
        /// definition first seen is trusted for the process's life.
        pin: Option<String>,
    },
}

/// Validated `[adapters]` and the tools routed to them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AdapterSettings {
    /// HTTP adapters by name.
    pub http: BTreeMap<String, HttpAdapterSettings>,
    /// Command adapters by name.
    pub command: BTreeMap<String, CommandAdapterSettings>,
    /// Upstream MCP servers by name.
    pub mcp: BTreeMap<String, McpAdapterSettings>,
    /// Tool → how it runs; tools absent here run in process.
    pub routes: BTreeMap<String, ToolRoute>,
}

impl AdapterSettings {
    /// Whether any tool leaves the process.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }
}

/// A template whose braces do not pair into `{name}` placeholders.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlaceholderError {
    /// A `}` with no `{` before it.
    #[error("unbalanced `}}` in `{0}`")]
    Unbalanced(String),
    /// A `{` never closed.
    #[error("unclosed `{{` in `{0}`")]
    Unclosed(String),
    /// `{}` or a `{` inside a placeholder.
    #[error("bad placeholder in `{0}`")]
    Bad(String),
}

/// The `{name}` placeholders of a template, or `Err` on an unbalanced brace.
pub fn placeholders(template: &str) -> Result<Vec<&str>, PlaceholderError> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find(['{', '}']) {
        let (before, after) = rest.split_at(open);
        if before.len() == open && after.starts_with('}') {
            return Err(PlaceholderError::Unbalanced(template.to_owned()));
        }
        let inner = after.get(1..).unwrap_or_default();
        let Some(close) = inner.find('}') else { return Err(PlaceholderError::Unclosed(template.to_owned())) };
        let name = inner.get(..close).unwrap_or_default();
        if name.is_empty() || name.contains('{') {
            return Err(PlaceholderError::Bad(template.to_owned()));
        }
        out.push(name);
        rest = inner.get(close + 1..).unwrap_or_default();
    }
    Ok(out)
}

fn is_http_url(url: &str) -> bool {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| {
        !r.is_empty()
            && !r.starts_with('/')
            && !r.chars().any(|c| c.is_whitespace() || c == '{' || c == '?' || c == '#' || c == '@')
    })
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn timeout(at: &str, ms: Option<u64>, errors: &mut Errors) -> Duration {
    let ms = ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(1..=MAX_TIMEOUT_MS).contains(&ms) {
        errors.push(format!("{at}.timeout_ms"), format!("must be between 1 and {MAX_TIMEOUT_MS}"));
    }
    Duration::from_millis(ms)
}

fn schema_params(registry: &Registry, tool: &str) -> Option<Vec<String>> {
    let schema = registry.get(tool)?.schema.source().clone();
    let props = schema.get("properties").and_then(Value::as_object)?;
    Some(props.keys().cloned().collect())
}

/// Checks that every placeholder of `template` names one of `params` (when known).
fn check_template(at: &str, template: &str, params: Option<&[String]>, extra: &[&str], errors: &mut Errors) {
    match placeholders(template) {
        Err(e) => errors.push(at, e.to_string()),
        Ok(names) => {
            for name in names {
                let known = extra.contains(&name) || params.is_none_or(|p| p.iter().any(|x| x == name));
                if !known {
                    errors.push(at, format!("placeholder `{{{name}}}` names no parameter"));
                }
            }
        }
    }
}

pub(super) fn adapter_settings(
    raw: &RawAdapters,
    tools: &BTreeMap<String, RawTool>,
    registry: &Registry,
    errors: &mut Errors,
) -> AdapterSettings {
    let mut settings = AdapterSettings::default();
    for (name, h) in &raw.http {
        let at = format!("adapters.http.{name}");
        if !is_http_url(&h.base_url) {
            errors.push(format!("{at}.base_url"), format!("`{}` is not an http:// or https:// URL", h.base_url));
        }
        let auth_header = h.auth_header.clone().unwrap_or_else(|| "Authorization".to_owned());
        if auth_header.is_empty() || !auth_header.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            errors.push(format!("{at}.auth_header"), "must be a header name (letters, digits, `-`)");
        }
        if let Some(path) = &h.status_path {
            if !path.starts_with('/') {
                errors.push(format!("{at}.status_path"), "must start with `/`");
            }
            check_template(&format!("{at}.status_path"), path, Some(&[]), &["job_id"], errors);
        }
        let context_headers = context_headers(&at, h.context_headers.as_ref(), &auth_header, errors);
        let http = HttpAdapterSettings {
            base_url: h.base_url.trim_end_matches('/').to_owned(),
            timeout: timeout(&at, h.timeout_ms, errors),
            auth_header,
            auth_scheme: h.auth_scheme.clone().unwrap_or_else(|| "Bearer".to_owned()),
            status_path: h.status_path.clone(),
            context_headers,
        };
        settings.http.insert(name.clone(), http);
    }
    for (name, c) in &raw.command {
        let at = format!("adapters.command.{name}");
        match c.argv.first() {
            None => errors.push(format!("{at}.argv"), "must name a program"),
            Some(p) if !p.starts_with('/') || p.contains('{') => {
                errors.push(format!("{at}.argv"), format!("`{p}` is not an absolute program path"));
            }
            Some(_) => {}
        }
        for (i, arg) in c.argv.iter().enumerate() {
            let whole = arg.len() > 2 && arg.starts_with('{') && arg.ends_with('}');
            let inner = arg.get(1..arg.len().saturating_sub(1)).unwrap_or_default();
            if (arg.contains(['{', '}']) && !whole) || (whole && inner.contains(['{', '}'])) {
                errors.push(format!("{at}.argv[{i}]"), "a placeholder must be a whole argument (`{param}`)");
            }
        }
        for var in &c.env_allow {
            if !is_env_name(var) {
                errors.push(format!("{at}.env_allow"), format!("`{var}` is not an environment variable name"));
            }
        }
        let max = c.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT);
        if !(1..=MAX_OUTPUT).contains(&max) {
            errors.push(format!("{at}.max_output_bytes"), format!("must be between 1 and {MAX_OUTPUT}"));
        }
        let command = CommandAdapterSettings {
            argv: c.argv.clone(),
            env_allow: c.env_allow.clone(),
            timeout: timeout(&at, c.timeout_ms, errors),
            max_output_bytes: max,
            context_env: context_env(&at, c.context_env.as_ref(), &c.env_allow, errors),
        };
        settings.command.insert(name.clone(), command);
    }
    for (name, m) in &raw.mcp {
        let at = format!("adapters.mcp.{name}");
        let upstream = match (&m.command, &m.url) {
            (Some(argv), None) => {
                if argv.first().is_none_or(|p| !p.starts_with('/')) {
                    errors.push(format!("{at}.command"), "must start with an absolute program path");
                }
                if m.credential_env.is_some() || m.credential_file.is_some() {
                    errors.push(format!("{at}.credential_env"), "applies to `url` upstreams only");
                }
                McpUpstream::Stdio { argv: argv.clone(), env_allow: m.env_allow.clone() }
            }
            (None, Some(url)) => {
                if !is_http_url(url) {
                    errors.push(format!("{at}.url"), format!("`{url}` is not an http:// or https:// URL"));
                }
                if !m.env_allow.is_empty() {
                    errors.push(format!("{at}.env_allow"), "applies to `command` upstreams only");
                }
                if m.credential_env.is_some() && m.credential_file.is_some() {
                    errors.push(format!("{at}.credential_env"), "name `credential_env` or `credential_file`, not both");
                }
                McpUpstream::Http {
                    url: url.clone(),
                    credential_env: m.credential_env.clone(),
                    credential_file: m.credential_file.clone(),
                }
            }
            _ => {
                errors.push(at.clone(), "needs exactly one of `command` (stdio) or `url` (Streamable HTTP)");
                McpUpstream::Stdio { argv: Vec::new(), env_allow: Vec::new() }
            }
        };
        for var in m.env_allow.iter().chain(&m.credential_env) {
            if !is_env_name(var) {
                errors.push(at.clone(), format!("`{var}` is not an environment variable name"));
            }
        }
        let timeout = timeout(&at, m.timeout_ms, errors);
        let relist = Duration::from_millis(m.relist_ms.unwrap_or(DEFAULT_RELIST_MS).min(MAX_TIMEOUT_MS));
        settings.mcp.insert(name.clone(), McpAdapterSettings { upstream, timeout, relist });
    }
    for (tool, t) in tools {
        let at = format!("tools.{tool}");
        if t.upstream_tool.is_some() && !t.adapter.as_deref().is_some_and(|a| a.starts_with("mcp:")) {
            errors.push(format!("{at}.upstream_tool"), "needs `adapter = \"mcp:NAME\"`");
        }
        if let Some(pin) = &t.upstream_pin {
            if !t.adapter.as_deref().is_some_and(|a| a.starts_with("mcp:")) {
                errors.push(format!("{at}.upstream_pin"), "needs `adapter = \"mcp:NAME\"`");
            } else if !crate::contract::pin::is_pin(pin) {
                errors.push(format!("{at}.upstream_pin"), "must be `sha256:` and 64 lowercase hex digits");
            }
        }
        let params = schema_params(registry, tool);
        let Some(reference) = &t.adapter else {
            if t.request.is_some() {
                errors.push(format!("{at}.request"), "needs `adapter = \"http:NAME\"`");
            }
            continue;
        };
        match reference.split_once(':') {
            Some(("http", name)) if raw.http.contains_key(name) => {
                let Some(request) = &t.request else {
                    errors.push(format!("{at}.request"), "an HTTP tool needs `request = { method, path }`");
                    continue;
                };
                let method = request.method.to_ascii_uppercase();
                if !matches!(method.as_str(), "GET" | "POST" | "PUT" | "PATCH" | "DELETE") {
                    errors.push(
                        format!("{at}.request.method"),
                        format!("`{}` is not GET, POST, PUT, PATCH or DELETE", request.method),
                    );
                }
                if !request.path.starts_with('/') {
                    errors.push(format!("{at}.request.path"), "must start with `/`");
                }
                let context = ContextField::ALL.map(ContextField::placeholder);
                check_template(&format!("{at}.request.path"), &request.path, params.as_deref(), &context, errors);
                let body = match request.body.as_deref() {
                    Some("arguments") => RequestBody::Arguments,
                    Some("none") => RequestBody::None,
                    None if matches!(method.as_str(), "GET" | "DELETE") => RequestBody::None,
                    None => RequestBody::Arguments,
                    Some(other) => {
                        errors.push(format!("{at}.request.body"), format!("`{other}` is not `arguments` or `none`"));
                        RequestBody::None
                    }
                };
                let route = ToolRoute::Http { adapter: name.to_owned(), method, path: request.path.clone(), body };
                settings.routes.insert(tool.clone(), route);
            }
            Some(("command", name)) if raw.command.contains_key(name) => {
                if t.request.is_some() {
                    errors.push(format!("{at}.request"), "applies to HTTP tools only");
                }
                if let Some(c) = raw.command.get(name) {
                    for (i, arg) in c.argv.iter().enumerate() {
                        let Some(p) = arg.strip_prefix('{').and_then(|a| a.strip_suffix('}')) else { continue };
                        if params.as_ref().is_some_and(|ps| !ps.iter().any(|x| x == p)) {
                            errors.push(
                                format!("adapters.command.{name}.argv[{i}]"),
                                format!("placeholder `{{{p}}}` names no parameter of `{tool}`"),
                            );
                        }
                    }
                }
                settings.routes.insert(tool.clone(), ToolRoute::Command { adapter: name.to_owned() });
            }
            Some(("mcp", name)) if raw.mcp.contains_key(name) => {
                if t.request.is_some() {
                    errors.push(format!("{at}.request"), "applies to HTTP tools only");
                }
                let upstream_tool = t.upstream_tool.clone().unwrap_or_else(|| tool.clone());
                if upstream_tool.is_empty() {
                    errors.push(format!("{at}.upstream_tool"), "must not be empty");
                }
                let pin = t.upstream_pin.clone();
                settings.routes.insert(tool.clone(), ToolRoute::Mcp { adapter: name.to_owned(), upstream_tool, pin });
            }
            _ => errors.push(
                format!("{at}.adapter"),
                format!(
                    "no adapter `{reference}` (write `http:NAME`, `command:NAME` or `mcp:NAME` of a configured adapter)"
                ),
            ),
        }
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_and_braces_must_balance() {
        assert_eq!(placeholders("/a/{x}/b/{y}").ok(), Some(vec!["x", "y"]));
        assert_eq!(placeholders("/plain").ok(), Some(vec![]));
        assert_eq!(placeholders("/a/{x").map_err(|e| e.to_string()), Err("unclosed `{` in `/a/{x`".to_owned()));
        assert_eq!(placeholders("/a}"), Err(PlaceholderError::Unbalanced("/a}".to_owned())));
        for bad in ["/a/{x", "/a/x}", "/{}", "/{{x}}"] {
            assert!(placeholders(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn base_urls_need_a_scheme_and_a_host() {
        assert!(is_http_url("http://127.0.0.1:9") && is_http_url("https://api.example/v1"));
        for bad in ["ftp://x", "file:///etc/passwd", "https://", "api.example", "https://u:p@host"] {
            assert!(!is_http_url(bad), "{bad}");
        }
    }
}
