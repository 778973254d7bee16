//! `[audit]`: how much raw evidence the audit log keeps, and for how long.
//!
//! ```toml
//! [audit]
//! evidence = "full"        # or "metadata_only": no free-text reasons are stored at all
//! retention_days = 90      # evidence older than this is dropped; the chained metadata stays
//! ```
//!
//! Evidence (an event's free-text `reason`) is always masked for secrets and PII before it is
//! stored, whatever the mode. Retention drops evidence only: every event's metadata and hash
//! stay, so the chains still verify after a prune.

use serde::Deserialize;

use super::validate::Errors;

/// Longest retention accepted (100 years).
const MAX_RETENTION_DAYS: u32 = 36_500;

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
}

/// Validated `[audit]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuditSettings {
    /// Which evidence is stored.
    pub evidence: EvidenceMode,
    /// How long evidence is kept; `None`: until `bridle audit prune` drops it.
    pub retention: Option<time::Duration>,
}

pub(super) fn audit_settings(raw: &RawAudit, errors: &mut Errors) -> AuditSettings {
    if let Some(days) = raw.retention_days
        && !(1..=MAX_RETENTION_DAYS).contains(&days)
    {
        errors.push("audit.retention_days", format!("must be between 1 and {MAX_RETENTION_DAYS}"));
    }
    AuditSettings { evidence: raw.evidence, retention: raw.retention_days.map(|d| time::Duration::days(i64::from(d))) }
}
