//! `bridle serve` with tokens from an existing identity provider: `BRIDLE_JWT_OIDC_ISSUER` names a
//! small local OIDC provider (discovery and JWKS over HTTP), `[auth.claims]` maps its claims, and a
//! provider that cannot be read stops the start instead of refusing every token later.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use axum::Router;
use axum::routing::get;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;

use super::support::{Proc, copy_example, text};

fn private() -> EncodingKey {
    let pem = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bridle-server/tests/data/rs256-private.pem");
    EncodingKey::from_rsa_pem(&std::fs::read(pem).unwrap()).unwrap()
}

/// Serves discovery and one RS256 key under `/realms/ops`; answers the issuer URL.
async fn provider() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}/realms/ops", listener.local_addr().unwrap());
    let mut jwk = Jwk::from_encoding_key(&private(), Algorithm::RS256).unwrap();
    jwk.common.key_id = Some("idp-2026".to_owned());
    let discovery = json!({"issuer": issuer, "jwks_uri": format!("{issuer}/protocol/openid-connect/certs")});
    let app = Router::new()
        .route("/realms/ops/.well-known/openid-configuration", get(move || async move { axum::Json(discovery) }))
        .route(
            "/realms/ops/protocol/openid-connect/certs",
            get(move || async move { axum::Json(JwkSet { keys: vec![jwk] }) }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    issuer
}

fn serve(dir: &std::path::Path, issuer: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridle"));
    cmd.args(["serve", "--config", "bridle.toml", "--listen", "127.0.0.1:0", "--db", "memory"])
        .current_dir(dir)
        .env("BRIDLE_JWT_OIDC_ISSUER", issuer)
        .env("BRIDLE_JWT_AUDIENCE", "bridle-api");
    for var in [
        "BRIDLE_CONFIG",
        "BRIDLE_STORE_URL",
        "BRIDLE_LISTEN",
        "BRIDLE_JWT_SECRET",
        "BRIDLE_JWT_PUBLIC_KEY",
        "BRIDLE_JWT_JWKS",
        "BRIDLE_JWT_JWKS_URL",
        "BRIDLE_JWT_ISSUER",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_an_oidc_providers_tokens_with_mapped_claims() {
    let issuer = provider().await;
    let dir = tempfile::tempdir().unwrap();
    let config =
        copy_example(dir.path()) + "\n[auth.claims]\ntenant = \"org_id\"\nscopes = \"scope\"\nservices = \"groups\"\n";
    std::fs::write(dir.path().join("bridle.toml"), config).unwrap();
    let mut child = serve(dir.path(), &issuer).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let _child = Proc(child);
    let first = lines.next().unwrap().unwrap();
    let addr = first.split("http://").nth(1).and_then(|r| r.split_whitespace().next()).unwrap().to_owned();
    // The banner's lines up to the one naming the keys (it follows the MCP line).
    let mut banner = Vec::new();
    for line in lines.by_ref().map_while(Result::ok) {
        let done = line.contains("token keys") || banner.len() > 12;
        banner.push(line);
        if done {
            break;
        }
    }
    assert!(banner.last().is_some_and(|l| l.contains("token keys: 1 from OidcIssuer")), "{banner:?}");

    let exp = time::OffsetDateTime::now_utc().unix_timestamp() + 600;
    let claims = json!({"sub": "kim.operator", "org_id": "tenant-a", "scope": "openid service:read",
                        "groups": ["checkout"], "exp": exp, "iss": issuer, "aud": "bridle-api"});
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("idp-2026".to_owned());
    let token = jsonwebtoken::encode(&header, &claims, &private()).unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let tools = client.get(format!("http://{addr}/v1/tools")).bearer_auth(&token).send().await.unwrap();
    assert_eq!(tools.status(), 200);
    assert!(tools.text().await.unwrap().contains("get_service_snapshot"));
    // The audience is the deployment's, not `bridle`'s default.
    let mut foreign = claims.clone();
    foreign["aud"] = json!("bridle");
    let foreign = jsonwebtoken::encode(&header, &foreign, &private()).unwrap();
    let refused = client.get(format!("http://{addr}/v1/tools")).bearer_auth(&foreign).send().await.unwrap();
    assert_eq!(refused.status(), 401);
}

#[tokio::test]
async fn serve_stops_when_the_providers_keys_cannot_be_read() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bridle.toml"), copy_example(dir.path())).unwrap();
    let out = tokio::task::spawn_blocking({
        let dir = dir.path().to_owned();
        move || serve(&dir, &format!("http://{closed}/realms/ops")).output().unwrap()
    })
    .await
    .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("cannot read the token keys") && err.contains("openid-configuration"), "{err}");
}
