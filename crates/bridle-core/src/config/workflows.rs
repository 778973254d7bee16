//! `[workflows]`: where the workflow files the API may start live.
//!
//! ```toml
//! [workflows]
//! dir = "workflows"    # relative to this file's directory (read by the runtime, not here)
//! ```

use serde::Deserialize;

use super::validate::Errors;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkflows {
    dir: Option<String>,
}

/// Validated `[workflows]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WorkflowSettings {
    /// Directory of workflow files (`NAME.toml` is the workflow `NAME`); `None`: none offered.
    pub dir: Option<String>,
}

pub(super) fn workflow_settings(raw: &RawWorkflows, errors: &mut Errors) -> WorkflowSettings {
    if raw.dir.as_deref().is_some_and(|d| d.trim().is_empty()) {
        errors.push("workflows.dir", "must not be empty");
    }
    WorkflowSettings { dir: raw.dir.clone().filter(|d| !d.trim().is_empty()) }
}
