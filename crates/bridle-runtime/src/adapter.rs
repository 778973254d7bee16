//! Adapters: how the gate reaches the systems tools act on.
//!
//! Each adapter implements the core `Adapter` port with separate read and change entry points
//! and an outcome query for jobs left `unknown`.

pub mod memory;

pub use memory::{Fault, MemoryAdapter};
