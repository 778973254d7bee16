//! Adapters: how the gate reaches the systems tools act on.
//!
//! Each adapter implements the core `Adapter` port with separate read and change entry points
//! and an outcome query for jobs left `unknown`. Tools configured with `adapter = "http:…"`,
//! `"command:…"` or `"mcp:…"` go to [`HttpAdapter`] / [`CommandAdapter`] / [`McpAdapter`] through
//! [`ConfiguredAdapter`].

pub mod builtin;
pub mod command;
pub mod configured;
pub mod fab;
pub mod http;
pub mod mcp;
pub mod memory;
pub mod router;

use std::sync::Arc;

use bridle_core::config::Config;
use bridle_core::ports::InProcessTools;

pub use builtin::{BuiltinAdapter, NoTools};
pub use command::CommandAdapter;
pub use configured::ConfiguredAdapter;
pub use fab::FabAdapter;
pub use http::HttpAdapter;
pub use mcp::McpAdapter;
pub use memory::{Fault, MemoryAdapter};
pub use router::RouterAdapter;

/// Why the adapters a configuration names could not be set up (checked at start-up, fail closed).
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A credential's environment variable is not set; `owner` is what needs it
    /// (``executor `name` ``, ``MCP adapter `name` ``).
    #[error("{owner}: environment variable `{var}` is not set")]
    CredentialEnv {
        /// What needs the credential.
        owner: String,
        /// The variable.
        var: String,
    },
    /// A credential file could not be read.
    #[error("{owner}: cannot read credential file `{path}`: {cause}")]
    CredentialFile {
        /// What needs the credential.
        owner: String,
        /// The file.
        path: String,
        /// Why.
        cause: std::io::Error,
    },
    /// A tool's HTTP method is not one.
    #[error("tool `{tool}`: method `{method}`: {cause}")]
    Method {
        /// The tool.
        tool: String,
        /// The method as configured.
        method: String,
        /// Why it was refused.
        cause: String,
    },
    /// A tool names an executor that is not configured.
    #[error("tool `{tool}`: no executor `{executor}`")]
    NoExecutor {
        /// The tool.
        tool: String,
        /// The executor it names.
        executor: String,
    },
    /// A tool names an adapter that is not configured; `kind` is `HTTP`, `command` or `MCP`.
    #[error("no {kind} adapter `{name}`")]
    NoAdapter {
        /// The adapter's kind.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// The HTTP client of an adapter could not be built.
    #[error("HTTP adapter `{name}`: {cause}")]
    Client {
        /// The adapter.
        name: String,
        /// The client's error.
        cause: String,
    },
}

/// The in-process adapters of a configuration: the application's in-process `tools` run by
/// [`BuiltinAdapter`], every other tool by a [`MemoryAdapter`] (returned too, so callers can
/// inspect or fault it).
pub fn in_process(config: &Config, tools: Arc<dyn InProcessTools>) -> (Arc<RouterAdapter>, Arc<MemoryAdapter>) {
    let memory = Arc::new(MemoryAdapter::from_config(config));
    let router = RouterAdapter::new(Arc::new(BuiltinAdapter::from_config(config, tools)), memory.clone());
    (Arc::new(router), memory)
}

/// The adapter of a configuration: [`in_process`] (with the [`FabAdapter`] in place of the memory
/// adapter under `[adapter] simulator = "fab"`) alone, or under a [`ConfiguredAdapter`] when
/// tools name HTTP or command adapters. Reads those tools' credentials now.
pub fn from_config(
    config: &Config,
    tools: Arc<dyn InProcessTools>,
) -> Result<Arc<dyn bridle_core::ports::Adapter>, SetupError> {
    let router: Arc<dyn bridle_core::ports::Adapter> = match config.simulator {
        Some(bridle_core::config::Simulator::Fab) => Arc::new(RouterAdapter::new(
            Arc::new(BuiltinAdapter::from_config(config, tools)),
            Arc::new(FabAdapter::from_config(config)),
        )),
        None => in_process(config, tools).0,
    };
    if config.adapters.is_empty() {
        return Ok(router);
    }
    Ok(Arc::new(ConfiguredAdapter::from_config(config, router)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setup_errors_name_what_needs_the_credential() {
        let e = SetupError::CredentialEnv { owner: "executor `orders`".to_owned(), var: "ORDERS_TOKEN".to_owned() };
        assert_eq!(e.to_string(), "executor `orders`: environment variable `ORDERS_TOKEN` is not set");
        let e = SetupError::NoAdapter { kind: "MCP", name: "docs".to_owned() };
        assert_eq!(e.to_string(), "no MCP adapter `docs`");
    }
}
