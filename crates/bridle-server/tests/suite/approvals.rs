//! The approval loop over HTTP, the approver ≠ requester rule, and tenant isolation: another
//! tenant's approvals and audit answer 404 / nothing, never their content.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::support::{app, code, get, post, token, token_for};

fn scale(resource_version: i64) -> Value {
    json!({"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": resource_version},
           "run_id": "run-101", "incident": "inc-42"})
}

/// The requester's first call: `approval_required` (a 200 verdict) with the approval id.
async fn requested(app: &axum::Router) -> String {
    let (status, first) = post(app, "/v1/calls", Some(&token("requester-1")), &scale(7)).await;
    assert_eq!(status, StatusCode::OK, "a verdict is not an HTTP error: {first}");
    assert_eq!(first["status"], "rejected");
    assert_eq!(first["rejection"]["code"], "approval_required");
    let id = first["approval_id"].as_str().unwrap().to_owned();
    // Where it is decided, as MCP answers say it, and the plan being approved.
    assert!(first["approval_url"].as_str().unwrap().ends_with(&format!("/approvals/{id}")), "{first}");
    assert_eq!(first["rejection"]["detail"]["plan"]["run_id"], "run-101", "{first}");
    assert_eq!(first["rejection"]["detail"]["plan_hash"], first["plan_hash"], "{first}");
    id
}

