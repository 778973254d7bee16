//! The cross-tenant matrix: a token of tenant B, holding every scope, against tenant A's
//! objects on every route that reads, lists, calls, approves or rejects. Ids answer 404 exactly
//! like unknown ids, lists are empty, no answer carries A's data, and every attempt the gate or
//! the approvals desk audits lands in B's chain, never in A's (both chains still verify).

use axum::Router;
use axum::http::StatusCode;
use bridle_core::audit::{AuditEvent, verify_chain};
use serde_json::{Value, json};

use bridle_server::limits::Limits;

use super::support::{app_for, checkout_with, code, get, post, token, token_for};

const B: &str = "tenant-b";

/// The bundled configuration, plus a `checkout` service of tenant B's own (1 replica where A's
/// has 2), so B's calls get as far as the approval step and B's reads have B's state to read.
async fn app() -> Router {
    let b_checkout = "\n[[adapter.memory]]\ntenant = \"tenant-b\"\nkey = \"checkout\"\n\
                      state = { replicas = 1, resource_version = 7 }\n";
    app_for(checkout_with(b_checkout), Limits::default()).await
}

/// Tenant B's principal with every scope a route asks for, on a service named like A's.
fn intruder() -> String {
    token_for(
        "intruder-9",
        B,
        &["checkout"],
        &["service:read", "service:scale", "approval:grant", "approval:sign_off", "audit:read", "workbench:use"],
    )
}

fn scale() -> Value {
    json!({"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7},
           "run_id": "run-101", "incident": "inc-42"})
}

/// Tenant A's objects: one pending approval and one granted (not yet used).
struct TenantA {
    pending: String,
    granted: String,
}

async fn tenant_a(app: &Router) -> TenantA {
    let requester = token("requester-1");
    let mut ids = Vec::new();
    for run in ["run-101", "run-102"] {
        let mut call = scale();
        call["run_id"] = json!(run);
        let (_, asked) = post(app, "/v1/calls", Some(&requester), &call).await;
        assert_eq!(asked["rejection"]["code"], "approval_required", "{asked}");
        ids.push(asked["approval_id"].as_str().unwrap().to_owned());
    }
    let granted = ids.pop().unwrap();
    let (status, body) =
        post(app, &format!("/v1/approvals/{granted}/approve"), Some(&token("operator-2")), &json!(null)).await;
    assert_eq!((status, &body["approval"]["status"]), (StatusCode::OK, &json!("granted")), "{body}");
    TenantA { pending: ids.pop().unwrap(), granted }
}

/// A tenant's whole audit chain, read through the API as `reader`, after checking it verifies.
async fn chain(app: &Router, reader: &str, tenant: &str) -> Vec<AuditEvent> {
    let (status, page) = get(app, "/v1/audit?limit=1000", Some(reader)).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let events: Vec<AuditEvent> = serde_json::from_value(page["events"].clone()).unwrap();
    assert!(events.iter().all(|e| e.record.tenant == tenant), "{tenant}'s chain holds only its own events");
    verify_chain(tenant, &events).unwrap_or_else(|e| panic!("{tenant}'s chain is broken: {e:?}"));
    events
}

async fn a_chain(app: &Router) -> Vec<AuditEvent> {
    chain(app, &token("operator-2"), "tenant-a").await
}

/// No trace of tenant A in an answer to B: its tenant, its people, its incident, its approval
/// ids (except `sent`, an id B itself sent, which a message may echo).
fn assert_nothing_of_a(answer: &Value, a: &TenantA, sent: Option<&str>, row: &str) {
    let text = answer.to_string();
    for secret in ["tenant-a", "requester-1", "operator-2", "inc-42", a.pending.as_str(), a.granted.as_str()] {
        if Some(secret) != sent {
            assert!(!text.contains(secret), "{row}: the answer carries `{secret}`: {answer}");
        }
    }
}

