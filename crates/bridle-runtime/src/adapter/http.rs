//! The HTTP adapter: each tool maps to a request template on one configured base URL.
//!
//! - `{param}` placeholders in the path are filled from the arguments, percent-encoded.
//! - Each executor identity sends its own credential (read at start-up) in the configured
//!   header; reads and changes never share one.
//! - `resource_version` ↔ ETag: a result carries the response's ETag as `resource_version`; a
//!   change sends the argument's `resource_version` as `If-Match`, and `412` becomes
//!   [`AdapterError::VersionChanged`]. The job id goes out as `Idempotency-Key`.
//! - Redirects are followed only to the same scheme, host and port; otherwise the 3xx answer
//!   fails the call. Non-2xx → `Failed` with the status and a clipped, masked snippet; timeouts
//!   → `Timeout`; a change whose answer is lost after sending → `Lost`.
//! - `outcome` asks `status_path` (`{job_id}`): 2xx → applied, 404 → not applied, else unknown.
//! - The call's context goes out where the adapter's config asks: `context_headers` (tenant,
//!   subject, run id, incident, each in its own header) and `{bridle.…}` path placeholders
//!   (percent-encoded). Values come from the principal and the run record, never from
//!   arguments; a value a header cannot carry as it is (a control character such as CR or LF,
//!   anything outside printable ASCII) fails the call before anything is sent, so no value can
//!   add a header of its own.

use std::collections::BTreeMap;

use async_trait::async_trait;
use bridle_core::config::{ContextField, HttpAdapterSettings, RequestBody};
use bridle_core::contract::Mode;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use reqwest::redirect::{Attempt, Policy};
use serde_json::{Map, Value};

/// The argument compared through `If-Match`.
const VERSION_FIELD: &str = "resource_version";
/// Largest response body accepted (bytes); a larger successful answer fails the call.
const MAX_BODY: usize = 4 * 1024 * 1024;
/// Characters of an error body quoted in a failure.
const SNIPPET_CHARS: usize = 200;
/// Redirects followed at most (same origin only).
const MAX_REDIRECTS: usize = 5;

/// One tool served by an [`HttpAdapter`].
#[derive(Debug, Clone)]
pub struct HttpTool {
    /// Read or change.
    pub mode: Mode,
    /// The executor identity it runs as.
    pub executor: String,
    /// HTTP method.
    pub method: reqwest::Method,
    /// Path template.
    pub path: String,
    /// Body.
    pub body: RequestBody,
}

/// A configured HTTP endpoint and its tools.
pub struct HttpAdapter {
    name: String,
    settings: HttpAdapterSettings,
    client: reqwest::Client,
    tools: BTreeMap<String, HttpTool>,
    /// Identity → its credential (raw; the header adds the scheme).
    credentials: BTreeMap<String, String>,
}

impl std::fmt::Debug for HttpAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpAdapter").field("name", &self.name).field("base_url", &self.settings.base_url).finish()
    }
}

fn same_origin(attempt: &Attempt<'_>) -> bool {
    let next = attempt.url();
    attempt.previous().first().is_some_and(|first| {
        first.scheme() == next.scheme()
            && first.host_str() == next.host_str()
            && first.port_or_known_default() == next.port_or_known_default()
    })
}