#[tokio::test]
async fn the_full_approval_loop_executes_exactly_once() {
    let app = app().await;
    let id = requested(&app).await;
    let operator = token("operator-2");
    let (status, pending) = get(&app, "/v1/approvals", Some(&operator)).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<_> = pending["approvals"].as_array().unwrap().iter().map(|a| a["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [id.as_str()]);
    let (status, shown) = get(&app, &format!("/v1/approvals/{id}"), Some(&operator)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(shown["approval"]["plan"]["arguments"]["replicas"], 3);
    assert_eq!(shown["approval"]["requester"], "requester-1");
    // The approver is told why, never an empty list: here the tool's own default level.
    let why = shown["approval"]["context"]["reasons"].as_array().unwrap();
    assert_eq!(why.len(), 1, "{shown}");
    assert!(why[0].as_str().unwrap().contains("`scale_replicas` needs `approval` for every call"), "{shown}");
    let (status, granted) = post(&app, &format!("/v1/approvals/{id}/approve"), Some(&operator), &json!(null)).await;
    assert_eq!(status, StatusCode::OK, "{granted}");
    assert_eq!(granted["approval"]["status"], "granted");
    // The identical call now executes, once.
    let requester = token("requester-1");
    let (_, done) = post(&app, "/v1/calls", Some(&requester), &scale(7)).await;
    assert_eq!(done["status"], "ok", "{done}");
    assert_eq!(done["approval_id"], id.as_str());
    assert!(done["job_id"].is_string());
    // The approval is spent: repeating it does not execute again.
    let (_, again) = post(&app, "/v1/calls", Some(&requester), &scale(8)).await;
    assert_eq!(again["status"], "rejected", "{again}");
    assert_eq!(again["rejection"]["code"], "approval_required");
    assert_ne!(again["approval_id"], id.as_str());
    let (_, audit) = get(&app, "/v1/audit", Some(&operator)).await;
    let executed = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "tool_call" && e["tool"] == "scale_replicas" && e["decision"] == "executed")
        .count();
    assert_eq!(executed, 1, "{audit}");
    // What each event means to an operator: the calls that waited read "waiting for approval"
    // (their stored decision stays `rejected`), the grant "approved", the run "executed".
    let shown: Vec<(&str, &str)> = audit["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["display"].as_str().unwrap()))
        .collect();
    let calls: Vec<&str> = shown.iter().filter(|(k, _)| *k == "tool_call").map(|(_, d)| *d).collect();
    assert_eq!(calls, ["waiting for approval", "executed", "waiting for approval"], "{audit}");
    assert!(shown.contains(&("approval_granted", "approved")), "{shown:?}");
    let waiting = audit["events"].as_array().unwrap().iter().find(|e| e["display"] == "waiting for approval").unwrap();
    assert_eq!((waiting["decision"].as_str(), waiting["code"].as_str()), (Some("rejected"), Some("approval_required")));
}

#[tokio::test]
async fn an_approval_shows_its_plans_diff_against_the_current_state() {
    let app = app().await;
    let id = requested(&app).await;
    // operator-2 holds `approval:grant` only, no `service:read`: the state is read with the
    // read tool's own identity, not the caller's.
    let operator = token("operator-2");
    let (status, shown) = get(&app, &format!("/v1/approvals/{id}"), Some(&operator)).await;
    assert_eq!(status, StatusCode::OK, "{shown}");
    assert_eq!(shown["approval"]["id"], id.as_str());
    assert_eq!(shown["current"]["replicas"], 2, "{shown}");
    assert_eq!(
        shown["diff"],
        json!([{"field": "replicas", "current": 2, "proposed": 3},
               {"field": "resource_version", "current": 7, "proposed": 7}]),
        "{shown}"
    );
    assert!(shown.get("diff_error").is_none(), "{shown}");
    // The approver sees the tool's risk tier, in the request and in the pending list.
    assert_eq!(shown["approval"]["risk"], "limited_change", "{shown}");
    let (_, listed) = get(&app, "/v1/approvals", Some(&operator)).await;
    assert_eq!(listed["approvals"][0]["risk"], "limited_change", "{listed}");
    let bare = token_for("operator-5", "tenant-a", &[], &["approval:grant"]);
    let (status, again) = get(&app, &format!("/v1/approvals/{id}"), Some(&bare)).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["diff"], shown["diff"]);
    // Another tenant still gets 404 and nothing of the state.
    let intruder = token_for("operator-9", "tenant-b", &["checkout"], &["approval:grant", "service:read"]);
    let (status, body) = get(&app, &format!("/v1/approvals/{id}"), Some(&intruder)).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
    assert!(body.get("diff").is_none() && body.get("current").is_none(), "{body}");
}

#[tokio::test]
async fn the_requester_cannot_approve_their_own_plan() {
    let app = app().await;
    let id = requested(&app).await;
    // Even a token granting the requester `approval:grant` is refused by the desk.
    let self_approver = token_for("requester-1", "tenant-a", &["checkout"], &["approval:grant"]);
    let (status, body) = post(&app, &format!("/v1/approvals/{id}/approve"), Some(&self_approver), &json!(null)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(code(&body), "approver_denied");
    // Without an approver scope the route itself is forbidden.
    let (status, body) =
        post(&app, &format!("/v1/approvals/{id}/approve"), Some(&token("viewer-4")), &json!(null)).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    let (status, body) = get(&app, "/v1/approvals", Some(&token("requester-1"))).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"));
}

#[tokio::test]
async fn a_rejected_plan_stays_rejected() {
    let app = app().await;
    let id = requested(&app).await;
    let lead = token("lead-3");
    let (status, body) = post(&app, &format!("/v1/approvals/{id}/reject"), Some(&lead), &json!({"reason": ""})).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    let (status, body) =
        post(&app, &format!("/v1/approvals/{id}/reject"), Some(&lead), &json!({"reason": "not during the freeze"}))
            .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["approval"]["status"], "rejected");
    let (_, pending) = get(&app, "/v1/approvals", Some(&lead)).await;
    assert_eq!(pending["approvals"], json!([]));
}

#[tokio::test]
async fn another_tenant_can_neither_see_nor_decide_nor_read_the_audit() {
    let app = app().await;
    let id = requested(&app).await;
    let intruder =
        token_for("operator-9", "tenant-b", &["checkout"], &["approval:grant", "approval:sign_off", "audit:read"]);
    let (status, pending) = get(&app, "/v1/approvals", Some(&intruder)).await;
    assert_eq!((status, pending["approvals"].clone()), (StatusCode::OK, json!([])));
    for (path, body) in [
        (format!("/v1/approvals/{id}"), None),
        (format!("/v1/approvals/{id}/approve"), Some(json!(null))),
        (format!("/v1/approvals/{id}/reject"), Some(json!({"reason": "mine now"}))),
    ] {
        let (status, answer) = match body {
            None => get(&app, &path, Some(&intruder)).await,
            Some(b) => post(&app, &path, Some(&intruder), &b).await,
        };
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {answer}");
        assert_eq!(code(&answer), "not_found");
        assert!(!answer.to_string().contains("requester-1"), "nothing of the plan leaks");
    }
    // An unknown id of the caller's own tenant answers exactly the same.
    let (status, body) = get(&app, "/v1/approvals/no-such-id", Some(&token("operator-2"))).await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "not_found"));
    // The intruder's own chain holds its two attempts (approve, reject), nothing of tenant-a.
    let (_, audit) = get(&app, "/v1/audit", Some(&intruder)).await;
    let codes: Vec<_> = audit["events"].as_array().unwrap().iter().map(|e| (&e["tenant"], &e["code"])).collect();
    assert_eq!(codes, [(&json!("tenant-b"), &json!("not_found")); 2], "{audit}");
    // The request is still pending for its own tenant.
    let (_, own) = get(&app, "/v1/approvals", Some(&token("operator-2"))).await;
    assert_eq!(own["approvals"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn audit_pages_follow_the_chain() {
    let app = app().await;
    let requester = token("requester-1");
    for _ in 0..3 {
        let call = json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}});
        let (_, read) = post(&app, "/v1/calls", Some(&requester), &call).await;
        assert_eq!(read["status"], "ok", "{read}");
    }
    let operator = token("operator-2");
    let (_, first) = get(&app, "/v1/audit?limit=2", Some(&operator)).await;
    assert_eq!(first["events"].as_array().unwrap().len(), 2);
    let after = first["next_after"].as_u64().unwrap();
    let (_, second) = get(&app, &format!("/v1/audit?after={after}&limit=2"), Some(&operator)).await;
    assert_eq!(second["events"].as_array().unwrap().len(), 1);
    assert_eq!(second["next_after"], Value::Null);
    let (status, body) = get(&app, "/v1/audit?limit=0", Some(&operator)).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    let (status, body) = get(&app, "/v1/audit", Some(&token("viewer-4"))).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"));

    // A time window: the events were written just now, so today holds them all and a window
    // that ended yesterday none; each keeps its seq and hashes for the receiver's chain check.
    let today = time::OffsetDateTime::now_utc().date();
    let (_, all) = get(&app, &format!("/v1/audit?since={today}"), Some(&operator)).await;
    let events = all["events"].as_array().unwrap();
    assert_eq!(events.len(), 3, "{all}");
    assert!(events.iter().all(|e| e["seq"].is_u64() && e["hash"].is_string() && e["prev_hash"].is_string()));
    let yesterday = today.previous_day().unwrap();
    let (_, none) = get(&app, &format!("/v1/audit?until={yesterday}"), Some(&operator)).await;
    assert_eq!(none["events"].as_array().unwrap().len(), 0, "{none}");
    for bad in ["since=yesterday", "until=2026-13-01", "since=1700000000"] {
        let (status, body) = get(&app, &format!("/v1/audit?{bad}"), Some(&operator)).await;
        assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"), "{bad}");
    }
}

