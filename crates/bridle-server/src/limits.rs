//! Request limits: the request head (target length, header count and bytes), body size and
//! declared type, JSON nesting depth (checked on the raw bytes before anything is deserialized),
//! a per-principal token bucket, and the request timeout. Bad input becomes a 4xx with a stable
//! code here, never a 5xx and never a panic. A request refused before its body was read has the
//! body drained first, so the refusal reaches the client and the connection stays usable.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bridle_core::{Code, Principal};
use futures_util::StreamExt;
use serde::de::DeserializeOwned;

use crate::AppState;
use crate::error::ApiError;

/// The limits every request is held to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Largest request body, bytes (413 `payload_too_large` past it).
    pub max_body_bytes: usize,
    /// Deepest JSON nesting of objects and arrays (400 `json_too_deep` past it).
    pub max_json_depth: usize,
    /// Requests per second each principal earns.
    pub rate_per_second: f64,
    /// Requests a principal may make at once before the rate applies (429 `rate_limited`).
    pub burst: u32,
    /// Longest a request may take (408 `request_timeout`).
    pub timeout: Duration,
    /// Longest request target (path and query), bytes (414 `uri_too_long` past it).
    pub max_uri_bytes: usize,
    /// Most request header lines (431 `headers_too_large` past it).
    pub max_headers: usize,
    /// Most request header bytes, names and values (431 `headers_too_large` past it).
    pub max_header_bytes: usize,
}

/// Default of [`Limits::max_uri_bytes`].
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// Default of [`Limits::max_headers`].
pub const MAX_HEADERS: usize = 100;
/// Default of [`Limits::max_header_bytes`].
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            max_json_depth: 64,
            rate_per_second: 50.0,
            burst: 100,
            timeout: Duration::from_secs(30),
            max_uri_bytes: MAX_URI_BYTES,
            max_headers: MAX_HEADERS,
            max_header_bytes: MAX_HEADER_BYTES,
        }
    }
}

impl Limits {
    /// The limits of the configuration's `[server]` section.
    pub fn from_settings(settings: &bridle_core::config::ServerSettings) -> Self {
        Self {
            max_body_bytes: settings.max_body_bytes,
            max_json_depth: settings.max_json_depth,
            rate_per_second: settings.rate_per_second,
            burst: settings.burst,
            timeout: settings.request_timeout,
            ..Self::default()
        }
    }
}

/// Most principals tracked before idle, refilled buckets are dropped.
const MAX_TRACKED: usize = 10_000;

/// A token bucket per principal (tenant and subject), refilled continuously.
#[derive(Debug)]
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<(String, String), (f64, Instant)>>,
}

impl RateLimiter {
    /// A limiter granting `rate` requests per second with bursts of `burst`.
    pub fn new(rate: f64, burst: u32) -> Self {
        Self { rate: rate.max(0.0), burst: f64::from(burst.max(1)), buckets: Mutex::new(HashMap::new()) }
    }

    /// Takes one token for `principal`; `false` when its bucket is empty.
    pub fn allow(&self, principal: &Principal) -> bool {
        self.allow_at(principal, Instant::now())
    }

    fn allow_at(&self, principal: &Principal, now: Instant) -> bool {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= MAX_TRACKED {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, (tokens, at)| *tokens + now.duration_since(*at).as_secs_f64() * rate < burst);
        }
        let key = (principal.tenant.clone(), principal.subject.clone());
        let (tokens, at) = buckets.entry(key).or_insert((self.burst, now));
        let refilled = (*tokens + now.duration_since(*at).as_secs_f64() * self.rate).min(self.burst);
        *at = now;
        if refilled >= 1.0 {
            *tokens = refilled - 1.0;
            true
        } else {
            *tokens = refilled;
            false
        }
    }
}

/// Nesting depth of the JSON text `bytes`, counting `[` and `{` outside strings. It stops as soon
/// as `max` is passed, so a hostile document costs one linear pass at most.
pub fn json_depth_exceeds(bytes: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// A JSON request body held to the body and depth limits and to a JSON `Content-Type`; every
/// failure is a coded 4xx. The body is judged first: one that is not JSON (or nests too deep) is
/// 400 whatever its declared type; JSON declared as anything but `application/json` (or
/// `application/*+json`), or with no `Content-Type`, is 415 `unsupported_media_type`; JSON of the
/// wrong shape is 400.
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let declared_json = declares_json(req.headers());
        let bytes = body_bytes(req, state).await?;
        if !declared_json {
            // Only to tell "not JSON" (400) from "JSON, wrongly declared" (415).
            parse_json::<serde::de::IgnoredAny>(&bytes, state.limits.max_json_depth)?;
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Code::UnsupportedMediaType,
                "this route takes a JSON body: send `Content-Type: application/json`",
            ));
        }
        parse_json(&bytes, state.limits.max_json_depth).map(JsonBody)
    }
}

/// The body of a route that takes none, read to its end (413 past the body limit) and dropped.
/// Answering before the client's body (often `{}`) was read could leave it on the connection;
/// read, the connection stays ready for the next request.
#[derive(Debug, Clone, Copy)]
pub struct NoBody;

impl FromRequest<AppState> for NoBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        body_bytes(req, state).await.map(|_| NoBody)
    }
}

/// The whole body within the body limit; over it, 413 `payload_too_large`.
async fn body_bytes(req: Request, state: &AppState) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            too_large(state.limits.max_body_bytes)
        } else {
            ApiError::bad_request(format!("cannot read the request body: {}", e.body_text()))
        }
    })
}

