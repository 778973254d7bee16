//! Request limits: body size, JSON nesting depth (checked on the raw bytes before anything is
//! deserialized), a per-principal token bucket, and the request timeout. Bad input becomes a
//! 4xx with a stable code here, never a 5xx and never a panic.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bridle_core::{Code, Principal};
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
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            max_json_depth: 64,
            rate_per_second: 50.0,
            burst: 100,
            timeout: Duration::from_secs(30),
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

/// A JSON request body held to the body and depth limits; every failure is a coded 4xx.
#[derive(Debug, Clone)]
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                too_large(state.limits.max_body_bytes)
            } else {
                ApiError::bad_request(format!("cannot read the request body: {}", e.body_text()))
            }
        })?;
        parse_json(&bytes, state.limits.max_json_depth).map(JsonBody)
    }
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

/// Maps axum's own 413 (a body refused before a handler saw it) into the error shape.
pub async fn coded_rejections(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let response = next.run(req).await;
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    match response.status() {
        StatusCode::PAYLOAD_TOO_LARGE if !is_json => too_large(state.limits.max_body_bytes).into_response(),
        StatusCode::METHOD_NOT_ALLOWED if !is_json => {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, Code::BadRequest, "method not allowed on this route")
                .into_response()
        }
        _ => response,
    }
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
