//! Telling operators that something waits for them: the [`ApprovalNotifier`] port the gate calls
//! when it creates a pending approval request, and its webhook implementation
//! ([`webhook::WebhookNotifier`]).
//!
//! A notifier must never block or fail the call that created the request: it takes the request,
//! hands the delivery to the background and returns. It decides nothing.

pub mod webhook;

use bridle_core::approval::ApprovalRequest;

/// Announces new pending approval requests (webhook, chat, pager …).
pub trait ApprovalNotifier: Send + Sync {
    /// `request` was just stored as pending. Returns at once; delivery happens in the
    /// background and its failures are logged and counted, never reported to the caller.
    fn approval_requested(&self, request: &ApprovalRequest);
}

/// Counts a new pending request and tells `notifier`, if any (in the background). The gate and
/// the approval desk both announce through here.
pub(crate) fn announce(notifier: Option<&std::sync::Arc<dyn ApprovalNotifier>>, request: &ApprovalRequest) {
    metrics::counter!("bridle_approvals_created_total").increment(1);
    if let Some(notifier) = notifier {
        notifier.approval_requested(request);
    }
}
