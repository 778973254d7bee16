//! Hooks of the feedback loop: handlers told of `outcome_collected` (feedback stored) and
//! `model_promoted` (a model moved a stage). A failing handler is logged and reported, never
//! an error of what fired it.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

pub use crate::hook::HookError;
use crate::notify::webhook::{WebhookError, post_once};

/// Feedback was stored.
pub const OUTCOME_COLLECTED: &str = "outcome_collected";
/// A model moved forward one stage.
pub const MODEL_PROMOTED: &str = "model_promoted";

/// What a hook is told.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoopEvent {
    /// `outcome_collected` or `model_promoted`.
    pub event: &'static str,
    /// Tenant.
    pub tenant: String,
    /// The stored feedback, or the promoted model entry.
    pub data: Value,
}

/// A handler of the loop's events.
#[async_trait::async_trait]
pub trait LoopHook: Send + Sync {
    /// Short name for logs and reports.
    fn name(&self) -> &str;
    /// Handles one event.
    async fn on_event(&self, event: &LoopEvent) -> Result<(), HookError>;
}

/// What one hook did with one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookResult {
    /// Hook name.
    pub hook: String,
    /// Its error, if it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Calls every hook in order; failures are logged and returned, never raised.
pub async fn fire(hooks: &[Arc<dyn LoopHook>], event: &LoopEvent) -> Vec<HookResult> {
    let mut out = Vec::with_capacity(hooks.len());
    for hook in hooks {
        let error = hook.on_event(event).await.err().map(|e| e.to_string());
        if let Some(e) = &error {
            tracing::warn!(hook = hook.name(), event = event.event, error = %e, "feedback-loop hook failed");
        }
        out.push(HookResult { hook: hook.name().to_owned(), error });
    }
    out
}

/// One signed POST per event named `event`, signed like the approval webhook
/// (`notify/webhook.rs`) with `X-Bridle-Event` naming the event; one attempt with a timeout.
/// Other events are ignored.
#[derive(Debug, Clone)]
pub struct WebhookLoopHook {
    /// The event posted (`outcome_collected` or `model_promoted`).
    pub event: &'static str,
    /// Target URL.
    pub url: String,
    /// HMAC secret.
    pub secret: Vec<u8>,
    /// Timeout of the attempt.
    pub timeout: Duration,
}

#[async_trait::async_trait]
impl LoopHook for WebhookLoopHook {
    fn name(&self) -> &str {
        "webhook"
    }

    async fn on_event(&self, event: &LoopEvent) -> Result<(), HookError> {
        if event.event != self.event {
            return Ok(());
        }
        let body = serde_json::to_vec(event)?;
        post_once(&self.url, &self.secret, self.timeout, event.event, body).await?;
        Ok(())
    }
}

/// The webhooks `[webhooks]` names for the loop's events, with the secret from its
/// `secret_env`; `Err` when a URL is set and the secret is not.
pub fn from_settings(
    settings: &bridle_core::config::WebhookSettings,
    secret: Option<String>,
) -> Result<Vec<Arc<dyn LoopHook>>, WebhookError> {
    let mut hooks: Vec<Arc<dyn LoopHook>> = Vec::new();
    for (event, url) in [(OUTCOME_COLLECTED, &settings.outcome_collected), (MODEL_PROMOTED, &settings.model_promoted)] {
        let Some(url) = url else { continue };
        let secret = secret
            .clone()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| WebhookError::LoopSecret { event, env: settings.secret_env.clone() })?;
        hooks.push(Arc::new(WebhookLoopHook {
            event,
            url: url.clone(),
            secret: secret.into_bytes(),
            timeout: settings.timeout,
        }));
    }
    Ok(hooks)
}