/// Whether `headers` declare a JSON body: `application/json` or `application/*+json`, any
/// parameters (`charset=utf-8`), any case.
pub fn declares_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Depth first, then serde: a deep document is refused before any recursive parse.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8], max_depth: usize) -> Result<T, ApiError> {
    if json_depth_exceeds(bytes, max_depth) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            Code::JsonTooDeep,
            format!("JSON nests deeper than {max_depth} levels"),
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

fn too_large(max: usize) -> ApiError {
    ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, Code::PayloadTooLarge, format!("the body exceeds {max} bytes"))
}

/// Middleware: answers 408 `request_timeout` when a request outlives the limit. Work that must
/// not be cut off half-way (a gate call) runs on its own task and finishes regardless.
pub async fn timeout(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let limit = state.limits.timeout;
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            Code::RequestTimeout,
            format!("the request took longer than {} ms", limit.as_millis()),
        )
        .into_response(),
    }
}

/// Middleware: the request head within [`Limits::max_uri_bytes`] (414 `uri_too_long`),
/// [`Limits::max_headers`] and [`Limits::max_header_bytes`] (431 `headers_too_large`). hyper's own
/// limits are set far above these (`serve.rs`), so these answers, in the error shape, come first.
pub async fn request_head(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let limits = state.limits;
    let target = req.uri().authority().map_or(0, |a| a.as_str().len())
        + req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if target > limits.max_uri_bytes {
        let error = ApiError::new(
            StatusCode::URI_TOO_LONG,
            Code::UriTooLong,
            format!("the request target is {target} bytes; at most {} are accepted", limits.max_uri_bytes),
        );
        return refuse(req, &limits, error).await;
    }
    let count = req.headers().len();
    // As on the wire: `name: value` and CRLF.
    let bytes: usize = req.headers().iter().map(|(n, v)| n.as_str().len() + v.len() + 4).sum();
    if count > limits.max_headers || bytes > limits.max_header_bytes {
        let error = ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Code::HeadersTooLarge,
            format!(
                "{count} header lines of {bytes} bytes; at most {} lines and {} bytes are accepted",
                limits.max_headers, limits.max_header_bytes
            ),
        );
        return refuse(req, &limits, error).await;
    }
    next.run(req).await
}

/// Longest a refused request's body is read for, before the refusal is sent anyway.
const DRAIN_WITHIN: Duration = Duration::from_secs(5);

/// Answers `error` to a request whose body no handler read, after reading and discarding that
/// body (at most [`Limits::max_body_bytes`], within [`DRAIN_WITHIN`]).
///
/// Without this, hyper closes a connection whose request body is still unread when the answer
/// is written; body bytes arriving after that close make the kernel reset the connection, and a
/// reset can destroy the answer before the client reads it (a 429 under load that "closed the
/// connection without an answer"). A body past the limit, or too slow, gets the answer with
/// `Connection: close`.
// INVARIANT: a request refused before its body is read still gets its answer.
pub(crate) async fn refuse(req: Request, limits: &Limits, error: ApiError) -> Response {
    let drained = drain(req.into_body(), limits.max_body_bytes).await;
    let mut response = error.into_response();
    if !drained {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Reads `body` to its end and drops it; `false` when it is longer than `max` bytes, fails, or
/// takes longer than [`DRAIN_WITHIN`].
async fn drain(body: Body, max: usize) -> bool {
    let mut stream = body.into_data_stream();
    let read = async {
        let mut seen = 0usize;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(bytes) => {
                    seen = seen.saturating_add(bytes.len());
                    if seen > max {
                        return false;
                    }
                }
                Err(_) => return false,
            }
        }
        true
    };
    tokio::time::timeout(DRAIN_WITHIN, read).await.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_only_outside_strings() {
        assert!(!json_depth_exceeds(br#"{"a": "[[[[[[[[[["}"#, 2));
        assert!(json_depth_exceeds(b"[[[1]]]", 2));
        assert!(!json_depth_exceeds(br#"[["\"[["]]"#, 2));
        assert!(!json_depth_exceeds(b"]]]]", 0));
    }

    #[test]
    fn json_is_declared_by_its_media_type_only() {
        let with = |v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static(v));
            declares_json(&h)
        };
        assert!(
            with("application/json") && with("Application/JSON; charset=utf-8") && with("application/merge-patch+json")
        );
        assert!(!with("text/plain") && !with("application/x-www-form-urlencoded") && !with("application/jsonx"));
        assert!(!with("text/json+xml") && !declares_json(&HeaderMap::new()));
    }

    #[tokio::test]
    async fn a_body_is_drained_up_to_the_limit() {
        assert!(drain(Body::from(vec![0u8; 1_000]), 1_000).await);
        assert!(!drain(Body::from(vec![0u8; 1_001]), 1_000).await);
        assert!(drain(Body::empty(), 0).await);
    }

    #[test]
    fn buckets_refill_and_are_kept_per_principal() {
        let limiter = RateLimiter::new(1.0, 2);
        let (a, b) = (Principal::new("a", "t", &[], &[]), Principal::new("b", "t", &[], &[]));
        let now = Instant::now();
        assert!(limiter.allow_at(&a, now) && limiter.allow_at(&a, now));
        assert!(!limiter.allow_at(&a, now));
        assert!(limiter.allow_at(&b, now), "another principal has its own bucket");
        assert!(limiter.allow_at(&a, now + Duration::from_millis(1_100)));
    }
}
