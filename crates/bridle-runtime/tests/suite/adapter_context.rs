//! Adapters tell their target whose call it is: `examples/multitenant` against a real local HTTP
//! service and a real program. The tenant, subject, run id and incident come from the principal
//! and the run, never from the arguments, and no value can smuggle in a header of its own.

use std::collections::BTreeMap;
use std::path::{Path as FsPath, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bridle_core::config::{Config, ContextField, HttpAdapterSettings, RequestBody, load};
use bridle_core::contract::Mode;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError};
use bridle_core::{Code, RunContext};
use bridle_runtime::Verdict;
use bridle_runtime::adapter::HttpAdapter;
use bridle_runtime::adapter::http::HttpTool;
use bridle_runtime::clock::ManualClock;
use bridle_runtime::engine::Engine;
use bridle_runtime::gate::{CallRequest, Gate};
use bridle_runtime::store::Stores;
use serde_json::{Value, json};
use time::Duration as TimeDuration;

use super::support::{T0, rejection};

const READ_SECRET: &str = "bridle-runtime"; // the value of CARGO_PKG_NAME

fn example_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/multitenant")
}

/// One request the order service saw: method, path and the context headers.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    method: String,
    path: String,
    tenant: String,
    subject: String,
    run: String,
    incident: String,
    authorization: String,
}

#[derive(Clone, Default)]
struct Orders {
    seen: Arc<Mutex<Vec<Seen>>>,
}

fn header(h: &HeaderMap, name: &str) -> String {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
}

/// Which tenant owns an order, as only the service knows.
fn owner(order: &str) -> &'static str {
    if order.starts_with('1') { "acme" } else { "globex" }
}

impl Orders {
    /// Records the request; `Err` when the service refuses it for another tenant.
    fn admit(&self, method: &str, tenant: &str, order: &str, h: &HeaderMap) -> Result<(), (StatusCode, String)> {
        let seen = Seen {
            method: method.to_owned(),
            path: format!("/tenants/{tenant}/orders/{order}"),
            tenant: header(h, "x-bridle-tenant"),
            subject: header(h, "x-bridle-subject"),
            run: header(h, "x-bridle-run"),
            incident: header(h, "x-bridle-incident"),
            authorization: header(h, "authorization"),
        };
        let told = seen.tenant.clone();
        self.seen.lock().unwrap().push(seen);
        if told != tenant {
            return Err((StatusCode::FORBIDDEN, "the path and the header name different tenants".to_owned()));
        }
        if owner(order) != told {
            return Err((StatusCode::NOT_FOUND, format!("no order {order} in tenant {told}")));
        }
        Ok(())
    }
}

async fn get_order(State(s): State<Orders>, Path((tenant, order)): Path<(String, String)>, h: HeaderMap) -> Response {
    if let Err(refused) = s.admit("GET", &tenant, &order, &h) {
        return refused.into_response();
    }
    ([("etag", "\"1\"")], axum::Json(json!({"order": order, "amount_cents": 9000}))).into_response()
}

async fn refund(
    State(s): State<Orders>,
    Path((tenant, order)): Path<(String, String)>,
    h: HeaderMap,
    body: String,
) -> Response {
    if let Err(refused) = s.admit("POST", &tenant, &order, &h) {
        return refused.into_response();
    }
    let args: Value = serde_json::from_str(&body).unwrap();
    axum::Json(json!({"order": order, "refunded_cents": args["amount_cents"]})).into_response()
}

async fn serve_orders() -> (Orders, u16) {
    let orders = Orders::default();
    let app = Router::new()
        .route("/tenants/{tenant}/orders/{order}", get(get_order))
        .route("/tenants/{tenant}/orders/{order}/refunds", post(refund))
        .with_state(orders.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (orders, port)
}

fn files(dir: &FsPath) -> impl Fn(&str) -> Result<String, String> + '_ {
    move |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| format!("`{rel}`: {e}"))
}

