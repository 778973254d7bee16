//! A router over the bundled checkout configuration with an in-memory store, tokens for its
//! principals, and a request helper.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::{AuthConfig, DEFAULT_AUDIENCE, DEFAULT_ISSUER, TokenRequest, issue_hs256};
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use serde_json::Value;
use tower::ServiceExt;

pub const SECRET: &[u8] = b"test-secret-test-secret-test-secret";

/// A router with default limits.
pub async fn app() -> Router {
    app_with(Limits::default()).await
}

/// A router with these limits.
pub async fn app_with(limits: Limits) -> Router {
    app_for(bridle_runtime::bundled::checkout().unwrap(), limits).await
}

/// A router over `config` with these limits.
pub async fn app_for(config: bridle_core::config::Config, limits: Limits) -> Router {
    let runtime = RuntimeBuilder::new(Arc::new(config))
        .tools(Arc::new(bridle_tools::Workbench))
        .env(Env::default())
        .store_url("memory")
        .build()
        .await
        .unwrap();
    // As `bridle serve` builds it: the operator chat over the runtime.
    let chat = Arc::new(runtime.chat_desk().unwrap());
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), limits).unwrap().with_chat(chat);
    router(state)
}

/// The bundled checkout configuration with `extra` TOML appended (read from `examples/checkout`).
pub fn checkout_with(extra: &str) -> bridle_core::config::Config {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/checkout");
    let text = std::fs::read_to_string(dir.join("bridle.toml")).unwrap() + extra;
    let files = |rel: &str| std::fs::read_to_string(dir.join(rel)).map_err(|e| format!("`{rel}`: {e}"));
    bridle_core::config::load(&text, &files).unwrap()
}

/// A token for a principal of the bundled configuration.
pub fn token(name: &str) -> String {
    let config = bridle_runtime::bundled::checkout().unwrap();
    let p = &config.principals[name];
    token_for(
        name,
        &p.tenant,
        &p.services.iter().map(String::as_str).collect::<Vec<_>>(),
        &p.scopes.iter().map(String::as_str).collect::<Vec<_>>(),
    )
}

/// A token with any claims.
pub fn token_for(subject: &str, tenant: &str, services: &[&str], scopes: &[&str]) -> String {
    let request = TokenRequest {
        subject: subject.into(),
        tenant: tenant.into(),
        services: services.iter().map(|s| (*s).to_owned()).collect(),
        scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
        ttl_seconds: 3600,
        agent: None,
    };
    issue_hs256(SECRET, DEFAULT_ISSUER, DEFAULT_AUDIENCE, &request).unwrap()
}

/// Sends a request; returns the status and the JSON body (`Null` when empty or not JSON).
pub async fn send(
    app: &Router,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: Option<Vec<u8>>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(path);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    let req = req.body(body.map_or_else(Body::empty, Body::from)).unwrap();
    let response = app.clone().oneshot(req).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

pub async fn get(app: &Router, path: &str, token: Option<&str>) -> (StatusCode, Value) {
    send(app, Method::GET, path, token, None).await
}

pub async fn post(app: &Router, path: &str, token: Option<&str>, body: &Value) -> (StatusCode, Value) {
    send(app, Method::POST, path, token, Some(body.to_string().into_bytes())).await
}

/// The error code of an error answer.
pub fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or_else(|| panic!("not an error shape: {body}"))
}
