//! `[audit]`: how much raw evidence the audit log keeps, for how long, and where the signed heads
//! that anchor each chain's length go.
//!
//! ```toml
//! [audit]
//! evidence = "full"        # or "metadata_only": no free-text reasons are stored at all
//! retention_days = 90      # evidence older than this is dropped; the chained metadata stays
//! heads = "/var/lib/bridle/heads.jsonl"    # the head log (default for sqlite://PATH: PATH.heads)
//! heads_webhook = "https://audit.example/heads"   # optional: every head POSTed there too
//! head_every_events = 1000 # a head after this many events appended (default 1000)
//! head_every_seconds = 10  # and at least this often while chains change (default 10)
//! signing_key_file = "/run/secrets/bridle-audit.key"  # or BRIDLE_AUDIT_SIGNING_KEY (the key itself)
//! ```
//!
//! Evidence (an event's free-text `reason`) is always masked for secrets and PII before it is
//! stored, whatever the mode. Retention drops evidence only: every event's metadata and hash
//! stay, so the chains still verify after a prune. Paths are relative to `bridle.toml` (resolved
//! by the runtime's loader); the signing key itself is never written here.

use serde::Deserialize;

use super::validate::Errors;

/// Longest retention accepted (100 years).
const MAX_RETENTION_DAYS: u32 = 36_500;
/// Default events between heads.
pub const DEFAULT_HEAD_EVERY_EVENTS: u64 = 1000;
/// Default seconds between heads (while chains change).
pub const DEFAULT_HEAD_EVERY_SECONDS: u64 = 10;
/// Most events between heads.
const MAX_HEAD_EVERY_EVENTS: u64 = 1_000_000;
/// Most seconds between heads (a day).
const MAX_HEAD_EVERY_SECONDS: u64 = 86_400;

/// Which raw evidence audit events keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceMode {
    /// Reasons are kept (masked) until retention drops them.
    #[default]
    Full,
    /// Only metadata (tool, code, plan hash, identities, timings): reasons are never stored.
    MetadataOnly,
}

impl EvidenceMode {
    /// Stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::MetadataOnly => "metadata_only",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAudit {
    #[serde(default)]
    evidence: EvidenceMode,
    retention_days: Option<u32>,
    heads: Option<String>,
    heads_webhook: Option<String>,
    head_every_events: Option<u64>,
    head_every_seconds: Option<u64>,
    signing_key_file: Option<String>,
}

/// Validated `[audit]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// Which evidence is stored.
    pub evidence: EvidenceMode,
    /// How long evidence is kept; `None`: until `bridle audit prune` drops it.
    pub retention: Option<time::Duration>,
    /// The head log file (`None`: beside a SQLite store, none for other stores).
    pub heads: Option<String>,
    /// Where every signed head is also POSTed (http or https).
    pub heads_webhook: Option<String>,
    /// A head is written after this many events were appended.
    pub head_every_events: u64,
    /// A head is written at least this often while chains change.
    pub head_every: std::time::Duration,
    /// A file holding the signing key's text (instead of `BRIDLE_AUDIT_SIGNING_KEY`).
    pub signing_key_file: Option<String>,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            evidence: EvidenceMode::Full,
            retention: None,
            heads: None,
            heads_webhook: None,
            head_every_events: DEFAULT_HEAD_EVERY_EVENTS,
            head_every: std::time::Duration::from_secs(DEFAULT_HEAD_EVERY_SECONDS),
            signing_key_file: None,
        }
    }
}

pub(super) fn audit_settings(raw: &RawAudit, errors: &mut Errors) -> AuditSettings {
    if let Some(days) = raw.retention_days
        && !(1..=MAX_RETENTION_DAYS).contains(&days)
    {
        errors.push("audit.retention_days", format!("must be between 1 and {MAX_RETENTION_DAYS}"));
    }
    let events = raw.head_every_events.unwrap_or(DEFAULT_HEAD_EVERY_EVENTS);
    if !(1..=MAX_HEAD_EVERY_EVENTS).contains(&events) {
        errors.push("audit.head_every_events", format!("must be between 1 and {MAX_HEAD_EVERY_EVENTS}"));
    }
    let seconds = raw.head_every_seconds.unwrap_or(DEFAULT_HEAD_EVERY_SECONDS);
    if !(1..=MAX_HEAD_EVERY_SECONDS).contains(&seconds) {
        errors.push("audit.head_every_seconds", format!("must be between 1 and {MAX_HEAD_EVERY_SECONDS}"));
    }
    for (at, path) in [("audit.heads", &raw.heads), ("audit.signing_key_file", &raw.signing_key_file)] {
        if path.as_deref().is_some_and(|p| p.trim().is_empty()) {
            errors.push(at, "must name a file");
        }
    }
    if let Some(url) = &raw.heads_webhook
        && !super::webhooks::is_http_url(url)
    {
        errors.push("audit.heads_webhook", format!("`{url}` is not an http:// or https:// URL"));
    }
    AuditSettings {
        evidence: raw.evidence,
        retention: raw.retention_days.map(|d| time::Duration::days(i64::from(d))),
        heads: raw.heads.clone(),
        heads_webhook: raw.heads_webhook.clone(),
        head_every_events: events,
        head_every: std::time::Duration::from_secs(seconds),
        signing_key_file: raw.signing_key_file.clone(),
    }
}
