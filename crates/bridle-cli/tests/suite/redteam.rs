//! The red-team table: one row per way a caller might try to decide for itself what Bridle
//! decides (who acts, in which run, within which limits), each tried over HTTP and over MCP on
//! two replicas sharing a SQLite file, and again on PostgreSQL (`BRIDLE_TEST_POSTGRES_URL`).
//! Every row asserts the stable code and the audit event the refusal left. Two rows about the
//! audit trail's custody follow: `bridle approvals --as` on PostgreSQL (refused, nothing granted)
//! and a deleted tail (named by the signed heads both replicas keep in one head log).
//!
//! The configuration is the checkout example with a tool whose output is untrusted
//! (`read_ticket`), `scale_replicas` automatic (so only taint can raise it), agents bound by claim
//! and by subject, `[limits]` for the agent `limited` and `[identity] require_agent = true`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bridle_core::audit::head::HeadKey;
use bridle_core::audit::{AuditEvent, EventKind};
use bridle_core::ports::Clock;
use bridle_runtime::adapter::{Fault, MemoryAdapter};
use bridle_runtime::audit::HeadEnv;
use bridle_runtime::clock::ManualClock;
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_runtime::store::{Anchoring, Stores};
use bridle_server::auth::{AuthConfig, DEFAULT_AUDIENCE, DEFAULT_ISSUER, TokenRequest, issue_hs256};
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::support::{PgSchema, bridle, copy_example, text};

const SECRET: &[u8] = b"redteam-secret-redteam-secret-redteam";
const TENANT: &str = "tenant-a";

/// The checkout example, edited for the table (see the module doc).
fn config_text(dir: &Path) -> String {
    let toml = copy_example(dir);
    let toml = toml.replacen("approval = \"approval\"\ntimeout_ms = 5000", "approval = \"auto\"\ntimeout_ms = 5000", 1);
    let toml = toml.replacen(
        "risk_ceiling = \"limited_change\"\n",
        "risk_ceiling = \"limited_change\"\nprincipals = [\"responder-svc\"]\n",
        1,
    );
    let toml = toml.replacen(
        "tools = [\"get_service_snapshot\", \"scale_replicas\"]",
        "tools = [\"get_service_snapshot\", \"scale_replicas\", \"read_ticket\"]",
        1,
    );
    let schema_path = dir.join("policies/bridle.cedarschema");
    let schema = std::fs::read_to_string(&schema_path).unwrap().replacen(
        "  action scale_replicas in [change]",
        "  action read_ticket in [read] appliesTo {\n    principal: Principal,\n    resource: Resource,\n    \
         context: { scope: String, mode: String, risk: String, arguments: { service: String } }\n  };\n\n  \
         action scale_replicas in [change]",
        1,
    );
    std::fs::write(schema_path, schema).unwrap();
    let agent = |id: &str, tools: &str, ceiling: &str| {
        format!(
            "\n[[agents]]\nid = \"{id}\"\nowner = \"red-team\"\npurpose = \"tries\"\nmodel = \"m\"\nprompt = \"p\"\n\
             tools = [{tools}]\nrisk_ceiling = \"{ceiling}\"\n"
        )
    };
    format!(
        "{toml}\n[tools.read_ticket]\ndescription = \"Read the ticket of a service's incident (anyone can write it).\"\n\
         mode = \"read\"\nscope = \"service:read\"\nrisk = \"read\"\nexecutor = \"reader-identity\"\n\
         resource = {{ kind = \"service\", param = \"service\" }}\nschema = \"schemas/service_ref.json\"\n\
         untrusted_output = true\n{}{}{}\n[limits.agents.limited]\nrun_calls = 2\nrun_deadline_ms = 60000\n\
         run_concurrency = 1\n\n[identity]\nrequire_agent = true\n",
        agent("watcher", "\"get_service_snapshot\", \"read_ticket\"", "read"),
        agent("killed-bot", "\"get_service_snapshot\"", "read"),
        agent("limited", "\"get_service_snapshot\", \"scale_replicas\"", "limited_change"),
    )
}

