//! Tokens from an existing identity provider: a small local OIDC provider (discovery document and
//! JWKS over HTTP on a socket) whose keys Bridle fetches, caches, re-reads on an unknown `kid`
//! (at most every 10 s) and keeps through an outage; claims mapped with `[auth.claims]`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bridle_core::config::ClaimNames;
use bridle_runtime::runtime::{Env, RuntimeBuilder};
use bridle_server::auth::{AuthConfig, AuthError, KeySource, Verifier};
use bridle_server::limits::Limits;
use bridle_server::{AppState, router};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::support;

fn data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn private(alg: Algorithm) -> EncodingKey {
    match alg {
        Algorithm::RS256 => EncodingKey::from_rsa_pem(&std::fs::read(data("rs256-private.pem")).unwrap()).unwrap(),
        _ => EncodingKey::from_ec_pem(&std::fs::read(data("es256-private.pem")).unwrap()).unwrap(),
    }
}

fn jwk(alg: Algorithm, kid: &str) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(&private(alg), alg).unwrap();
    jwk.common.key_id = Some(kid.to_owned());
    jwk
}

/// What the provider publishes, what it answers, and how often it was asked.
struct Provider {
    /// Where it serves (`http://…/realms/ops`).
    base: String,
    /// The issuer its discovery document names (the base, unless a test changes it).
    issuer: Mutex<String>,
    keys: Mutex<Vec<Jwk>>,
    down: Mutex<bool>,
    reads: AtomicUsize,
}

async fn discovery(State(p): State<Arc<Provider>>) -> Response {
    p.reads.fetch_add(1, Ordering::SeqCst);
    let issuer = p.issuer.lock().unwrap().clone();
    let base = p.base.clone();
    axum::Json(json!({"issuer": issuer, "jwks_uri": format!("{base}/certs")})).into_response()
}

async fn certs(State(p): State<Arc<Provider>>) -> Response {
    p.reads.fetch_add(1, Ordering::SeqCst);
    if *p.down.lock().unwrap() {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    axum::Json(JwkSet { keys: p.keys.lock().unwrap().clone() }).into_response()
}

/// Starts the provider with `keys`; answers it and its issuer URL.
async fn provider(keys: Vec<Jwk>) -> (Arc<Provider>, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}/realms/ops", listener.local_addr().unwrap());
    let state = Arc::new(Provider {
        base: issuer.clone(),
        issuer: Mutex::new(issuer.clone()),
        keys: Mutex::new(keys),
        down: Mutex::new(false),
        reads: AtomicUsize::new(0),
    });
    let app = Router::new()
        .route("/realms/ops/.well-known/openid-configuration", get(discovery))
        .route("/realms/ops/certs", get(certs))
        .with_state(state.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (state, issuer)
}

/// The claims an identity provider writes: no Bridle-specific names.
fn idp_claims(issuer: &str) -> Value {
    let exp = time::OffsetDateTime::now_utc().unix_timestamp() + 600;
    json!({"sub": "8f14e45f-ops", "org_id": "tenant-a", "scope": "openid service:read",
           "realm_access": {"roles": ["checkout"]}, "exp": exp, "iss": issuer, "aud": "bridle"})
}

fn sign(alg: Algorithm, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, &private(alg)).unwrap()
}

fn idp_config(keys: KeySource, issuer: &str) -> AuthConfig {
    AuthConfig {
        issuer: issuer.to_owned(),
        claims: ClaimNames {
            tenant: "org_id".into(),
            scopes: "scope".into(),
            services: "realm_access.roles".into(),
            ..ClaimNames::default()
        },
        ..AuthConfig::new(keys)
    }
}

async fn app(auth: &AuthConfig) -> (Router, Arc<Verifier>) {
    let runtime = RuntimeBuilder::new(Arc::new(bridle_runtime::bundled::checkout().unwrap()))
        .tools(Arc::new(bridle_tools::Workbench))
        .env(Env::default())
        .store_url("memory")
        .build()
        .await
        .unwrap();
    let state = AppState::new(runtime.engine.clone(), auth, Limits::default()).unwrap();
    let verifier = state.verifier.clone();
    (router(state), verifier)
}

