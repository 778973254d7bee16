//! The `approval_requested` webhook: a signed JSON POST per new pending approval request, sent
//! in the background with a timeout per attempt and retries with exponential backoff.
//!
//! # Signature scheme
//!
//! Each attempt carries
//!
//! - `X-Bridle-Event: approval_requested`
//! - `X-Bridle-Delivery: <uuid>` (the same for every attempt of one event: deduplicate on it)
//! - `X-Bridle-Timestamp: <unix seconds of this attempt>`
//! - `X-Bridle-Signature: sha256=<lowercase hex>` where the MAC is
//!   `HMAC-SHA256(secret, "{timestamp}.{body}")` over the exact body bytes.
//!
//! A receiver recomputes the MAC over the timestamp header, a `.` and the raw body, compares in
//! constant time, and refuses a timestamp more than a few minutes from its clock (a replayed
//! request cannot be re-timed without the secret). The body holds no arguments, only the
//! plan's hash: the approver reads the plan through the API or the console.

use std::sync::Arc;
use std::time::Duration;

use bridle_core::approval::ApprovalRequest;
use bridle_core::config::WebhookSettings;
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;
use time::format_description::well_known::Rfc3339;

use super::ApprovalNotifier;

/// Header carrying the signature.
pub const SIGNATURE_HEADER: &str = "x-bridle-signature";
/// Header carrying the timestamp included in the MAC.
pub const TIMESTAMP_HEADER: &str = "x-bridle-timestamp";
/// Header naming the event.
pub const EVENT_HEADER: &str = "x-bridle-event";
/// Header carrying the delivery id (stable across retries).
pub const DELIVERY_HEADER: &str = "x-bridle-delivery";

/// First backoff; it doubles after each failed attempt.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The webhook could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The secret's environment variable is unset or empty.
    #[error("the webhook secret `{0}` is not set in the environment (an unsigned webhook is never sent)")]
    MissingSecret(String),
    /// The HTTP client could not be built.
    #[error("cannot build the webhook HTTP client: {0}")]
    Client(String),
    /// A feedback-loop event has a webhook URL but the secret is unset or empty.
    #[error("`[webhooks] {event}` needs the secret in `{env}`")]
    LoopSecret {
        /// The event (`outcome_collected`, `model_promoted`).
        event: &'static str,
        /// The secret's environment variable.
        env: String,
    },
}

/// One delivery of [`post_once`] failed.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// The HTTP client could not be built.
    #[error(transparent)]
    Client(reqwest::Error),
    /// The request was not answered (its URL, which may carry a token, is left out).
    #[error(transparent)]
    Send(reqwest::Error),
    /// The receiver answered with a status outside 2xx.
    #[error("status {0}")]
    Status(u16),
}

/// POSTs signed `approval_requested` events to one URL.
#[derive(Clone)]
pub struct WebhookNotifier {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    url: String,
    secret: Vec<u8>,
    console_url: Option<String>,
    retries: u32,
    first_backoff: Duration,
}

impl std::fmt::Debug for WebhookNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookNotifier").field("url", &self.inner.url).finish_non_exhaustive()
    }
}

impl WebhookNotifier {
    /// A notifier for `settings`, reading the secret from its environment variable; `None` when
    /// no `approval_requested` URL is configured. `console_url`, when given, wins over the
    /// settings' (`bridle serve` passes the one console base it resolved, `BRIDLE_CONSOLE_URL`
    /// first).
    pub fn from_settings(settings: &WebhookSettings, console_url: Option<&str>) -> Result<Option<Self>, WebhookError> {
        let Some(url) = &settings.approval_requested else { return Ok(None) };
        let secret = std::env::var(&settings.secret_env).ok().filter(|s| !s.is_empty());
        let secret = secret.ok_or_else(|| WebhookError::MissingSecret(settings.secret_env.clone()))?;
        let console = console_url.or(settings.console_url.as_deref());
        Self::new(url, secret.as_bytes(), console, settings.timeout, settings.retries).map(Some)
    }