#[tokio::test]
async fn approvals_of_another_tenant_are_not_found_and_the_attempt_is_audited_in_the_callers_chain() {
    let app = app().await;
    let a = tenant_a(&app).await;
    let b = intruder();
    let a_before = a_chain(&app).await;

    // (route, which of A's approvals, expected status, the desk's audit kind for the attempt)
    let rows: [(&str, &str, &str, Option<&str>); 8] = [
        ("GET", "pending", "", None),
        ("GET", "granted", "", None),
        ("POST", "pending", "approve", Some("approval_granted")),
        ("POST", "granted", "approve", Some("approval_granted")),
        ("POST", "pending", "reject", Some("approval_rejected")),
        ("POST", "granted", "reject", Some("approval_rejected")),
        ("POST", "unknown", "approve", Some("approval_granted")),
        ("POST", "unknown", "reject", Some("approval_rejected")),
    ];
    let mut expected_b_events = 0;
    for (method, which, act, audited) in rows {
        let id = match which {
            "pending" => a.pending.as_str(),
            "granted" => a.granted.as_str(),
            _ => "0190aaaa-0000-7000-8000-000000000000",
        };
        let row = format!("{method} {which} {act}");
        let path = if act.is_empty() { format!("/v1/approvals/{id}") } else { format!("/v1/approvals/{id}/{act}") };
        let (status, answer) = match method {
            "GET" => get(&app, &path, Some(&b)).await,
            _ => post(&app, &path, Some(&b), &json!({"reason": "mine now"})).await,
        };
        assert_eq!((status, code(&answer)), (StatusCode::NOT_FOUND, "not_found"), "{row}: {answer}");
        assert_nothing_of_a(&answer, &a, Some(id), &row);
        if let Some(kind) = audited {
            expected_b_events += 1;
            let events = chain(&app, &b, B).await;
            assert_eq!(events.len(), expected_b_events, "{row}: one event per attempt in B's chain");
            let last = &events[events.len() - 1].record;
            assert_eq!(last.kind.as_str(), kind, "{row}");
            assert_eq!((last.subject.as_str(), last.approval_id.as_deref()), ("intruder-9", Some(id)), "{row}");
            assert_eq!(
                (last.code.as_deref(), last.tool.as_str()),
                (Some("not_found"), ""),
                "{row}: nothing of A's plan"
            );
        }
    }
    // A unknown id of B's own tenant and another tenant's id are indistinguishable to B.
    let events = chain(&app, &b, B).await;
    let (foreign, unknown) = (&events[0].record, &events[4].record);
    assert_eq!(
        (&foreign.code, &foreign.reason.as_ref().map(|r| r.replace(&a.pending, "ID"))),
        (&unknown.code, &unknown.reason.as_ref().map(|r| r.replace("0190aaaa-0000-7000-8000-000000000000", "ID")))
    );

    // The list of B's tenant is empty, and A's objects are untouched.
    let (status, list) = get(&app, "/v1/approvals", Some(&b)).await;
    assert_eq!((status, list), (StatusCode::OK, json!({"approvals": []})));
    let operator = token("operator-2");
    for (id, status) in [(&a.pending, "pending"), (&a.granted, "granted")] {
        let (_, shown) = get(&app, &format!("/v1/approvals/{id}"), Some(&operator)).await;
        assert_eq!(shown["approval"]["status"], status, "{shown}");
        assert_eq!(shown["approval"]["grants"].as_array().unwrap().len(), usize::from(status == "granted"));
    }
    assert_eq!(a_chain(&app).await, a_before, "no event of B's attempts in A's chain");
}

