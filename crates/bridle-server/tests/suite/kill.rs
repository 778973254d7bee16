//! `/v1/kill`: the caller's tenant's kill switch over HTTP, its scopes, and `agent` on
//! `/v1/calls`.

use axum::http::StatusCode;
use serde_json::json;

use super::support::{app, code, get, post, token, token_for};

fn snapshot(agent: Option<&str>) -> serde_json::Value {
    json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}, "agent": agent})
}

#[tokio::test]
async fn a_kill_over_http_stops_the_tenants_calls_until_lifted() {
    let app = app().await;
    let requester = token("requester-1");
    let setter = token_for("ops-1", "tenant-a", &["checkout"], &["kill:set"]);
    let lifter = token_for("ops-2", "tenant-a", &["checkout"], &["kill:lift"]);
    let other = token_for("ops-b", "tenant-b", &["checkout"], &["kill:set", "kill:lift"]);
    // Scopes.
    let (status, body) = post(&app, "/v1/kill", Some(&requester), &json!({"reason": "x"})).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "forbidden"));
    let (status, body) = post(&app, "/v1/kill", Some(&setter), &json!({"reason": "x".repeat(2001)})).await;
    assert_eq!((status, code(&body)), (StatusCode::BAD_REQUEST, "bad_request"));
    // Set for tenant-a.
    let (status, body) = post(&app, "/v1/kill", Some(&setter), &json!({"reason": "bad deploy"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["kill"]["switch"]["tenant"], "tenant-a");
    assert_eq!(body["kill"]["changed"], true);
    let (_, out) = post(&app, "/v1/calls", Some(&requester), &snapshot(None)).await;
    assert_eq!(out["rejection"]["code"], "killed", "{out}");
    let (_, listed) = get(&app, "/v1/kill", Some(&lifter)).await;
    assert_eq!(listed["switches"].as_array().map(Vec::len), Some(1));
    // Another tenant sees no switch of tenant-a and cannot lift it.
    let (_, theirs) = get(&app, "/v1/kill", Some(&other)).await;
    assert_eq!(theirs["switches"], json!([]));
    let (_, lifted) = post(&app, "/v1/kill/lift", Some(&other), &json!({"reason": "mine"})).await;
    assert_eq!(lifted["kill"]["changed"], false);
    // Lifting needs kill:lift.
    let (status, _) = post(&app, "/v1/kill/lift", Some(&setter), &json!({"reason": "fixed"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, lifted) = post(&app, "/v1/kill/lift", Some(&lifter), &json!({"reason": "fixed"})).await;
    assert_eq!((status, &lifted["kill"]["changed"]), (StatusCode::OK, &json!(true)));
    let (_, out) = post(&app, "/v1/calls", Some(&requester), &snapshot(None)).await;
    assert_eq!(out["status"], "ok", "{out}");
    // An agent switch: only that agent's calls.
    let body = json!({"reason": "prompt regression", "agent": "incident-responder"});
    post(&app, "/v1/kill", Some(&setter), &body).await;
    let (_, out) = post(&app, "/v1/calls", Some(&requester), &snapshot(Some("incident-responder"))).await;
    assert_eq!(out["rejection"]["code"], "killed", "{out}");
    let (_, out) = post(&app, "/v1/calls", Some(&requester), &snapshot(None)).await;
    assert_eq!(out["status"], "ok", "{out}");
    // An unregistered agent is denied at policy.
    let (_, out) = post(&app, "/v1/calls", Some(&requester), &snapshot(Some("ghost"))).await;
    assert_eq!(out["rejection"]["code"], "policy_denied", "{out}");
    // Both switches were audited in tenant-a's chain, with the tool-schema version.
    let auditor = token_for("aud", "tenant-a", &["checkout"], &["audit:read"]);
    let (_, page) = get(&app, "/v1/audit?limit=1000", Some(&auditor)).await;
    let kinds: Vec<&str> = page["events"].as_array().unwrap().iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds.iter().filter(|k| k.starts_with("kill_switch")).count(), 3, "{kinds:?}");
    assert!(page["events"][0]["tool_schema_hash"].is_string());
}
