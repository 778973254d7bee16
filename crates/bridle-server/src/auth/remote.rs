//! Keys fetched from an identity provider: a JWKS URL (`BRIDLE_JWT_JWKS_URL`), or the `jwks_uri`
//! of an OIDC issuer's discovery document (`BRIDLE_JWT_OIDC_ISSUER`, whose `issuer` must be that
//! URL exactly, as OIDC Discovery requires).
//!
//! The keys are read at start-up (a failure stops `bridle serve`), used for `[auth]
//! jwks_refresh_seconds`, then read again; a token naming a `kid` the set does not hold reads them
//! at once, which is how a rotated key is picked up. Reads are single-flight; reads for unknown
//! `kid`s happen at most once per [`MIN_INTERVAL`], so tokens with made-up `kid`s cannot turn
//! Bridle into a load on the provider, and a stale set is retried no more often. A failed read
//! keeps the keys already held (an outage of the provider does not lock everyone out) and is
//! logged.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::{AuthError, Key, jwks_keys};

/// Fewest seconds between two reads of the provider.
pub const MIN_INTERVAL: Duration = Duration::from_secs(10);
/// Longest a read may take.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Largest discovery or JWKS document read.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// Longest URL accepted.
pub const URL_MAX: usize = 2048;

/// Where the keys are published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Origin {
    /// A JWKS document at this URL.
    Jwks(String),
    /// The `jwks_uri` of this issuer's `/.well-known/openid-configuration`.
    Oidc(String),
}

/// The provider and when its keys were last read.
pub(super) struct Remote {
    origin: Origin,
    http: reqwest::Client,
    refresh: Duration,
    /// Held while a read is under way; holds when the last ones started.
    reads: tokio::sync::Mutex<Reads>,
    /// When keys were last installed.
    fetched: Mutex<Option<Instant>>,
}

/// When reads last started.
#[derive(Default)]
struct Reads {
    /// Any read.
    any: Option<Instant>,
    /// A read for a token's unknown `kid`.
    for_kid: Option<Instant>,
}

/// Why the keys are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// Start-up or an explicit refresh: always, waiting for a read under way.
    Now,
    /// The keys held are older than the refresh interval: unless a read is under way or one
    /// started less than [`MIN_INTERVAL`] ago.
    Stale,
    /// A token names a `kid` the keys held lack: after a read under way, unless a read for a kid
    /// started less than [`MIN_INTERVAL`] ago.
    UnknownKid,
}

/// What OIDC discovery must say.
#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    jwks_uri: String,
}

/// Checks that `url` is an http(s) URL of bounded length.
pub(super) fn check_url(what: &str, url: &str) -> Result<(), AuthError> {
    let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
    if !scheme_ok || url.len() > URL_MAX || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(AuthError::Config(format!("{what} must be an http:// or https:// URL of at most {URL_MAX} bytes")));
    }
    Ok(())
}

impl Remote {
    pub(super) fn new(origin: Origin, refresh: Duration) -> Result<Self, AuthError> {
        match &origin {
            Origin::Jwks(url) => check_url("BRIDLE_JWT_JWKS_URL", url)?,
            Origin::Oidc(url) => check_url("BRIDLE_JWT_OIDC_ISSUER", url)?,
        }
        bridle_runtime::llm::openai::install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .map_err(|e| AuthError::Config(format!("cannot build the HTTP client for the token keys: {e}")))?;
        Ok(Self { origin, http, refresh, reads: tokio::sync::Mutex::new(Reads::default()), fetched: Mutex::new(None) })
    }

    /// Whether the keys held are older than the refresh interval (or were never read).
    pub(super) fn stale(&self) -> bool {
        let fetched = *self.fetched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        fetched.is_none_or(|at| at.elapsed() >= self.refresh)
    }

    /// Reads the keys as `why` allows (see [`Why`]). `Ok(None)`: skipped.
    pub(super) async fn read(&self, why: Why) -> Result<Option<Vec<Key>>, AuthError> {
        let mut reads = if why == Why::Stale {
            match self.reads.try_lock() {
                Ok(guard) => guard,
                Err(_) => return Ok(None),
            }
        } else {
            self.reads.lock().await
        };
        let recent = |at: Option<Instant>| at.is_some_and(|at| at.elapsed() < MIN_INTERVAL);
        match why {
            Why::Now => {}
            Why::Stale if recent(reads.any) => return Ok(None),
            Why::UnknownKid if recent(reads.for_kid) => return Ok(None),
            Why::Stale => {}
            Why::UnknownKid => reads.for_kid = Some(Instant::now()),
        }
        reads.any = Some(Instant::now());
        let keys = self.fetch().await?;
        *self.fetched.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
        Ok(Some(keys))
    }

    async fn fetch(&self) -> Result<Vec<Key>, AuthError> {
        let jwks_uri = match &self.origin {
            Origin::Jwks(url) => url.clone(),
            Origin::Oidc(issuer) => self.discover(issuer).await?,
        };
        jwks_keys(&self.get(&jwks_uri).await?, &jwks_uri)
    }

    /// The `jwks_uri` of `issuer`'s discovery document.
    async fn discover(&self, issuer: &str) -> Result<String, AuthError> {
        let url = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
        let body = self.get(&url).await?;
        let doc: Discovery = serde_json::from_slice(&body)
            .map_err(|e| AuthError::Config(format!("`{url}` is not an OIDC discovery document: {e}")))?;
        if doc.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
            return Err(AuthError::Config(format!(
                "`{url}` names the issuer `{}`, not `{issuer}`: refusing its keys",
                doc.issuer
            )));
        }
        check_url("the discovery document's jwks_uri", &doc.jwks_uri)?;
        Ok(doc.jwks_uri)
    }

    /// The body of a 2xx answer to GET `url`, at most [`MAX_DOCUMENT_BYTES`].
    async fn get(&self, url: &str) -> Result<Vec<u8>, AuthError> {
        let fail = |what: String| AuthError::Config(format!("cannot read `{url}`: {what}"));
        let mut response = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| fail(e.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(fail(format!("HTTP {}", response.status())));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| fail(e.without_url().to_string()))? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_DOCUMENT_BYTES {
                return Err(fail(format!("larger than {MAX_DOCUMENT_BYTES} bytes")));
            }
        }
        Ok(body)
    }
}
