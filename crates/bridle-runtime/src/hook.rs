//! The error every event hook returns: drift hooks (`drift.rs`), the feedback loop's hooks
//! (`feedback/hooks.rs`) and the graph's hook handlers (`graph/hooks.rs`). A hook's failure is
//! logged and reported (`hook_failed`, a `HookResult`'s `error`) by what fired it, never raised
//! as that caller's error; its message is what the report shows.

use crate::notify::webhook::DeliveryError;

/// Why a hook did not handle an event.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// A file or directory the hook writes could not be written.
    #[error("`{path}`: {cause}")]
    Io {
        /// The file or directory.
        path: String,
        /// The OS error.
        cause: std::io::Error,
    },
    /// What the hook sends could not be serialized.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A webhook delivery failed.
    #[error(transparent)]
    Delivery(#[from] DeliveryError),
    /// The hook's own state is unusable after a panic elsewhere (`what` names it).
    #[error("{0} lock poisoned")]
    Poisoned(&'static str),
    /// The hook refused in its own words (a callback, a handler of the caller's).
    #[error("{0}")]
    Failed(String),
}

impl From<String> for HookError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for HookError {
    fn from(message: &str) -> Self {
        Self::Failed(message.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hook_error_reads_as_the_report_shows_it() {
        assert_eq!(HookError::Poisoned("task graph").to_string(), "task graph lock poisoned");
        assert_eq!(HookError::from(DeliveryError::Status(503)).to_string(), "status 503");
        assert_eq!(HookError::from("receiver down").to_string(), "receiver down");
        let io = HookError::Io { path: "/snap".to_owned(), cause: std::io::Error::other("disk full") };
        assert_eq!(io.to_string(), "`/snap`: disk full");
    }
}
