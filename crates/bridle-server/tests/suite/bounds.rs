//! Issue 19 point 2 at the HTTP edge: over-long and unstorable ids and text are a 400
//! `bad_request` before anything is stored (memory and SQLite behind the router), a token whose
//! claims break their bounds is a 401, and the kill switch can always be set.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::{AuthConfig, DEFAULT_AUDIENCE, DEFAULT_ISSUER, encode_hs256};
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use serde_json::{Value, json};

use super::support::{SECRET, code, get, post, token, token_for};

/// A router over the bundled checkout configuration on `store` (a 4 MiB body limit, so a 1 MB
/// field reaches the handler), and the store's gate to look behind it.
async fn app_on(store: &str) -> (Router, bridle_runtime::gate::Gate) {
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    let runtime = RuntimeBuilder::new(config).env(Env::default()).store_url(store).build().await.unwrap();
    let limits = Limits { max_body_bytes: 4 << 20, ..Limits::default() };
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), limits).unwrap();
    (router(state), runtime.engine.gate.clone())
}

const STORES: [&str; 2] = ["memory", "sqlite::memory:"];

fn scale(extra: Value) -> Value {
    let mut body =
        json!({"tool": "scale_replicas", "arguments": {"service": "checkout", "replicas": 3, "resource_version": 7}});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    body
}

/// No approval request, no job, no audit event.
async fn nothing_stored(gate: &bridle_runtime::gate::Gate) {
    let s = gate.stores();
    let pending = s.approvals.list_pending("tenant-a", time::OffsetDateTime::now_utc()).await.unwrap();
    assert!(pending.is_empty(), "{pending:?}");
    assert!(s.jobs.unsettled().await.unwrap().is_empty());
    assert!(s.audit.events("tenant-a", 0, 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_3kb_and_a_1mb_run_id_are_refused_at_the_edge_and_nothing_is_stored() {
    for store in STORES {
        let (app, gate) = app_on(store).await;
        for size in [3 * 1024, 1 << 20] {
            let body = scale(json!({"run_id": "r".repeat(size), "incident": "inc-42"}));
            let (status, answer) = post(&app, "/v1/calls", Some(&token("requester-1")), &body).await;
            assert_eq!((status, code(&answer)), (StatusCode::BAD_REQUEST, "bad_request"), "{store}");
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains("`run_id`") && message.len() < 200, "{message}");
        }
        nothing_stored(&gate).await;
    }
}

#[tokio::test]
async fn nul_in_each_stored_field_is_refused_with_bad_request_over_http() {
    for store in STORES {
        let (app, gate) = app_on(store).await;
        let requester = token("requester-1");
        let cases = [
            json!({"run_id": "run\u{0}101"}),
            json!({"incident": "inc\u{0}42"}),
            json!({"idempotency_key": "k\u{0}1"}),
            json!({"agent": "incident\u{0}responder"}),
            json!({"approval_id": "a\u{0}1"}),
            json!({"arguments": {"service": "check\u{0}out", "replicas": 3, "resource_version": 7}}),
        ];
        for extra in cases {
            let (status, answer) = post(&app, "/v1/calls", Some(&requester), &scale(extra.clone())).await;
            assert_eq!((status, code(&answer)), (StatusCode::BAD_REQUEST, "bad_request"), "{store} {extra}: {answer}");
        }
        // A raw answer holding a NUL argument: the gate refuses that call (audited, bounded).
        let answer =
            json!({"answer": "{\"tool\": \"get_service_snapshot\", \"arguments\": {\"service\": \"a\\u0000b\"}}"});
        let (status, out) = post(&app, "/v1/calls", Some(&requester), &answer).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(out["calls"][0]["rejection"]["code"], "bad_request", "{out}");
        // A reject reason with a NUL, an approval id with one.
        let (_, asked) = post(&app, "/v1/calls", Some(&requester), &scale(json!({"run_id": "run-1"}))).await;
        let id = asked["approval_id"].as_str().unwrap().to_owned();
        let op = token("operator-2");
        let (status, answer) =
            post(&app, &format!("/v1/approvals/{id}/reject"), Some(&op), &json!({"reason": "no\u{0}pe"})).await;
        assert_eq!((status, code(&answer)), (StatusCode::BAD_REQUEST, "bad_request"), "{answer}");
        // An approval id with a NUL names no request: 404 like an unknown id, nothing stored.
        let (status, answer) = post(&app, "/v1/approvals/a%00b/reject", Some(&op), &json!({"reason": "nope"})).await;
        assert_eq!((status, code(&answer)), (StatusCode::NOT_FOUND, "not_found"), "{answer}");
        let (status, answer) = get(&app, "/v1/approvals/a%00b", Some(&op)).await;
        assert_eq!((status, code(&answer)), (StatusCode::NOT_FOUND, "not_found"), "{answer}");
        let pending = gate.stores().approvals.list_pending("tenant-a", time::OffsetDateTime::now_utc()).await.unwrap();
        assert_eq!(pending.len(), 1, "still pending");
        // A kill reason with a NUL: 400, and no switch.
        let setter = token_for("ops-1", "tenant-a", &["checkout"], &["kill:set"]);
        let (status, answer) = post(&app, "/v1/kill", Some(&setter), &json!({"reason": "bad\u{0}deploy"})).await;
        assert_eq!((status, code(&answer)), (StatusCode::BAD_REQUEST, "bad_request"), "{answer}");
        assert!(gate.stores().kills.active_kills().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn a_token_with_a_nul_or_unbounded_claim_is_401() {
    let (app, gate) = app_on("sqlite::memory:").await;
    let exp = time::OffsetDateTime::now_utc().unix_timestamp() + 3600;
    let claims = |sub: &str, tenant: &str, services: Vec<String>| {
        json!({"sub": sub, "tenant": tenant, "services": services, "scopes": ["service:read"],
               "exp": exp, "iss": DEFAULT_ISSUER, "aud": DEFAULT_AUDIENCE})
    };
    let long_tenant = "t".repeat(65);
    let many: Vec<String> = (0..300).map(|i| format!("s{i}")).collect();
    for bad in [
        claims("viewer\u{0}4", "tenant-a", vec!["checkout".into()]),
        claims(&"v".repeat(257), "tenant-a", vec!["checkout".into()]),
        claims("viewer-4", "tenant\u{0}a", vec!["checkout".into()]),
        claims("viewer-4", &long_tenant, vec!["checkout".into()]),
        claims("viewer-4", "tenant a", vec!["checkout".into()]),
        claims("viewer-4", "tenant-a", vec!["check\u{0}out".into()]),
        claims("viewer-4", "tenant-a", many),
    ] {
        let t = encode_hs256(SECRET, &bad).unwrap();
        let body = json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}});
        let (status, answer) = post(&app, "/v1/calls", Some(&t), &body).await;
        assert_eq!((status, code(&answer)), (StatusCode::UNAUTHORIZED, "unauthenticated"), "{bad}");
    }
    let ok = encode_hs256(SECRET, &claims("auth0|viewer 4", "tenant-a", vec!["checkout".into()])).unwrap();
    let body = json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}});
    let (status, answer) = post(&app, "/v1/calls", Some(&ok), &body).await;
    assert_eq!((status, answer["status"].as_str()), (StatusCode::OK, Some("ok")), "{answer}");
    let events = gate.stores().audit.events("tenant-a", 0, 10).await.unwrap();
    assert_eq!(events.len(), 1, "only the valid token's call is audited");
}