/// A token of the bundled `requester-1` whose credential names `agent`.
fn requester_as_agent(agent: &str) -> String {
    let config = bridle_runtime::bundled::checkout().unwrap();
    let p = &config.principals["requester-1"];
    let request = bridle_server::auth::TokenRequest {
        subject: "requester-1".into(),
        tenant: p.tenant.clone(),
        services: p.services.iter().cloned().collect(),
        scopes: p.scopes.iter().cloned().collect(),
        ttl_seconds: 3600,
        agent: Some(agent.into()),
    };
    bridle_server::auth::issue_hs256(
        super::support::SECRET,
        bridle_server::auth::DEFAULT_ISSUER,
        bridle_server::auth::DEFAULT_AUDIENCE,
        &request,
    )
    .unwrap()
}

/// `scale_replicas` to `replicas` in `run`, optionally naming an agent in the body: the id of
/// the approval request it waits for.
async fn waiting(app: &axum::Router, token: &str, run: &str, replicas: i64, agent: Option<&str>) -> String {
    let mut body = json!({"tool": "scale_replicas", "run_id": run, "incident": "inc-7",
        "arguments": {"service": "checkout", "replicas": replicas, "resource_version": 7}});
    if let Some(agent) = agent {
        body["agent"] = json!(agent);
    }
    let (status, answer) = post(app, "/v1/calls", Some(token), &body).await;
    assert_eq!((status, answer["rejection"]["code"].as_str()), (StatusCode::OK, Some("approval_required")), "{answer}");
    answer["approval_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_card_names_the_agent_from_the_credential_the_tool_and_the_same_change_elsewhere() {
    let app = app().await;
    let operator = token("operator-2");
    let claimed = waiting(&app, &requester_as_agent("incident-responder"), "run-201", 3, None).await;
    let named = waiting(&app, &token("requester-1"), "run-202", 3, Some("incident-responder")).await;
    let other = waiting(&app, &token("requester-1"), "run-203", 4, None).await;

    // The agent comes from the token's claim, with where it came from.
    let (_, shown) = get(&app, &format!("/v1/approvals/{claimed}"), Some(&operator)).await;
    let a = &shown["approval"];
    assert_eq!(a["context"]["agent"], json!({"id": "incident-responder", "source": "claim"}), "{shown}");
    assert_eq!(a["plan"]["incident"], "inc-7");
    assert_eq!(a["risk"], "limited_change");
    assert_eq!(a["tool_info"]["title"], "Scale replicas", "{shown}");
    assert!(a["tool_info"]["description"].as_str().unwrap().starts_with("Apply an approved replica target"));
    assert_eq!(a["tool_info"]["title_ko"], "레플리카 수 조정", "{shown}");
    assert!(a["tool_info"]["description_ko"].is_string());
    // A name only the request gave is never taken as the agent; it is shown apart.
    let (_, shown) = get(&app, &format!("/v1/approvals/{named}"), Some(&operator)).await;
    let agent = &shown["approval"]["context"]["agent"];
    assert_eq!(agent, &json!({"id": null, "source": "request", "named_by_request": "incident-responder"}), "{shown}");
    let (_, shown) = get(&app, &format!("/v1/approvals/{other}"), Some(&operator)).await;
    assert_eq!(shown["approval"]["context"]["agent"], json!({"id": null, "source": "none"}), "{shown}");

    // The same change asked in two runs is grouped (by the canonical arguments' hash); another
    // replica count is another change.
    let (_, list) = get(&app, "/v1/approvals", Some(&operator)).await;
    let by_id = |id: &str| list["approvals"].as_array().unwrap().iter().find(|a| a["id"] == id).cloned().unwrap();
    let same = |id: &str| -> Vec<String> {
        by_id(id)["same_change"].as_array().unwrap().iter().map(|o| o["id"].as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(same(&claimed), [named.as_str()]);
    assert_eq!(same(&named), [claimed.as_str()]);
    assert!(same(&other).is_empty());
    assert_eq!(by_id(&claimed)["change_hash"], by_id(&named)["change_hash"]);
    assert_ne!(by_id(&claimed)["change_hash"], by_id(&other)["change_hash"]);
    assert_eq!(by_id(&claimed)["same_change"][0]["run_id"], "run-202");
    let (_, shown) = get(&app, &format!("/v1/approvals/{named}"), Some(&operator)).await;
    assert_eq!(shown["approval"]["same_change"][0]["id"], claimed.as_str(), "{shown}");
}