    /// A notifier posting to `url`, signing with `secret`.
    pub fn new(
        url: &str,
        secret: &[u8],
        console_url: Option<&str>,
        timeout: Duration,
        retries: u32,
    ) -> Result<Self, WebhookError> {
        crate::llm::openai::install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| WebhookError::Client(e.to_string()))?;
        let inner = Inner {
            http,
            url: url.to_owned(),
            secret: secret.to_vec(),
            console_url: console_url.map(|u| u.trim_end_matches('/').to_owned()),
            retries,
            first_backoff: FIRST_BACKOFF,
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The same notifier with a shorter first backoff (tests).
    #[must_use]
    pub fn with_first_backoff(self, backoff: Duration) -> Self {
        let Inner { http, url, secret, console_url, retries, .. } = &*self.inner;
        let inner = Inner {
            http: http.clone(),
            url: url.clone(),
            secret: secret.clone(),
            console_url: console_url.clone(),
            retries: *retries,
            first_backoff: backoff,
        };
        Self { inner: Arc::new(inner) }
    }

    /// The JSON body announcing `r`.
    pub fn body(&self, r: &ApprovalRequest) -> Vec<u8> {
        let console_url = self.inner.console_url.as_ref().map(|base| format!("{base}/approvals/{}", r.id));
        json!({
            "event": "approval_requested",
            "approval_id": r.id,
            "tenant": r.tenant,
            "tool": r.plan.tool,
            "plan_hash": r.plan_hash.0,
            "level": r.level.as_str(),
            "requester": r.requester,
            "expires_at": r.expires_at.format(&Rfc3339).ok(),
            "console_url": console_url,
        })
        .to_string()
        .into_bytes()
    }
}

/// `sha256=<hex>` of `HMAC-SHA256(secret, "{timestamp}.{body}")`.
pub fn signature(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else { return String::new() };
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// A POST of `body` to `url` as event `event`, signed now: the headers every Bridle webhook
/// carries (content type, event, delivery id, timestamp, signature).
fn signed(
    http: &reqwest::Client,
    url: &str,
    secret: &[u8],
    event: &str,
    delivery: &str,
    body: Vec<u8>,
) -> reqwest::RequestBuilder {
    let timestamp = time::OffsetDateTime::now_utc().unix_timestamp();
    let signature = signature(secret, timestamp, &body);
    http.post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(EVENT_HEADER, event)
        .header(DELIVERY_HEADER, delivery)
        .header(TIMESTAMP_HEADER, timestamp.to_string())
        .header(SIGNATURE_HEADER, signature)
        .body(body)
}

/// One signed delivery of `body` as event `event` (the hooks of drift and the feedback loop): a
/// single attempt within `timeout`; the response status when it is a success, else why not.
pub async fn post_once(
    url: &str,
    secret: &[u8],
    timeout: Duration,
    event: &str,
    body: Vec<u8>,
) -> Result<u16, DeliveryError> {
    crate::llm::openai::install_tls_provider();
    let http = reqwest::Client::builder().timeout(timeout).build().map_err(DeliveryError::Client)?;
    let delivery = uuid::Uuid::now_v7().to_string();
    let response = signed(&http, url, secret, event, &delivery, body)
        .send()
        .await
        .map_err(|e| DeliveryError::Send(e.without_url()))?;
    let status = response.status();
    if status.is_success() { Ok(status.as_u16()) } else { Err(DeliveryError::Status(status.as_u16())) }
}

impl ApprovalNotifier for WebhookNotifier {
    fn approval_requested(&self, request: &ApprovalRequest) {
        let body = self.body(request);
        let inner = Arc::clone(&self.inner);
        let approval_id = request.id.clone();
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(approval_id = %approval_id, "webhook not sent: no async runtime");
            count("failed");
            return;
        };
        handle.spawn(async move { deliver(&inner, &approval_id, body).await });
    }
}

async fn deliver(inner: &Inner, approval_id: &str, body: Vec<u8>) {
    let delivery = uuid::Uuid::now_v7().to_string();
    let mut backoff = inner.first_backoff;
    for attempt in 0..=inner.retries {
        let sent =
            signed(&inner.http, &inner.url, &inner.secret, "approval_requested", &delivery, body.clone()).send().await;
        let failure = match sent {
            Ok(r) if r.status().is_success() => {
                tracing::debug!(approval_id, delivery = %delivery, attempt, "webhook delivered");
                count("ok");
                return;
            }
            Ok(r) => format!("status {}", r.status().as_u16()),
            Err(e) => e.to_string(),
        };
        tracing::warn!(approval_id, delivery = %delivery, attempt, error = %failure, "webhook attempt failed");
        if attempt < inner.retries {
            tokio::time::sleep(backoff).await;
            backoff = backoff.saturating_mul(2);
        }
    }
    tracing::error!(approval_id, delivery = %delivery, "webhook not delivered; giving up");
    count("failed");
}

fn count(result: &'static str) {
    metrics::counter!("bridle_webhook_deliveries_total", "event" => "approval_requested", "result" => result)
        .increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_covers_timestamp_and_body() {
        let s = signature(b"k", 1, b"{}");
        assert!(s.starts_with("sha256=") && s.len() == 7 + 64);
        assert_ne!(s, signature(b"k", 2, b"{}"));
        assert_ne!(s, signature(b"k", 1, b"{ }"));
        assert_ne!(s, signature(b"j", 1, b"{}"));
    }

    #[test]
    fn no_url_means_no_notifier_and_a_missing_secret_refuses_to_start() {
        let mut settings = WebhookSettings::default();
        assert!(matches!(WebhookNotifier::from_settings(&settings, None), Ok(None)));
        settings.approval_requested = Some("https://ops.example/hook".into());
        settings.secret_env = "BRIDLE_TEST_SECRET_THAT_IS_NEVER_SET".into();
        let refused = WebhookNotifier::from_settings(&settings, None);
        assert!(matches!(refused, Err(WebhookError::MissingSecret(ref name)) if name == &settings.secret_env));
    }
}
