//! The HTTP adapter against a local axum server (ETag ↔ If-Match, timeouts, redirects, errors,
//! per-identity credentials kept out of results and audit) and the command adapter with real
//! programs (argv only, cleared environment, timeout, output cap, exit codes).
//!
//! Tests cannot set environment variables (`unsafe_code` is forbidden), so the read identity's
//! credential comes from `CARGO_PKG_NAME`, which cargo sets for every test process, and the
//! change identity's from a file.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bridle_core::Code;
use bridle_core::config::{CommandAdapterSettings, Config, load};
use bridle_core::contract::Mode;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use bridle_runtime::Verdict;
use bridle_runtime::adapter::CommandAdapter;
use bridle_runtime::clock::ManualClock;
use bridle_runtime::engine::Engine;
use bridle_runtime::gate::{CallRequest, Gate};
use bridle_runtime::store::Stores;
use serde_json::{Value, json};
use time::Duration as TimeDuration;

use super::support::{T0, rejection, run};

const READ_SECRET: &str = "bridle-runtime"; // the value of CARGO_PKG_NAME
const CHANGE_SECRET: &str = "change-secret-42";

/// One request the shop saw: (method, path item, authorization, if-match, idempotency-key).
type Seen = (String, String, String, String, String);

#[derive(Clone, Default)]
struct Shop {
    version: Arc<Mutex<i64>>,
    port: Arc<Mutex<u16>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn header(h: &HeaderMap, name: &str) -> String {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

impl Shop {
    fn note(&self, method: &str, item: &str, h: &HeaderMap) {
        let row = (
            method.to_owned(),
            item.to_owned(),
            header(h, "authorization"),
            header(h, "if-match"),
            header(h, "idempotency-key"),
        );
        self.seen.lock().unwrap().push(row);
    }
}

async fn get_item(State(s): State<Shop>, Path(item): Path<String>, h: HeaderMap) -> Response {
    s.note("GET", &item, &h);
    match item.as_str() {
        "slow" => {
            tokio::time::sleep(Duration::from_secs(2)).await;
            StatusCode::OK.into_response()
        }
        "boom" => (StatusCode::INTERNAL_SERVER_ERROR, format!("db down; caller {}", header(&h, "authorization")))
            .into_response(),
        "moved" => {
            let port = *s.port.lock().unwrap();
            (StatusCode::FOUND, [("location", format!("http://localhost:{port}/items/widget"))]).into_response()
        }
        "same" => (StatusCode::FOUND, [("location", "/items/widget")]).into_response(),
        _ => {
            let v = *s.version.lock().unwrap();
            ([("etag", format!("\"{v}\""))], axum::Json(json!({"item": item, "qty": 5}))).into_response()
        }
    }
}

async fn put_item(State(s): State<Shop>, Path(item): Path<String>, h: HeaderMap, body: String) -> Response {
    s.note("PUT", &item, &h);
    let mut v = s.version.lock().unwrap();
    if header(&h, "if-match") != format!("\"{v}\"") {
        return (StatusCode::PRECONDITION_FAILED, [("etag", format!("\"{v}\""))]).into_response();
    }
    *v += 1;
    let args: Value = serde_json::from_str(&body).unwrap();
    ([("etag", format!("\"{v}\""))], axum::Json(json!({"item": item, "qty": args["qty"]}))).into_response()
}

async fn job(State(s): State<Shop>, Path(id): Path<String>) -> StatusCode {
    let known = s.seen.lock().unwrap().iter().any(|r| r.4 == id);
    if known { StatusCode::OK } else { StatusCode::NOT_FOUND }
}

const SCHEMA: &str = r#"
namespace Bridle {
  entity Principal = { tenant: String, services: Set<String>, scopes: Set<String> };
  entity Resource = { tenant: String, kind: String, name: String };
  action get_item appliesTo { principal: Principal, resource: Resource,
    context: { scope: String, mode: String, risk: String, arguments: { item: String } } };
  action set_item appliesTo { principal: Principal, resource: Resource,
    context: { scope: String, mode: String, risk: String,
      arguments: { item: String, qty: Long, resource_version: Long } } };
}
"#;

const POLICY: &str = r#"
@id("items-held")
permit (principal, action, resource)
when { resource.tenant == principal.tenant && principal.scopes.contains(context.scope)
       && principal.services.contains(resource.name) };
"#;

fn shop_toml(port: u16, credential_file: &str) -> String {
    format!(
        r#"
[policy]
schema = "t.cedarschema"
files = ["t.cedar"]

[executors.shop-reader]
mode = "read"
credential_env = "CARGO_PKG_NAME"
[executors.shop-changer]
mode = "change"
credential_file = "{credential_file}"

[adapters.http.shop]
base_url = "http://127.0.0.1:{port}/"
timeout_ms = 300
status_path = "/jobs/{{job_id}}"

[tools.get_item]
description = "Read an item."
mode = "read"
scope = "shop:read"
risk = "read"
executor = "shop-reader"
adapter = "http:shop"
request = {{ method = "GET", path = "/items/{{item}}" }}
resource = {{ kind = "item", param = "item" }}
input_schema = {{ type = "object", additionalProperties = false, required = ["item"], properties = {{ item = {{ type = "string" }} }} }}

[tools.set_item]
description = "Set an item's quantity."
mode = "change"
scope = "shop:change"
risk = "limited_change"
executor = "shop-changer"
approval = "auto"
adapter = "http:shop"
request = {{ method = "PUT", path = "/items/{{item}}" }}
resource = {{ kind = "item", param = "item" }}
input_schema = {{ type = "object", additionalProperties = false, required = ["item", "qty", "resource_version"], properties = {{ item = {{ type = "string" }}, qty = {{ type = "integer" }}, resource_version = {{ type = "integer" }} }} }}

[principals.clerk]
tenant = "shop-1"
services = ["widget", "slow", "boom", "moved", "same"]
scopes = ["shop:read", "shop:change"]
"#
    )
}

fn files(p: &str) -> Result<String, String> {
    match p {
        "t.cedarschema" => Ok(SCHEMA.to_owned()),
        "t.cedar" => Ok(POLICY.to_owned()),
        _ => Err(format!("no file `{p}`")),
    }
}

struct Fixture {
    gate: Gate,
    adapter: Arc<dyn Adapter>,
    config: Arc<Config>,
    shop: Shop,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let shop = Shop { version: Arc::new(Mutex::new(3)), ..Shop::default() };
    let app = Router::new()
        .route("/items/{item}", get(get_item).put(put_item))
        .route("/jobs/{id}", get(job))
        .with_state(shop.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    *shop.port.lock().unwrap() = port;
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    let cred = dir.path().join("change.token");
    std::fs::write(&cred, format!("{CHANGE_SECRET}\n")).unwrap();
    let config =
        Arc::new(load(&shop_toml(port, &cred.display().to_string()), &files).unwrap_or_else(|e| panic!("{e}")));
    let adapter =
        bridle_runtime::adapter::from_config(&config, std::sync::Arc::new(bridle_runtime::adapter::NoTools)).unwrap();
    let clock = Arc::new(ManualClock::new(T0 + TimeDuration::seconds(10)));
    let gate = Engine::builder(config.clone(), Stores::memory(), adapter.clone()).clock(clock).gate().unwrap();
    Fixture { gate, adapter, config, shop, _dir: dir }
}

impl Fixture {
    async fn call(&self, tool: &str, args: Value) -> bridle_runtime::CallOutcome {
        let clerk = self.config.principals["clerk"].clone();
        self.gate.call(&clerk, &run(), &CallRequest::new(tool, args)).await.unwrap()
    }
}

fn ok(o: &bridle_runtime::CallOutcome) -> Value {
    match &o.verdict {
        Verdict::Ok { result } => result.clone(),
        other => panic!("not ok: {other:?}"),
    }
}

#[tokio::test]
async fn http_read_returns_the_body_and_the_etag_as_resource_version() {
    let f = fixture().await;
    let result = ok(&f.call("get_item", json!({"item": "widget"})).await);
    assert_eq!(result["item"], "widget");
    assert_eq!(result["qty"], 5);
    assert_eq!(result["resource_version"], 3);
    let seen = f.shop.seen.lock().unwrap().clone();
    assert_eq!(seen[0].2, format!("Bearer {READ_SECRET}"), "the read identity's credential");
}

#[tokio::test]
async fn http_change_sends_if_match_and_a_stale_version_is_refused() {
    let f = fixture().await;
    let stale = f.call("set_item", json!({"item": "widget", "qty": 9, "resource_version": 2})).await;
    assert_eq!(rejection(&stale).code, Code::ResourceVersionChanged);
    let done = f.call("set_item", json!({"item": "widget", "qty": 9, "resource_version": 3})).await;
    let result = ok(&done);
    assert_eq!((result["qty"].clone(), result["resource_version"].clone()), (json!(9), json!(4)));
    let seen = f.shop.seen.lock().unwrap().clone();
    let put = seen.iter().rfind(|r| r.0 == "PUT").unwrap().clone();
    assert_eq!(put.2, format!("Bearer {CHANGE_SECRET}"), "the change identity's credential");
    assert_eq!(put.3, "\"3\"");
    let job_id = done.job_id.clone().unwrap();
    assert_eq!(put.4, job_id, "the job id is the idempotency key");
    // The status endpoint answers what became of the job.
    let job = f.gate.stores().jobs.get_job(&job_id).await.unwrap().unwrap();
    assert!(matches!(f.adapter.outcome(&job).await.unwrap(), Outcome::Applied(_)));
}

#[tokio::test]
async fn http_slow_server_times_out_and_errors_fail_without_leaking_credentials() {
    let f = fixture().await;
    let started = Instant::now();
    let slow = f.call("get_item", json!({"item": "slow"})).await;
    assert_eq!(rejection(&slow).code, Code::AdapterTimeout);
    assert!(started.elapsed() < Duration::from_millis(1500));

    let boom = rejection(&f.call("get_item", json!({"item": "boom"})).await);
    assert_eq!(boom.code, Code::AdapterFailed);
    assert!(boom.message.contains("HTTP 500") && boom.message.contains("db down"), "{}", boom.message);
    // The server echoed the credential; neither the result nor the audit log carries it.
    let audit = bridle_runtime::audit::export(f.gate.stores().audit.as_ref(), None).await.unwrap();
    let audit = serde_json::to_string(&audit).unwrap();
    for secret in [READ_SECRET, CHANGE_SECRET] {
        assert!(!boom.message.contains(secret), "{}", boom.message);
        assert!(!audit.contains(secret), "audit carries a credential");
    }
}

#[tokio::test]
async fn http_redirects_to_another_host_are_not_followed() {
    let f = fixture().await;
    let moved = rejection(&f.call("get_item", json!({"item": "moved"})).await);
    assert_eq!(moved.code, Code::AdapterFailed);
    assert!(moved.message.contains("HTTP 302"), "{}", moved.message);
    assert!(f.shop.seen.lock().unwrap().iter().all(|r| r.1 != "widget"), "the redirect was followed");
    // The same origin is fine.
    let same = ok(&f.call("get_item", json!({"item": "same"})).await);
    assert_eq!(same["item"], "widget");
}

fn command(argv: &[&str], env_allow: &[&str], timeout_ms: u64, max_output_bytes: usize) -> CommandAdapter {
    let settings = CommandAdapterSettings {
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        env_allow: env_allow.iter().map(|s| (*s).to_owned()).collect(),
        timeout: Duration::from_millis(timeout_ms),
        max_output_bytes,
        context_env: Vec::new(),
    };
    let tools = BTreeMap::from([("run".to_owned(), (Mode::Read, "box-reader".to_owned()))]);
    CommandAdapter::new("box", settings, tools)
}

fn call(arguments: Value) -> AdapterCall {
    AdapterCall {
        tool: "run".into(),
        tenant: "t".into(),
        subject: "s".into(),
        run_id: "r".into(),
        incident: "i".into(),
        arguments,
        identity: "box-reader".into(),
        job_id: None,
    }
}

#[tokio::test]
async fn command_arguments_are_never_shell_interpreted() {
    let c = command(&["/usr/bin/printf", "%s\\n", "{a}", "{b}"], &[], 2000, 4096);
    let out = c.read(&call(json!({"a": "; rm -rf / #", "b": "$(whoami) `id` *"}))).await.unwrap();
    assert_eq!(out["output"], "; rm -rf / #\n$(whoami) `id` *\n");
    let json = command(&["/usr/bin/printf", "[%s]", "{n}"], &[], 2000, 4096);
    assert_eq!(json.read(&call(json!({"n": 7}))).await.unwrap(), json!([7]));
    // The wrong identity or entry point is refused before anything runs.
    let mut other = call(json!({"a": "x", "b": "y"}));
    other.identity = "someone".into();
    assert!(matches!(c.read(&other).await, Err(AdapterError::IdentityRejected(_))));
    assert!(matches!(c.change(&call(json!({"a": "x", "b": "y"}))).await, Err(AdapterError::Failed(_))));
}

#[tokio::test]
async fn command_environment_is_cleared_except_the_allowlist() {
    let c = command(&["/usr/bin/env"], &["CARGO_PKG_NAME"], 2000, 65536);
    let out = c.read(&call(json!({}))).await.unwrap();
    let text = out["output"].as_str().unwrap();
    let mut names: Vec<&str> = text.lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
    names.sort_unstable();
    assert_eq!(names, ["BRIDLE_IDENTITY", "CARGO_PKG_NAME"], "{text}");
}

#[tokio::test]
async fn command_timeout_kills_and_output_cap_and_exit_codes_fail() {
    let started = Instant::now();
    let slow = command(&["/bin/sleep", "5"], &[], 200, 4096).read(&call(json!({}))).await;
    assert_eq!(slow, Err(AdapterError::Timeout));
    assert!(started.elapsed() < Duration::from_secs(2));

    let big = command(&["/usr/bin/seq", "1", "100000"], &[], 5000, 1000).read(&call(json!({}))).await;
    assert!(matches!(&big, Err(AdapterError::Failed(m)) if m.contains("more than 1000 bytes")), "{big:?}");

    let failed = command(&["/bin/ls", "/no/such/dir-bridle"], &[], 5000, 4096).read(&call(json!({}))).await;
    assert!(
        matches!(&failed, Err(AdapterError::Failed(m)) if m.contains("exited with code") && m.contains("dir-bridle")),
        "{failed:?}"
    );
    let missing = command(&["/usr/bin/printf", "{absent}"], &[], 5000, 4096).read(&call(json!({}))).await;
    assert!(matches!(missing, Err(AdapterError::Failed(_))));
}