/// Tokens that verified are answered again from the verifier's cache; a key the provider
/// withdraws ends them at the next read of its keys, cached or not.
#[tokio::test]
async fn a_token_verified_before_its_key_was_withdrawn_is_refused_after() {
    let (idp, issuer) = provider(vec![jwk(Algorithm::RS256, "rsa-1")]).await;
    let (app, verifier) = app(&idp_config(KeySource::OidcIssuer(issuer.clone()), &issuer)).await;
    verifier.refresh().await.unwrap();
    let token = sign(Algorithm::RS256, "rsa-1", &idp_claims(&issuer));
    for _ in 0..3 {
        let (status, body) = support::get(&app, "/v1/tools", Some(&token)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    *idp.keys.lock().unwrap() = vec![jwk(Algorithm::ES256, "ec-2")];
    assert_eq!(verifier.refresh().await.unwrap(), 1);
    assert!(matches!(verifier.verify(&token), Err(AuthError::Invalid(_))));
    let (status, body) = support::get(&app, "/v1/tools", Some(&token)).await;
    assert_eq!((status, support::code(&body)), (StatusCode::UNAUTHORIZED, "unauthenticated"), "{body}");
}

#[tokio::test]
async fn an_oidc_issuers_keys_verify_mapped_claims_and_a_rotated_key_is_read_once() {
    let (idp, issuer) = provider(vec![jwk(Algorithm::RS256, "rsa-1")]).await;
    let (app, verifier) = app(&idp_config(KeySource::OidcIssuer(issuer.clone()), &issuer)).await;
    assert_eq!(verifier.refresh().await.unwrap(), 1);
    assert_eq!(idp.reads.load(Ordering::SeqCst), 2, "discovery, then the JWKS");

    let claims = idp_claims(&issuer);
    let (status, body) = support::get(&app, "/v1/tools", Some(&sign(Algorithm::RS256, "rsa-1", &claims))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let p = verifier.verify(&sign(Algorithm::RS256, "rsa-1", &claims)).unwrap();
    assert_eq!((p.subject.as_str(), p.tenant.as_str()), ("8f14e45f-ops", "tenant-a"));
    assert!(p.scopes.contains("service:read") && p.scopes.contains("openid") && p.services.contains("checkout"));
    assert_eq!(idp.reads.load(Ordering::SeqCst), 2, "cached: a known kid reads nothing");

    // The provider rotates in a new key; the first token that names it reads the set again.
    idp.keys.lock().unwrap().push(jwk(Algorithm::ES256, "ec-2"));
    let rotated = sign(Algorithm::ES256, "ec-2", &claims);
    assert!(matches!(verifier.verify(&rotated), Err(AuthError::Invalid(_))), "not held yet");
    let (status, body) = support::get(&app, "/v1/tools", Some(&rotated)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(idp.reads.load(Ordering::SeqCst), 4);

    // Made-up kids right after do not make Bridle hammer the provider.
    for kid in ["ghost-1", "ghost-2", "ghost-3"] {
        let (status, body) = support::get(&app, "/v1/tools", Some(&sign(Algorithm::RS256, kid, &claims))).await;
        assert_eq!((status, support::code(&body)), (StatusCode::UNAUTHORIZED, "unauthenticated"), "{body}");
    }
    assert_eq!(idp.reads.load(Ordering::SeqCst), 4, "at most one read per 10 s");

    // A provider key does not make other issuers' or audiences' tokens good, and claims are mapped,
    // not guessed: without `org_id` there is no tenant.
    let mut other = claims.clone();
    other["iss"] = json!("http://elsewhere.example/realms/ops");
    let mut no_tenant = claims.clone();
    no_tenant.as_object_mut().unwrap().remove("org_id");
    for (bad, says) in [(other, "wrong issuer"), (no_tenant, "missing claim `org_id`")] {
        let (status, body) = support::get(&app, "/v1/tools", Some(&sign(Algorithm::RS256, "rsa-1", &bad))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(body["error"]["message"].as_str().unwrap_or_default().contains(says), "{body}");
    }
}

#[tokio::test]
async fn a_jwks_urls_keys_outlive_an_outage_and_a_bad_provider_stops_the_start() {
    let (idp, issuer) = provider(vec![jwk(Algorithm::RS256, "rsa-1")]).await;
    let url = format!("{issuer}/certs");
    let auth = idp_config(KeySource::JwksUrl(url.clone()), &issuer);
    let verifier = Verifier::new(&auth).unwrap();
    let token = sign(Algorithm::RS256, "rsa-1", &idp_claims(&issuer));
    // Never read yet: the first request reads the keys itself.
    assert_eq!(verifier.authenticate(&token).await.unwrap().tenant, "tenant-a");
    assert_eq!(idp.reads.load(Ordering::SeqCst), 1, "a JWKS URL needs no discovery");

    *idp.down.lock().unwrap() = true;
    let refused = verifier.refresh().await;
    assert!(matches!(&refused, Err(AuthError::Config(m)) if m.contains("HTTP 503")), "{refused:?}");
    assert_eq!(verifier.authenticate(&token).await.unwrap().subject, "8f14e45f-ops", "the keys held stay in use");

    // Start-up: a provider that names another issuer, or none at all, is an error, not an open door.
    *idp.issuer.lock().unwrap() = "http://impostor.example/realms/ops".to_owned();
    let discovery = Verifier::new(&idp_config(KeySource::OidcIssuer(issuer.clone()), &issuer)).unwrap();
    let err = discovery.refresh().await.unwrap_err();
    assert!(matches!(&err, AuthError::Config(m) if m.contains("names the issuer")), "{err:?}");
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let dead = Verifier::new(&idp_config(KeySource::JwksUrl(format!("http://{closed}/certs")), &issuer)).unwrap();
    assert!(matches!(dead.refresh().await, Err(AuthError::Config(m)) if m.contains("cannot read")));
    assert!(dead.authenticate(&token).await.is_err(), "no keys, no principal");
    for bad in ["file:///etc/jwks.json", "ftp://idp/certs", "http://idp/ certs"] {
        assert!(matches!(
            Verifier::new(&idp_config(KeySource::JwksUrl(bad.into()), &issuer)),
            Err(AuthError::Config(_))
        ));
    }
}
