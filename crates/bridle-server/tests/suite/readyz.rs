//! `/readyz` (readiness) against `/healthz` (liveness): ready while the store answers a read that
//! needs its schema; 503 `store_unavailable` once the schema is gone (every table of an SQLite
//! file dropped behind the store's back; a replica's PostgreSQL schema dropped), while `/healthz`
//! stays 200. Neither needs a token, and the 503 names no path, URL or user.

use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use bridle_runtime::runtime::{Env, Runtime, RuntimeBuilder};
use bridle_server::auth::AuthConfig;
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use serde_json::{Value, json};

use super::support::{SECRET, app, code, get, post, token};

async fn app_on(url: &str) -> (Router, Runtime) {
    let config = Arc::new(bridle_runtime::bundled::checkout().unwrap());
    let runtime = RuntimeBuilder::new(config).env(Env::default()).store_url(url).build().await.unwrap();
    let state = AppState::new(runtime.engine.clone(), &AuthConfig::hs256(SECRET), Limits::default()).unwrap();
    (router(state), runtime)
}

/// Ready, and a gate call through the same router succeeds (the probe and the API see one store).
async fn assert_ready(app: &Router) {
    let (status, body) = get(app, "/readyz", None).await;
    assert_eq!((status, &body), (StatusCode::OK, &json!({"status": "ready"})));
    let call = json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}});
    let (status, outcome) = post(app, "/v1/calls", Some(&token("requester-1")), &call).await;
    assert_eq!((status, outcome["status"].as_str()), (StatusCode::OK, Some("ok")), "{outcome}");
}

/// Not ready, in the one error shape, naming none of `secrets`; still alive.
async fn assert_unavailable(app: &Router, secrets: &[&str]) {
    let (status, body) = get(app, "/readyz", None).await;
    assert_eq!((status, code(&body)), (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    for secret in secrets {
        assert!(!message.contains(secret), "`{secret}` in {message}");
    }
    let (status, alive): (StatusCode, Value) = get(app, "/healthz", None).await;
    assert_eq!((status, alive["status"].as_str()), (StatusCode::OK, Some("ok")));
}

#[tokio::test]
async fn ready_without_a_token_on_the_memory_store() {
    let app = app().await;
    assert_ready(&app).await;
    let (status, body) = get(&app, "/readyz", Some("not-a-token")).await;
    assert_eq!((status, body["status"].as_str()), (StatusCode::OK, Some("ready")), "a stray header is ignored");
}

#[tokio::test]
async fn regression_sqlite_tables_dropped_behind_the_store_make_it_unready() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ready.db");
    let url = format!("sqlite://{}", path.display());
    let (app, _runtime) = app_on(&url).await;
    assert_ready(&app).await;

    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    sqlx::query("PRAGMA foreign_keys = OFF").execute(&pool).await.unwrap();
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert!(tables.iter().any(|t| t == "audit_events"), "{tables:?}");
    for table in &tables {
        sqlx::query(&format!("DROP TABLE \"{table}\"")).execute(&pool).await.unwrap();
    }
    pool.close().await;
    assert_unavailable(&app, &[&dir.path().display().to_string(), "ready.db"]).await;
}

/// The PostgreSQL URL, or `None` (skip) when unset; under `CI=true` unset fails.
fn postgres_url() -> Option<String> {
    match std::env::var("BRIDLE_TEST_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "BRIDLE_TEST_POSTGRES_URL is unset but CI=true");
            eprintln!("skipped: BRIDLE_TEST_POSTGRES_URL is unset, so the PostgreSQL tests do not run");
            None
        }
    }
}

#[tokio::test]
async fn a_dropped_postgres_schema_makes_every_replica_unready() {
    let Some(base) = postgres_url() else { return };
    let admin = sqlx::PgPool::connect(&base).await.expect("PostgreSQL must be reachable");
    let schema = format!("bridle_readyz_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options[search_path]={schema}");
    // Two replicas on one schema: each is ready, and each stops being ready when it is dropped.
    let (a, _ra) = app_on(&url).await;
    let (b, _rb) = app_on(&url).await;
    assert_ready(&a).await;
    assert_ready(&b).await;

    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await.unwrap();
    for app in [&a, &b] {
        assert_unavailable(app, &[&schema, "postgres://", "127.0.0.1"]).await;
    }
    // The same schema created again (empty, not migrated): still not ready, since the schema the
    // store migrated at start-up is not there.
    sqlx::query(&format!("CREATE SCHEMA {schema}")).execute(&admin).await.unwrap();
    assert_unavailable(&a, &[&schema]).await;
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE")).execute(&admin).await.unwrap();
}