/// The example's configuration pointed at the local service, with credentials a test can
/// provide (it cannot set environment variables) and `/usr/bin/env` as the invoice exporter.
fn local_example(port: u16, change_secret_file: &FsPath) -> Config {
    let dir = example_dir();
    let text = std::fs::read_to_string(dir.join("bridle.toml"))
        .unwrap()
        .replace("http://127.0.0.1:8091", &format!("http://127.0.0.1:{port}"))
        .replace("credential_env = \"ORDERS_READ_TOKEN\"", "credential_env = \"CARGO_PKG_NAME\"")
        .replace(
            "credential_env = \"ORDERS_CHANGE_TOKEN\"",
            &format!("credential_file = \"{}\"", change_secret_file.display()),
        )
        .replace(r#"argv = ["/usr/local/bin/export-invoices", "--month", "{month}"]"#, r#"argv = ["/usr/bin/env"]"#);
    load(&text, &files(&dir)).unwrap_or_else(|e| panic!("{e}"))
}

struct Fixture {
    gate: Gate,
    config: Arc<Config>,
    orders: Orders,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let (orders, port) = serve_orders().await;
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("orders-change.token");
    std::fs::write(&secret, "change-secret-7\n").unwrap();
    let config = Arc::new(local_example(port, &secret));
    let adapter =
        bridle_runtime::adapter::from_config(&config, std::sync::Arc::new(bridle_runtime::adapter::NoTools)).unwrap();
    let clock = Arc::new(ManualClock::new(T0 + TimeDuration::seconds(10)));
    let gate = Engine::builder(config.clone(), Stores::memory(), adapter).clock(clock).gate().unwrap();
    Fixture { gate, config, orders, _dir: dir }
}

fn run(id: &str, incident: &str) -> RunContext {
    RunContext::new(id, incident)
}

impl Fixture {
    async fn call(&self, who: &str, run: &RunContext, tool: &str, args: Value) -> bridle_runtime::CallOutcome {
        let principal = self.config.principals[who].clone();
        self.gate.call(&principal, run, &CallRequest::new(tool, args)).await.unwrap()
    }

    fn seen(&self) -> Vec<Seen> {
        self.orders.seen.lock().unwrap().clone()
    }
}

fn ok(o: &bridle_runtime::CallOutcome) -> Value {
    match &o.verdict {
        Verdict::Ok { result } => result.clone(),
        other => panic!("not ok: {other:?}"),
    }
}

#[test]
fn the_multitenant_example_validates_and_asks_for_the_context() {
    let config =
        bridle_runtime::bundled::from_path(&example_dir().join("bridle.toml")).unwrap_or_else(|e| panic!("{e}"));
    let headers: Vec<_> =
        config.adapters.http["orders"].context_headers.iter().map(|(f, h)| (*f, h.as_str())).collect();
    assert_eq!(
        headers,
        [
            (ContextField::Tenant, "X-Bridle-Tenant"),
            (ContextField::Subject, "X-Bridle-Subject"),
            (ContextField::RunId, "X-Bridle-Run"),
            (ContextField::Incident, "X-Bridle-Incident"),
        ]
    );
    let env: Vec<_> = config.adapters.command["invoices"].context_env.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(env, ["BRIDLE_TENANT", "BRIDLE_SUBJECT", "BRIDLE_RUN_ID", "BRIDLE_INCIDENT"]);
}

#[tokio::test]
async fn the_http_target_is_told_the_tenant_subject_run_and_incident_of_reads_and_changes() {
    let f = fixture().await;
    let acme_run = run("acme/run-7", "inc-42");
    let read = ok(&f.call("acme-agent", &acme_run, "get_order", json!({"order": "1001"})).await);
    assert_eq!((read["order"].clone(), read["resource_version"].clone()), (json!("1001"), json!(1)));
    let refund = json!({"order": "1001", "amount_cents": 500, "resource_version": 1});
    let done = ok(&f.call("acme-agent", &acme_run, "refund_order", refund).await);
    assert_eq!(done["refunded_cents"], 500);
    let told = |method: &str| Seen {
        method: method.to_owned(),
        path: "/tenants/acme/orders/1001".to_owned(),
        tenant: "acme".to_owned(),
        subject: "acme-agent".to_owned(),
        run: "acme/run-7".to_owned(),
        incident: "inc-42".to_owned(),
        authorization: String::new(),
    };
    let seen = f.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(Seen { authorization: String::new(), ..seen[0].clone() }, told("GET"));
    assert_eq!(Seen { authorization: String::new(), ..seen[1].clone() }, told("POST"));
    assert_eq!(seen[0].authorization, format!("Bearer {READ_SECRET}"), "the credential is still the identity's own");
    assert_eq!(seen[1].authorization, "Bearer change-secret-7");
}

#[tokio::test]
async fn another_tenants_order_is_refused_by_the_target_that_knows_the_tenant() {
    // globex's token holds the `orders` service too, so Bridle's policy allows the read; only the
    // service knows that order 1001 is acme's, and it can tell because it is told the tenant.
    let f = fixture().await;
    let globex_run = run("globex/run-1", "inc-9");
    let refused = rejection(&f.call("globex-agent", &globex_run, "get_order", json!({"order": "1001"})).await);
    assert_eq!(refused.code, Code::AdapterFailed);
    assert!(refused.message.contains("HTTP 404") && refused.message.contains("tenant globex"), "{}", refused.message);
    let own = ok(&f.call("globex-agent", &globex_run, "get_order", json!({"order": "2002"})).await);
    assert_eq!(own["order"], "2002");
    let seen = f.seen();
    assert!(seen.iter().all(|s| s.tenant == "globex" && s.path.starts_with("/tenants/globex/")), "{seen:?}");
}

#[tokio::test]
async fn the_command_target_finds_the_context_in_its_environment() {
    let f = fixture().await;
    let globex_run = run("globex/run-3", "inc-77");
    let out = ok(&f.call("globex-agent", &globex_run, "export_invoices", json!({"month": "2026-11"})).await);
    let text = out["output"].as_str().unwrap();
    let env: BTreeMap<&str, &str> = text.lines().filter_map(|l| l.split_once('=')).collect();
    assert_eq!(env.get("BRIDLE_TENANT"), Some(&"globex"), "{text}");
    assert_eq!(env.get("BRIDLE_SUBJECT"), Some(&"globex-agent"));
    assert_eq!(env.get("BRIDLE_RUN_ID"), Some(&"globex/run-3"));
    assert_eq!(env.get("BRIDLE_INCIDENT"), Some(&"inc-77"));
    assert_eq!(env.get("BRIDLE_IDENTITY"), Some(&"invoice-exporter"));
}

fn direct_adapter(port: u16) -> HttpAdapter {
    let settings = HttpAdapterSettings {
        base_url: format!("http://127.0.0.1:{port}"),
        timeout: Duration::from_secs(2),
        auth_header: "Authorization".to_owned(),
        auth_scheme: "Bearer".to_owned(),
        status_path: None,
        context_headers: vec![
            (ContextField::Tenant, "X-Bridle-Tenant".to_owned()),
            (ContextField::Subject, "X-Bridle-Subject".to_owned()),
        ],
    };
    let tool = HttpTool {
        mode: Mode::Read,
        executor: "orders-reader".to_owned(),
        method: reqwest::Method::GET,
        path: "/tenants/{bridle.tenant}/orders/{order}".to_owned(),
        body: RequestBody::None,
    };
    HttpAdapter::new("orders", settings, BTreeMap::from([("get_order".to_owned(), tool)]), BTreeMap::new()).unwrap()
}

fn direct_call(tenant: &str, subject: &str, arguments: Value) -> AdapterCall {
    AdapterCall {
        tool: "get_order".into(),
        tenant: tenant.into(),
        subject: subject.into(),
        run_id: "r".into(),
        incident: "i".into(),
        arguments,
        identity: "orders-reader".into(),
        job_id: None,
    }
}

#[tokio::test]
async fn a_context_value_with_a_line_break_never_becomes_a_second_header() {
    let (orders, port) = serve_orders().await;
    let adapter = direct_adapter(port);
    for subject in ["mallory\r\nX-Bridle-Tenant: globex", "mallory\nX-Injected: 1", "nul\0byte", "ｍａｌｌｏｒｙ"]
    {
        let refused = adapter.read(&direct_call("acme", subject, json!({"order": "1001"}))).await;
        assert!(
            matches!(&refused, Err(AdapterError::Failed(m)) if m.contains("cannot be sent in a header")),
            "{subject:?}: {refused:?}"
        );
    }
    assert!(orders.seen.lock().unwrap().is_empty(), "nothing was sent");
    // Arguments cannot stand in for the context: `{bridle.tenant}` is the call's tenant.
    let ok =
        adapter.read(&direct_call("acme", "acme-agent", json!({"order": "1001", "bridle.tenant": "globex"}))).await;
    assert_eq!(ok.unwrap()["order"], "1001");
    let seen = orders.seen.lock().unwrap().clone();
    assert_eq!((seen[0].path.as_str(), seen[0].tenant.as_str()), ("/tenants/acme/orders/1001", "acme"));
}

#[test]
fn context_names_that_would_clash_are_refused_at_load() {
    let dir = example_dir();
    let text = std::fs::read_to_string(dir.join("bridle.toml")).unwrap();
    let bad = text
        .replace(
            r#"context_headers = { tenant = "X-Bridle-Tenant", subject = "X-Bridle-Subject", run_id = "X-Bridle-Run", incident = "X-Bridle-Incident" }"#,
            r#"context_headers = { tenant = "Authorization", subject = "x-who", run_id = "X-Who", incident = "Bad Header" }"#,
        )
        .replace(
            r#"context_env = { tenant = "BRIDLE_TENANT", subject = "BRIDLE_SUBJECT", run_id = "BRIDLE_RUN_ID", incident = "BRIDLE_INCIDENT" }"#,
            r#"context_env = { tenant = "LD_PRELOAD", subject = "BRIDLE_JOB_ID", run_id = "PATH", incident = "lower" }"#,
        );
    let errors = load(&bad, &files(&dir)).err().unwrap().to_string();
    for at in [
        "adapters.http.orders.context_headers.tenant",
        "adapters.http.orders.context_headers.run_id",
        "adapters.http.orders.context_headers.incident",
        "adapters.command.invoices.context_env.tenant",
        "adapters.command.invoices.context_env.subject",
        "adapters.command.invoices.context_env.run_id",
        "adapters.command.invoices.context_env.incident",
    ] {
        assert!(errors.contains(at), "{at} missing in {errors}");
    }
    assert!(!errors.contains("context_headers.subject"), "{errors}");
    let unknown = text.replace("context_headers = { tenant", "context_headers = { tenant_id = \"X-T\", tenant");
    assert!(load(&unknown, &files(&dir)).is_err(), "an unknown context field is refused");
}