/// A token for `subject` in the tenant, with the checkout scopes (and kill scopes), for `agent`.
fn token(subject: &str, agent: Option<&str>) -> String {
    let request = TokenRequest {
        subject: subject.into(),
        tenant: TENANT.into(),
        services: vec!["checkout".into()],
        scopes: ["service:read", "service:scale", "kill:set", "audit:read"].map(str::to_owned).to_vec(),
        ttl_seconds: 3600,
        agent: agent.map(str::to_owned),
    };
    issue_hs256(SECRET, DEFAULT_ISSUER, DEFAULT_AUDIENCE, &request).unwrap()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Door {
    Http,
    Mcp,
}

/// Two `bridle serve` replicas (in process, on loopback sockets) over one store, one clock and
/// one target system.
struct Rig {
    bases: Vec<String>,
    /// Replica 0's stores (both replicas' for the head flush).
    stores: Stores,
    replicas: Vec<Stores>,
    url: String,
    clock: Arc<ManualClock>,
    adapter: Arc<MemoryAdapter>,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Rig {
    async fn new(store_url: Option<String>) -> Rig {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().unwrap();
        let text = config_text(dir.path());
        std::fs::write(dir.path().join("bridle.toml"), &text).unwrap();
        let root = dir.path().to_owned();
        let files = move |rel: &str| std::fs::read_to_string(root.join(rel)).map_err(|e| format!("`{rel}`: {e}"));
        let config = Arc::new(bridle_core::config::load(&text, &files).unwrap_or_else(|e| panic!("{e}")));
        let url = store_url.unwrap_or_else(|| format!("sqlite://{}", dir.path().join("bridle.db").display()));
        // Now, so that the `bridle approvals` process (on the system clock) agrees with the replicas.
        let clock = Arc::new(ManualClock::new(time::OffsetDateTime::now_utc()));
        let adapter = Arc::new(MemoryAdapter::from_config(&config));
        // Both replicas sign their chains' heads into one head log outside the store.
        let heads = HeadEnv {
            signing_key: Some(HeadKey::from_seed(&[7; 32]).to_text()),
            heads: Some(dir.path().join("heads.log").display().to_string()),
            ..HeadEnv::default()
        };
        let mut bases = Vec::new();
        let mut replicas = Vec::new();
        for _ in 0..2 {
            let runtime = RuntimeBuilder::new(config.clone())
                .env(Env { heads: heads.clone(), ..Env::default() })
                .store_url(&url)
                .clock(clock.clone())
                .adapter(adapter.clone())
                .build()
                .await
                .unwrap();
            replicas.push(runtime.stores.clone());
            let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default()).unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            bases.push(format!("http://{}", listener.local_addr().unwrap()));
            tokio::spawn(bridle_server::serve::serve(listener, router(state), std::future::pending()));
            // The runtime lives as long as the test process: its tasks serve the replica.
            std::mem::forget(runtime);
        }
        let stores = replicas[0].clone();
        Rig { bases, stores, replicas, url, clock, adapter, http: reqwest::Client::new(), _dir: dir }
    }

    /// One call through `door` of replica `replica`: `(code, call_id)`, the code `None` when it ran.
    async fn call(
        &self,
        (door, replica): (Door, usize),
        token: &str,
        tool: &str,
        arguments: Value,
        run_id: &str,
        agent: Option<&str>,
    ) -> (Option<String>, String) {
        let base = &self.bases[replica];
        let outcome = match door {
            Door::Http => {
                let mut body = json!({"tool": tool, "arguments": arguments, "run_id": run_id});
                if let Some(agent) = agent {
                    body["agent"] = json!(agent);
                }
                let response =
                    self.http.post(format!("{base}/v1/calls")).bearer_auth(token).json(&body).send().await.unwrap();
                assert_eq!(response.status(), 200);
                let outcome: Value = response.json().await.unwrap();
                let code = outcome["rejection"]["code"].as_str().map(str::to_owned);
                return (code, outcome["call_id"].as_str().unwrap().to_owned());
            }
            Door::Mcp => {
                let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp")).auth_header(token);
                let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
                let mut params = CallToolRequestParams::new(tool.to_owned());
                params.arguments = arguments.as_object().cloned();
                let mut meta = json!({"bridle/run_id": run_id});
                if let Some(agent) = agent {
                    meta["bridle/agent"] = json!(agent);
                }
                params.meta = Some(RequestMetaObject(MetaObject(meta.as_object().cloned().unwrap())));
                let result = client.call_tool(params).await.unwrap();
                let _ = client.cancel().await;
                result.structured_content.unwrap_or(Value::Null)
            }
        };
        (outcome["code"].as_str().map(str::to_owned), outcome["call_id"].as_str().unwrap_or_default().to_owned())
    }

    async fn event(&self, call_id: &str) -> AuditEvent {
        let events = bridle_runtime::audit::export(self.stores.audit.as_ref(), Some(TENANT)).await.unwrap();
        let tool_call = |e: &AuditEvent| e.record.call_id == call_id && e.record.kind == EventKind::ToolCall;
        events.into_iter().find(tool_call).unwrap_or_else(|| panic!("no tool_call event for {call_id}"))
    }
}

fn snapshot() -> Value {
    json!({"service": "checkout"})
}

/// What a row expects: the code, and on its audit event the agent and where it came from.
struct Expect {
    code: &'static str,
    agent: Option<&'static str>,
    source: Option<&'static str>,
    /// Words the event's reason must hold.
    reason: &'static str,
}

/// One row: tries the bypass through `door` (names made unique by `tag`), returns the refused
/// call's id.
type Row = for<'a> fn(&'a Rig, Door, &'a str) -> std::pin::Pin<Box<dyn std::future::Future<Output = String> + 'a>>;

fn rows() -> Vec<(&'static str, Row, Expect)> {
    vec![
        (
            "omitted agent: the claim's allowlist applies",
            |rig, door, tag| {
                Box::pin(async move {
                    let t = token(&format!("watcher-{tag}"), Some("watcher"));
                    let args = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
                    rig.call((door, 0), &t, "scale_replicas", args, &format!("run-omit-{tag}"), None).await.1
                })
            },
            Expect {
                code: "policy_denied",
                agent: Some("watcher"),
                source: Some("claim"),
                reason: "may not call `scale_replicas`",
            },
        ),
        (
            "another agent's name in the request",
            |rig, door, tag| {
                Box::pin(async move {
                    let t = token(&format!("watcher-{tag}"), Some("watcher"));
                    let run = format!("run-other-{tag}");
                    rig.call((door, 1), &t, "get_service_snapshot", snapshot(), &run, Some("incident-responder"))
                        .await
                        .1
                })
            },
            Expect {
                code: "agent_mismatch",
                agent: Some("watcher"),
                source: Some("claim"),
                reason: "acts as agent `watcher`",
            },
        ),
        (
            "a bound subject naming another agent",
            |rig, door, tag| {
                Box::pin(async move {
                    let t = token("responder-svc", None);
                    let run = format!("run-bound-{tag}");
                    rig.call((door, 0), &t, "get_service_snapshot", snapshot(), &run, Some("watcher")).await.1
                })
            },
            Expect {
                code: "agent_mismatch",
                agent: Some("incident-responder"),
                source: Some("principal"),
                reason: "its subject is bound to it",
            },
        ),
        (
            "killed agent, calling without the field",
            |rig, door, tag| {
                Box::pin(async move {
                    // The switch is set through replica 0; the call goes to replica 1.
                    let admin = token(&format!("admin-{tag}"), None);
                    let body = json!({"agent": "killed-bot", "reason": "red team"});
                    let set = rig.http.post(format!("{}/v1/kill", rig.bases[0])).bearer_auth(&admin).json(&body).send();
                    assert!(set.await.unwrap().status().is_success());
                    let t = token(&format!("killed-{tag}"), Some("killed-bot"));
                    let run = format!("run-killed-{tag}");
                    rig.call((door, 1), &t, "get_service_snapshot", snapshot(), &run, None).await.1
                })
            },
            Expect { code: "killed", agent: Some("killed-bot"), source: Some("claim"), reason: "kill switch on" },
        ),
        (
            "a change by a credential that names no agent",
            |rig, door, tag| {
                Box::pin(async move {
                    let t = token(&format!("plain-{tag}"), None);
                    let args = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
                    let run = format!("run-plain-{tag}");
                    rig.call((door, 0), &t, "scale_replicas", args, &run, Some("incident-responder")).await.1
                })
            },
            // The request's word is recorded, and is not enough.
            Expect {
                code: "agent_required",
                agent: Some("incident-responder"),
                source: Some("request"),
                reason: "requires the credential to name its agent",
            },
        ),
        (
            "a fresh run id after taint",
            |rig, door, tag| {
                Box::pin(async move {
                    let first = token(&format!("responder-a-{tag}"), Some("incident-responder"));
                    let (code, _) =
                        rig.call((door, 0), &first, "read_ticket", snapshot(), &format!("run-taint-{tag}"), None).await;
                    assert_eq!(code, None, "the untrusted read runs");
                    // Another subject of the same agent, another replica, a run never used.
                    let second = token(&format!("responder-b-{tag}"), Some("incident-responder"));
                    let args = json!({"service": "checkout", "replicas": 3, "resource_version": 7});
                    let run = format!("run-fresh-{tag}");
                    rig.call((door, 1), &second, "scale_replicas", args, &run, None).await.1
                })
            },
            Expect {
                code: "approval_required",
                agent: Some("incident-responder"),
                source: Some("claim"),
                reason: "taint follows agent:incident-responder",
            },
        ),
        (
            "another subject's run id",
            |rig, door, tag| {
                Box::pin(async move {
                    let run = format!("run-owned-{tag}");
                    let owner = token(&format!("owner-{tag}"), Some("watcher"));
                    assert_eq!(
                        rig.call((door, 0), &owner, "get_service_snapshot", snapshot(), &run, None).await.0,
                        None
                    );
                    let intruder = token(&format!("intruder-{tag}"), Some("watcher"));
                    rig.call((door, 1), &intruder, "get_service_snapshot", snapshot(), &run, None).await.1
                })
            },
            Expect {
                code: "run_not_owned",
                agent: Some("watcher"),
                source: Some("claim"),
                reason: "belongs to another subject",
            },
        ),
        (
            "budget spent on one replica, then called on the other",
            |rig, door, tag| {
                Box::pin(async move {
                    let (t, run) = (token(&format!("limited-{tag}"), Some("limited")), format!("run-budget-{tag}"));
                    for _ in 0..2 {
                        assert_eq!(
                            rig.call((door, 0), &t, "get_service_snapshot", snapshot(), &run, None).await.0,
                            None
                        );
                    }
                    rig.call((door, 1), &t, "get_service_snapshot", snapshot(), &run, None).await.1
                })
            },
            Expect {
                code: "budget_exhausted",
                agent: Some("limited"),
                source: Some("claim"),
                reason: "used all 2 of its tool calls",
            },
        ),
        (
            "deadline passed",
            |rig, door, tag| {
                Box::pin(async move {
                    let (t, run) = (token(&format!("late-{tag}"), Some("limited")), format!("run-deadline-{tag}"));
                    assert_eq!(rig.call((door, 0), &t, "get_service_snapshot", snapshot(), &run, None).await.0, None);
                    rig.clock.set(rig.clock.now() + time::Duration::seconds(61));
                    rig.call((door, 1), &t, "get_service_snapshot", snapshot(), &run, None).await.1
                })
            },
            Expect {
                code: "deadline_exceeded",
                agent: Some("limited"),
                source: Some("claim"),
                reason: "passed its deadline",
            },
        ),
        (
            "too many concurrent calls",
            |rig, door, tag| {
                Box::pin(async move {
                    let (t, run) = (token(&format!("busy-{tag}"), Some("limited")), format!("run-busy-{tag}"));
                    // A change held in flight for a second on replica 0 (the target stalls).
                    let version = rig.adapter.snapshot(TENANT, "checkout").unwrap()["resource_version"].clone();
                    let replicas = rig.adapter.snapshot(TENANT, "checkout").unwrap()["replicas"].as_i64().unwrap();
                    let args = json!({"service": "checkout", "replicas": if replicas == 3 { 2 } else { 3 }, "resource_version": version});
                    rig.adapter.inject(Fault::Stall(Duration::from_secs(1)));
                    let held = rig.call((door, 0), &t, "scale_replicas", args, &run, None);
                    let other = async {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        rig.call((door, 1), &t, "get_service_snapshot", snapshot(), &run, None).await
                    };
                    let ((held_code, _), (_, refused)) = tokio::join!(held, other);
                    assert_eq!(held_code, None, "the held change ran");
                    // Its lease is released when it ends: the run takes a call again.
                    let again = rig.call((door, 1), &t, "get_service_snapshot", snapshot(), &run, None).await;
                    assert_ne!(again.0.as_deref(), Some("too_many_concurrent_calls"));
                    refused
                })
            },
            Expect {
                code: "too_many_concurrent_calls",
                agent: Some("limited"),
                source: Some("claim"),
                reason: "calls in flight",
            },
        ),
    ]
}

async fn table(rig: &Rig, store: &str) {
    for door in [Door::Http, Door::Mcp] {
        for (name, row, expect) in rows() {
            let tag = format!("{door:?}").to_lowercase();
            let call_id = row(rig, door, &tag).await;
            assert!(!call_id.is_empty(), "{store} {door:?} `{name}`: no call id");
            let event = rig.event(&call_id).await;
            let r = &event.record;
            let at = format!("{store} {door:?} `{name}`");
            assert_eq!(r.code.as_deref(), Some(expect.code), "{at}: {:?}", r.reason);
            assert_eq!(r.versions.agent_id.as_deref(), expect.agent, "{at}");
            assert_eq!(r.versions.agent_source.map(|s| s.as_str()), expect.source, "{at}");
            let reason = r.reason.as_deref().unwrap_or_default();
            assert!(reason.contains(expect.reason), "{at}: the reason says why: {reason}");
        }
    }
    as_on_the_store(rig, store).await;
    tail_deletion(rig, store).await;
}

/// `bridle approvals approve --as` on a pending request: refused on PostgreSQL (nothing granted,
/// no event), allowed on the embedded SQLite file, where the event says how the operator acted.
async fn as_on_the_store(rig: &Rig, store: &str) {
    let events = bridle_runtime::audit::export(rig.stores.audit.as_ref(), Some(TENANT)).await.unwrap();
    // The taint row's change is waiting for a human.
    let pending = events
        .iter()
        .rev()
        .find(|e| e.record.code.as_deref() == Some("approval_required"))
        .and_then(|e| e.record.approval_id.clone())
        .expect("a pending approval from the taint row");
    let config = rig._dir.path().join("bridle.toml").display().to_string();
    let out = bridle(
        &["approvals", "approve", &pending, "--as", "operator-2", "--config", &config, "--db", &rig.url],
        rig._dir.path(),
    );
    let granted = |events: &[AuditEvent]| {
        events
            .iter()
            .filter(|e| {
                e.record.kind == EventKind::ApprovalGranted && e.record.approval_id.as_deref() == Some(&pending)
            })
            .count()
    };
    let after = bridle_runtime::audit::export(rig.stores.audit.as_ref(), Some(TENANT)).await.unwrap();
    let request = rig.stores.approvals.get_request(TENANT, &pending).await.unwrap().unwrap();
    if store == "postgres" {
        assert_eq!(out.status.code(), Some(1), "{store} `--as`: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("unauthenticated"), "{}", text(&out.stderr));
        assert_eq!(granted(&after), 0, "{store} `--as`: no grant event");
        assert_eq!(request.grants.len(), 0, "{store} `--as`: the request is unchanged");
    } else {
        assert!(out.status.success(), "{store} `--as`: {}", text(&out.stderr));
        let event = after.iter().rev().find(|e| e.record.kind == EventKind::ApprovalGranted).unwrap();
        assert_eq!(event.record.auth.map(|a| a.as_str()), Some("as"), "{store}: the grant says how");
        assert_eq!(request.grants.len(), 1);
    }
}

/// Deleting the chain's last event after both replicas signed their heads: the verify route of
/// either replica names the missing event.
async fn tail_deletion(rig: &Rig, store: &str) {
    for stores in &rig.replicas {
        let Anchoring::Kept(keeper) = &stores.anchoring else { panic!("{store}: heads are kept") };
        keeper.flush().await.unwrap();
    }
    let last = bridle_runtime::audit::export(rig.stores.audit.as_ref(), Some(TENANT)).await.unwrap().len();
    let delete = format!(
        "DELETE FROM audit_events WHERE tenant = '{TENANT}' AND seq = (SELECT MAX(seq) FROM audit_events WHERE tenant = '{TENANT}')"
    );
    if store == "postgres" {
        let pool = sqlx::PgPool::connect(&rig.url).await.unwrap();
        sqlx::query(&delete).execute(&pool).await.unwrap();
    } else {
        let pool = sqlx::SqlitePool::connect(&rig.url).await.unwrap();
        sqlx::query(&delete).execute(&pool).await.unwrap();
    }
    let auditor = token("auditor", None);
    let verify = rig.http.get(format!("{}/v1/audit/verify", rig.bases[1])).bearer_auth(&auditor).send().await.unwrap();
    let report: Value = verify.json().await.unwrap();
    assert_eq!(report["tail"]["status"], "missing", "{store} tail deletion: {report}");
    assert_eq!(report["tail"]["missing"]["to"], json!(last), "{store}: the deleted event is named: {report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_bypass_is_refused_and_audited_on_sqlite() {
    let rig = Rig::new(None).await;
    table(&rig, "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_bypass_is_refused_and_audited_on_postgres() {
    let Some(schema) = PgSchema::fresh("redteam").await else { return };
    let rig = Rig::new(Some(schema.url.clone())).await;
    table(&rig, "postgres").await;
    schema.drop().await;
}
