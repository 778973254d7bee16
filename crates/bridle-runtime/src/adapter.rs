//! Adapters: how the gate reaches the systems tools act on.
//!
//! Each adapter implements the core `Adapter` port with separate read and change entry points
//! and an outcome query for jobs left `unknown`.

pub mod builtin;
pub mod memory;
pub mod router;

use std::sync::Arc;

use bridle_core::config::Config;

pub use builtin::BuiltinAdapter;
pub use memory::{Fault, MemoryAdapter};
pub use router::RouterAdapter;

/// The in-process adapters of a configuration: built-in tools run by [`BuiltinAdapter`], every
/// other tool by a [`MemoryAdapter`] (returned too, so callers can inspect or fault it).
pub fn in_process(config: &Config) -> (Arc<RouterAdapter>, Arc<MemoryAdapter>) {
    let memory = Arc::new(MemoryAdapter::from_config(config));
    let router = RouterAdapter::new(Arc::new(BuiltinAdapter::from_config(config)), memory.clone());
    (Arc::new(router), memory)
}