#[tokio::test]
async fn post_kill_with_an_empty_body_sets_the_switch() {
    for store in STORES {
        let (app, gate) = app_on(store).await;
        let setter = token_for("ops-1", "tenant-a", &["checkout"], &["kill:set"]);
        let (status, answer) = post(&app, "/v1/kill", Some(&setter), &json!({})).await;
        assert!(status.is_success(), "{store}: {status} {answer}");
        assert_eq!(answer["kill"]["changed"], true);
        assert_eq!(answer["kill"]["switch"]["reason"], bridle_core::bounds::NO_REASON);
        let on = gate.stores().kills.kill_covering("tenant-a", None).await.unwrap();
        assert!(on.is_some(), "{store}: the switch is on");
        let body = json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}});
        let (_, out) = post(&app, "/v1/calls", Some(&token("requester-1")), &body).await;
        assert_eq!(out["rejection"]["code"], "killed", "{out}");
    }
}

#[tokio::test]
async fn an_over_long_kill_reason_is_a_400_and_the_switch_state_is_unchanged() {
    for store in STORES {
        let (app, gate) = app_on(store).await;
        let setter = token_for("ops-1", "tenant-a", &["checkout"], &["kill:set"]);
        let lifter = token_for("ops-2", "tenant-a", &["checkout"], &["kill:lift"]);
        let long = json!({"reason": "x".repeat(2001)});
        let (status, answer) = post(&app, "/v1/kill", Some(&setter), &long).await;
        assert_eq!((status, code(&answer)), (StatusCode::BAD_REQUEST, "bad_request"), "{answer}");
        assert!(gate.stores().kills.active_kills().await.unwrap().is_empty(), "{store}: still off");
        // On, then a bad lift leaves it on and a bad set leaves its reason.
        post(&app, "/v1/kill", Some(&setter), &json!({"reason": "bad deploy"})).await;
        let (status, _) = post(&app, "/v1/kill/lift", Some(&lifter), &long).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let (status, _) = post(&app, "/v1/kill", Some(&setter), &long).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let on = gate.stores().kills.active_kills().await.unwrap();
        assert_eq!(on.iter().map(|s| s.reason.as_str()).collect::<Vec<_>>(), ["bad deploy"], "{store}");
        let (status, _) = post(&app, "/v1/kill", Some(&setter), &json!({"reason": "y".repeat(2000)})).await;
        assert_eq!(status, StatusCode::OK, "2,000 characters are allowed");
    }
}
