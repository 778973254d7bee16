//! Shared fixtures: the checkout example loaded from disk.
use std::path::PathBuf;

use bridle_core::config::{Config, ConfigErrors, load};

pub fn example_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/checkout")
}

pub fn read_example(path: &str) -> Result<String, String> {
    std::fs::read_to_string(example_dir().join(path)).map_err(|e| e.to_string())
}

/// Loads the example with `edit` applied to its bridle.toml text.
pub fn load_example_with(edit: impl Fn(String) -> String) -> Result<Config, ConfigErrors> {
    let text = edit(read_example("bridle.toml").unwrap());
    load(&text, &read_example)
}

pub fn checkout() -> Config {
    load_example_with(|t| t).unwrap_or_else(|e| panic!("{e}"))
}