impl HttpAdapter {
    /// An adapter named `name` for `tools`, sending `credentials` (identity → secret).
    pub fn new(
        name: &str,
        settings: HttpAdapterSettings,
        tools: BTreeMap<String, HttpTool>,
        credentials: BTreeMap<String, String>,
    ) -> Result<Self, super::SetupError> {
        crate::llm::openai::install_tls_provider();
        let policy = Policy::custom(|attempt| {
            if !same_origin(&attempt) {
                attempt.stop()
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else {
                attempt.follow()
            }
        });
        let client = reqwest::Client::builder()
            .timeout(settings.timeout)
            .redirect(policy)
            .build()
            .map_err(|e| super::SetupError::Client { name: name.to_owned(), cause: e.to_string() })?;
        Ok(Self { name: name.to_owned(), settings, client, tools, credentials })
    }

    fn tool(&self, call: &AdapterCall, mode: Mode) -> Result<&HttpTool, AdapterError> {
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
        Ok(tool)
    }

    /// Replaces every credential in `text` (errors, results) with `***`.
    fn mask(&self, text: &str) -> String {
        self.credentials.values().filter(|c| !c.is_empty()).fold(text.to_owned(), |t, c| t.replace(c.as_str(), "***"))
    }

    fn request(&self, method: reqwest::Method, path: &str, identity: &str) -> reqwest::RequestBuilder {
        let mut request = self.client.request(method, format!("{}{path}", self.settings.base_url));
        if let Some(secret) = self.credentials.get(identity) {
            let value = if self.settings.auth_scheme.is_empty() {
                secret.clone()
            } else {
                format!("{} {secret}", self.settings.auth_scheme)
            };
            request = request.header(self.settings.auth_header.as_str(), value);
        }
        request
    }

    async fn send(&self, call: &AdapterCall, mode: Mode) -> Result<Value, AdapterError> {
        let tool = self.tool(call, mode)?;
        let path = fill_path_for(&tool.path, call)?;
        let mut request = self.request(tool.method.clone(), &path, &call.identity);
        for (field, header) in &self.settings.context_headers {
            request = request.header(header.as_str(), header_value(*field, call)?);
        }
        let expected = call.arguments.get(VERSION_FIELD).map(render);
        if mode == Mode::Change {
            if let Some(job) = &call.job_id {
                request = request.header("Idempotency-Key", job.as_str());
            }
            if let Some(Ok(version)) = &expected {
                request = request.header("If-Match", format!("\"{version}\""));
            }
        }
        if tool.body == RequestBody::Arguments {
            let body = serde_json::to_vec(&call.arguments).map_err(|e| AdapterError::Failed(e.to_string()))?;
            request = request.header("Content-Type", "application/json").body(body);
        }
        let response = request.send().await.map_err(|e| self.transport(&e, mode))?;
        let status = response.status();
        let etag = response.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body = read_body(response).await.map_err(|e| self.transport(&e, mode))?;
        if body.len() > MAX_BODY && status.is_success() {
            return Err(AdapterError::Failed(format!("`{}` answered more than {MAX_BODY} bytes", self.name)));
        }
        if status == reqwest::StatusCode::PRECONDITION_FAILED {
            return Err(AdapterError::VersionChanged {
                expected: expected.and_then(Result::ok).unwrap_or_else(|| "none".to_owned()),
                actual: etag.as_deref().map_or_else(|| "unknown".to_owned(), |e| unquote(e).to_owned()),
            });
        }
        if !status.is_success() {
            return Err(AdapterError::Failed(format!(
                "`{}` answered HTTP {}: {}",
                self.name,
                status.as_u16(),
                self.snippet(&body)
            )));
        }
        self.result(&body, etag.as_deref())
    }

    fn transport(&self, e: &reqwest::Error, mode: Mode) -> AdapterError {
        let message = self.mask(&e.to_string());
        if e.is_timeout() {
            AdapterError::Timeout
        } else if e.is_connect() || mode == Mode::Read {
            AdapterError::Failed(format!("`{}`: {message}", self.name))
        } else {
            AdapterError::Lost(format!("`{}`: {message}", self.name))
        }
    }

    fn snippet(&self, body: &[u8]) -> String {
        let text = String::from_utf8_lossy(body);
        let clipped: String = text.chars().take(SNIPPET_CHARS).map(|c| if c.is_control() { ' ' } else { c }).collect();
        let more = if text.chars().count() > SNIPPET_CHARS { "…" } else { "" };
        format!("{}{more}", self.mask(clipped.trim()))
    }

    /// The body as JSON (or `{"body": text}`), masked, with the ETag as `resource_version`.
    fn result(&self, body: &[u8], etag: Option<&str>) -> Result<Value, AdapterError> {
        let text = self.mask(&String::from_utf8_lossy(body));
        let mut value = if text.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(&text).unwrap_or_else(|_| serde_json::json!({ "body": text }))
        };
        if let (Some(etag), Value::Object(map)) = (etag, &mut value) {
            let version = unquote(etag);
            let version = version.parse::<i64>().map_or_else(|_| Value::from(version), Value::from);
            map.insert(VERSION_FIELD.to_owned(), version);
        }
        Ok(value)
    }
}

/// `W/"7"` → `7`.
fn unquote(etag: &str) -> &str {
    let etag = etag.trim();
    let etag = etag.strip_prefix("W/").unwrap_or(etag);
    etag.strip_prefix('"').and_then(|e| e.strip_suffix('"')).unwrap_or(etag)
}