#[tokio::test]
async fn calls_of_another_tenant_never_use_its_approvals_or_read_its_state() {
    let app = app().await;
    let a = tenant_a(&app).await;
    let b = intruder();
    let a_before = a_chain(&app).await;
    let mut with_granted = scale();
    with_granted["run_id"] = json!("run-102");
    with_granted["approval_id"] = json!(a.granted);
    let mut with_pending = scale();
    with_pending["approval_id"] = json!(a.pending);
    let answer = format!("{{\"tool\": \"scale_replicas\", \"arguments\": {}}}", scale()["arguments"]);

    // (row, body, the approval id B named, the verdict B gets)
    let rows: [(&str, Value, Option<&str>, &str); 5] = [
        ("structured call with A's granted approval", with_granted, Some(&a.granted), "approval_required"),
        ("structured call with A's pending approval", with_pending, Some(&a.pending), "approval_required"),
        (
            "raw answer with A's granted approval",
            json!({"answer": answer, "run_id": "run-102", "approval_id": a.granted}),
            Some(&a.granted),
            "approval_required",
        ),
        (
            "dry run with A's granted approval",
            json!({"tool": "scale_replicas", "arguments": scale()["arguments"], "run_id": "run-102",
                   "approval_id": a.granted, "dry_run": true}),
            Some(&a.granted),
            "approval_required",
        ),
        (
            "read of a service named like A's",
            json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}}),
            None,
            "ok",
        ),
    ];
    for (row, body, named, verdict) in rows {
        let (status, answer) = post(&app, "/v1/calls", Some(&b), &body).await;
        assert_eq!(status, StatusCode::OK, "{row}: a verdict: {answer}");
        let outcome = if answer["calls"].is_array() { answer["calls"][0].clone() } else { answer.clone() };
        if verdict == "ok" {
            // B reads B's own service, never A's (A's has 2 replicas).
            assert_eq!(
                (&outcome["status"], &outcome["result"]["replicas"]),
                (&json!("ok"), &json!(1)),
                "{row}: {answer}"
            );
        } else {
            // A dry run answers what a real call would get.
            let refusal = if outcome["status"] == "dry_run" { "would_reject" } else { "rejection" };
            assert_eq!(outcome[refusal]["code"], verdict, "{row}: {answer}");
            assert!(outcome["result"].is_null(), "{row}: {answer}");
        }
        assert_nothing_of_a(&answer, &a, named, row);
        // The gate audits the call in B's chain, naming the id B sent.
        let events = chain(&app, &b, B).await;
        let last = &events[events.len() - 1].record;
        assert_eq!((last.kind.as_str(), last.subject.as_str()), ("tool_call", "intruder-9"), "{row}");
        assert_eq!(last.approval_id.as_deref(), named, "{row}");
        if named.is_some() {
            assert_eq!(last.code.as_deref(), Some(verdict), "{row}");
        }
    }
    assert_eq!(a_chain(&app).await, a_before, "nothing of B's calls in A's chain");
    // A's granted approval was not spent by B: A's requester executes it, once.
    let mut own = scale();
    own["run_id"] = json!("run-102");
    let (_, done) = post(&app, "/v1/calls", Some(&token("requester-1")), &own).await;
    assert_eq!((&done["status"], &done["approval_id"]), (&json!("ok"), &json!(a.granted)), "{done}");
}

#[tokio::test]
async fn the_audit_log_of_another_tenant_cannot_be_read_or_named() {
    let app = app().await;
    let a = tenant_a(&app).await;
    let b = intruder();
    assert!(!a_chain(&app).await.is_empty());
    // (query, expected status, expected events)
    let rows = [
        ("", StatusCode::OK, Some(json!([]))),
        ("?after=0&limit=1000", StatusCode::OK, Some(json!([]))),
        ("?after=1", StatusCode::OK, Some(json!([]))),
        ("?tenant=tenant-a", StatusCode::BAD_REQUEST, None),
        ("?tenant_id=tenant-a&limit=5", StatusCode::BAD_REQUEST, None),
    ];
    for (query, status, events) in rows {
        let (got, answer) = get(&app, &format!("/v1/audit{query}"), Some(&b)).await;
        assert_eq!(got, status, "{query}: {answer}");
        match events {
            Some(events) => assert_eq!(answer["events"], events, "{query}"),
            None => assert_eq!(code(&answer), "bad_request", "{query}"),
        }
        assert_nothing_of_a(&answer, &a, None, query);
    }
}

#[tokio::test]
async fn tools_guard_and_workbench_answer_another_tenant_nothing_of_a() {
    let app = app().await;
    let a = tenant_a(&app).await;
    let b = intruder();
    let a_before = a_chain(&app).await;
    let snapshot = "```json\n{\"tool\": \"get_service_snapshot\", \"arguments\": {\"service\": \"checkout\"}}\n```";
    // (row, method, path, body)
    let rows = [
        ("tools (mcp)", "GET", "/v1/tools", Value::Null),
        ("tools (openai)", "GET", "/v1/tools?format=openai", Value::Null),
        ("guard scan", "POST", "/v1/guard/scan", json!({"text": format!("scale {} now", a.pending)})),
        ("workbench check", "POST", "/v1/check", json!({"answer": snapshot})),
    ];
    for (row, method, path, body) in rows {
        let (status, answer) = match method {
            "GET" => get(&app, path, Some(&b)).await,
            _ => post(&app, path, Some(&b), &body).await,
        };
        assert_eq!(status, StatusCode::OK, "{row}: {answer}");
        if row == "workbench check" {
            // The workbench principal is a tenant of its own: A's service is out of its reach.
            assert_ne!(answer["calls"][0]["status"], "ok", "{answer}");
            assert!(answer["calls"][0]["result"].is_null(), "{answer}");
        } else {
            assert_nothing_of_a(&answer, &a, None, row);
        }
    }
    assert_eq!(a_chain(&app).await, a_before, "nothing of B's requests in A's chain");
    assert!(
        chain(&app, &b, B).await.is_empty(),
        "tools and the guard audit nothing; the workbench audits in its own tenant"
    );
}
