//! `[webhooks]`: where Bridle announces events to operators. Parsing and validation only; the
//! sending (and signing) is the runtime's, and the secret is never written in the file.
//!
//! ```toml
//! [webhooks]
//! approval_requested = "https://ops.example/bridle"   # http(s) URL; absent = no webhook
//! secret_env = "BRIDLE_WEBHOOK_SECRET"               # environment variable holding the HMAC key
//! console_url = "https://bridle.example"             # the console's public base: links go to {base}/approvals/ID
//! timeout_ms = 5000                                   # per attempt
//! retries = 3                                         # attempts after the first
//! ```

use std::time::Duration;

use serde::Deserialize;

use super::validate::Errors;

/// Default environment variable holding the webhook secret.
pub const DEFAULT_SECRET_ENV: &str = "BRIDLE_WEBHOOK_SECRET";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWebhooks {
    approval_requested: Option<String>,
    outcome_collected: Option<String>,
    model_promoted: Option<String>,
    secret_env: Option<String>,
    console_url: Option<String>,
    timeout_ms: Option<u64>,
    retries: Option<u32>,
}

/// Validated `[webhooks]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    /// Where `approval_requested` events are POSTed (`None`: not sent).
    pub approval_requested: Option<String>,
    /// Where `outcome_collected` (feedback stored) is POSTed, signed alike; `None`: nowhere.
    pub outcome_collected: Option<String>,
    /// Where `model_promoted` (a model moved a stage) is POSTed, signed alike; `None`: nowhere.
    pub model_promoted: Option<String>,
    /// Environment variable holding the HMAC-SHA256 key.
    pub secret_env: String,
    /// Base URL of the console; each event links to `{console_url}/approvals/{id}`.
    pub console_url: Option<String>,
    /// Time allowed for one delivery attempt.
    pub timeout: Duration,
    /// Attempts after the first one (with exponential backoff).
    pub retries: u32,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            approval_requested: None,
            outcome_collected: None,
            model_promoted: None,
            secret_env: DEFAULT_SECRET_ENV.to_owned(),
            console_url: None,
            timeout: Duration::from_secs(5),
            retries: 3,
        }
    }
}

/// Most retries accepted (the backoff doubles each time).
const MAX_RETRIES: u32 = 10;

pub(super) fn is_http_url(url: &str) -> bool {
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"));
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/') && !r.chars().any(char::is_whitespace))
}

fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

pub(super) fn webhook_settings(raw: &RawWebhooks, errors: &mut Errors) -> WebhookSettings {
    let defaults = WebhookSettings::default();
    if let Some(url) = &raw.approval_requested
        && !is_http_url(url)
    {
        errors.push("webhooks.approval_requested", format!("`{url}` is not an http:// or https:// URL"));
    }
    for (at, url) in [("outcome_collected", &raw.outcome_collected), ("model_promoted", &raw.model_promoted)] {
        if let Some(url) = url
            && !is_http_url(url)
        {
            errors.push(format!("webhooks.{at}"), format!("`{url}` is not an http:// or https:// URL"));
        }
    }
    if let Some(url) = &raw.console_url
        && !is_http_url(url)
    {
        errors.push("webhooks.console_url", format!("`{url}` is not an http:// or https:// URL"));
    }
    let secret_env = raw.secret_env.clone().unwrap_or(defaults.secret_env);
    if !is_env_name(&secret_env) {
        errors.push("webhooks.secret_env", format!("`{secret_env}` is not an environment variable name (A-Z, 0-9, _)"));
    }
    let timeout_ms = raw.timeout_ms.unwrap_or(5000);
    if !(1..=60_000).contains(&timeout_ms) {
        errors.push("webhooks.timeout_ms", "must be between 1 and 60000");
    }
    let retries = raw.retries.unwrap_or(defaults.retries);
    if retries > MAX_RETRIES {
        errors.push("webhooks.retries", format!("must be at most {MAX_RETRIES}"));
    }
    WebhookSettings {
        approval_requested: raw.approval_requested.clone(),
        outcome_collected: raw.outcome_collected.clone(),
        model_promoted: raw.model_promoted.clone(),
        secret_env,
        console_url: raw.console_url.as_ref().map(|u| u.trim_end_matches('/').to_owned()),
        timeout: Duration::from_millis(timeout_ms),
        retries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_need_an_http_scheme_and_a_host() {
        assert!(is_http_url("https://ops.example/hook") && is_http_url("http://127.0.0.1:9/x"));
        for bad in ["ftp://x", "https://", "http:///x", "file:///etc/passwd", "https://a b", "ops.example"] {
            assert!(!is_http_url(bad), "{bad}");
        }
    }

    #[test]
    fn env_names_are_upper_snake_case() {
        assert!(is_env_name("BRIDLE_WEBHOOK_SECRET") && is_env_name("_X1"));
        assert!(!is_env_name("") && !is_env_name("1A") && !is_env_name("a-b"));
    }
}