/// A scalar argument as text (`"a"` → `a`, `7` → `7`).
fn render(v: &Value) -> Result<String, AdapterError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err(AdapterError::Failed("only strings, numbers and booleans fill a placeholder".to_owned())),
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A context field as a header value: printable ASCII only, so no value can end the header
/// and start another (CR, LF) or be read differently by the target.
// INVARIANT: a context header carries exactly its one value, or the call fails unsent.
pub fn header_value(field: ContextField, call: &AdapterCall) -> Result<String, AdapterError> {
    let value = field.value(call);
    if value.chars().all(|c| c == ' ' || c.is_ascii_graphic()) {
        Ok(value.to_owned())
    } else {
        Err(AdapterError::Failed(format!(
            "the {} {value:?} cannot be sent in a header (printable ASCII only)",
            field.as_str()
        )))
    }
}

/// Fills `{param}` placeholders of a path template from the arguments, percent-encoded.
pub fn fill_path(template: &str, arguments: &Value) -> Result<String, AdapterError> {
    fill(template, arguments, None)
}

/// [`fill_path`] for a call: `{bridle.tenant}`, `{bridle.subject}`, `{bridle.run_id}` and
/// `{bridle.incident}` come from the call's context, every other placeholder from its arguments.
pub fn fill_path_for(template: &str, call: &AdapterCall) -> Result<String, AdapterError> {
    fill(template, &call.arguments, Some(call))
}

fn fill(template: &str, arguments: &Value, call: Option<&AdapterCall>) -> Result<String, AdapterError> {
    let names = bridle_core::config::placeholders(template).map_err(|e| AdapterError::Failed(e.to_string()))?;
    let mut path = template.to_owned();
    for name in names {
        let context = ContextField::from_placeholder(name);
        let value =
            match (context, call) {
                (Some(field), Some(call)) => field.value(call).to_owned(),
                (Some(_), None) => return Err(AdapterError::Failed(format!("`{{{name}}}` needs the call's context"))),
                (None, _) => render(arguments.get(name).ok_or_else(|| {
                    AdapterError::Failed(format!("argument `{name}` is missing for the request path"))
                })?)?,
            };
        // `.`, `..` (even percent-encoded) would be resolved as path segments by the URL parser.
        if matches!(value.as_str(), "" | "." | "..") {
            return Err(AdapterError::Failed(format!("argument `{name}` may not be empty, `.` or `..` in a path")));
        }
        path = path.replace(&format!("{{{name}}}"), &percent_encode(&value));
    }
    Ok(path)
}

async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        // Keeps one byte past the cap so the caller can tell an oversized body.
        let room = MAX_BODY.saturating_add(1).saturating_sub(body.len());
        body.extend_from_slice(chunk.get(..chunk.len().min(room)).unwrap_or_default());
        if body.len() > MAX_BODY {
            break;
        }
    }
    Ok(body)
}

#[async_trait]
impl Adapter for HttpAdapter {
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.send(call, Mode::Read).await
    }

    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.send(call, Mode::Change).await
    }

    async fn outcome(&self, job: &Job) -> Result<Outcome, AdapterError> {
        let Some(template) = &self.settings.status_path else { return Ok(Outcome::Unknown) };
        let path = template.replace("{job_id}", &percent_encode(&job.id));
        let response = self
            .request(reqwest::Method::GET, &path, &job.executor)
            .send()
            .await
            .map_err(|e| self.transport(&e, Mode::Read))?;
        let status = response.status();
        let body = read_body(response).await.map_err(|e| self.transport(&e, Mode::Read))?;
        if status.is_success() {
            Ok(Outcome::Applied(self.result(&body, None)?))
        } else if status == reqwest::StatusCode::NOT_FOUND {
            Ok(Outcome::NotApplied)
        } else {
            Ok(Outcome::Unknown)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_filled_percent_encoded() {
        let args = serde_json::json!({"item": "a b/../c?d", "n": 7});
        assert_eq!(fill_path("/items/{item}/{n}", &args).ok().as_deref(), Some("/items/a%20b%2F..%2Fc%3Fd/7"));
        assert!(fill_path("/items/{missing}", &args).is_err());
        for dots in ["", ".", ".."] {
            assert!(fill_path("/items/{item}", &serde_json::json!({"item": dots})).is_err());
        }
        assert_eq!(unquote("W/\"12\""), "12");
    }
}
