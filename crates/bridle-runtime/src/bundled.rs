//! Loading configuration: the bundled default (seed 004's checkout example with the workbench
//! tools, embedded in the binary), the bundled fab example (seed 000), or a `bridle.toml` on
//! disk with the files it references.

use std::path::{Path, PathBuf};

use bridle_core::config::{Config, ConfigError, ConfigErrors, load};

macro_rules! example_files {
    ($dir:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../../examples/", $dir, "/", $path))),)*]
    };
}

/// The bundled default configuration text.
pub const CHECKOUT_TOML: &str = include_str!("../../../examples/checkout/bridle.toml");

const CHECKOUT_FILES: &[(&str, &str)] = example_files!("checkout":
    "schemas/service_ref.json",
    "schemas/scale_replicas.json",
    "schemas/search_law.json",
    "schemas/calculate.json",
    "schemas/convert_unit.json",
    "policies/bridle.cedarschema",
    "policies/tenancy.cedar",
    "policies/workbench.cedar",
    "policies/expectations.toml",
);

/// The bundled default: seed 004's checkout tools, principals and policies, plus seed 003's
/// workbench tools and their principal.
pub fn checkout() -> Result<Config, ConfigErrors> {
    load(CHECKOUT_TOML, &embedded(CHECKOUT_FILES))
}

/// A file of the bundled default configuration (a schema, a policy), by its relative path.
pub fn checkout_file(path: &str) -> Option<String> {
    CHECKOUT_FILES.iter().find(|(p, _)| *p == path).map(|(_, text)| (*text).to_owned())
}

/// Seed 000's fab example (`bridle demo fab`).
pub const FAB_TOML: &str = include_str!("../../../examples/fab/bridle.toml");

const FAB_FILES: &[(&str, &str)] = example_files!("fab":
    "schemas/equipment_ref.json",
    "schemas/set_temperature.json",
    "schemas/adjust_gas_flow.json",
    "schemas/replace_part.json",
    "schemas/hold_equipment.json",
    "policies/bridle.cedarschema",
    "policies/fab.cedar",
    "policies/expectations.toml",
    "prompts/diagnostician.md",
    "prompts/advisor.md",
);

/// Seed 000's fab: equipment, recipes, the fab tools and their rules, the fallback rules, the
/// agents' and operators' principals, and the fab simulator.
pub fn fab() -> Result<Config, ConfigErrors> {
    load(FAB_TOML, &embedded(FAB_FILES))
}

fn embedded(files: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Result<String, String> {
    move |path: &str| {
        files
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, text)| (*text).to_owned())
            .ok_or_else(|| format!("`{path}` is not part of the bundled configuration"))
    }
}

/// Loads `bridle.toml` from disk; referenced paths are relative to its directory.
pub fn from_path(path: &Path) -> Result<Config, ConfigErrors> {
    let text = read_text(path)
        .map_err(|message| ConfigErrors(vec![ConfigError { at: path.display().to_string(), message }]))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let base = dir.clone();
    let files = move |rel: &str| read_text(&resolve(&dir, rel));
    let mut config = load(&text, &files)?;
    // `[workflows] dir` is relative to the file, like every other path in it.
    if let Some(rel) = &config.workflows.dir {
        config.workflows.dir = Some(resolve(&base, rel).display().to_string());
    }
    Ok(config)
}

/// The config at `path`, or the bundled default.
pub fn load_or_default(path: Option<&Path>) -> Result<Config, ConfigErrors> {
    path.map_or_else(checkout, from_path)
}

fn resolve(dir: &Path, rel: &str) -> PathBuf {
    let p = Path::new(rel);
    if p.is_absolute() { p.to_path_buf() } else { dir.join(p) }
}

/// Reads a UTF-8 text file, naming the problem (missing, unreadable, not UTF-8).
fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        format!("`{}` is not UTF-8 (invalid byte at offset {})", path.display(), e.utf8_error().valid_up_to())
    })
}
