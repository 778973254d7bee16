//! Loading configuration: the bundled default (seed 004's checkout example with the workbench
//! tools, embedded in the binary), the bundled fab example (seed 000), or a `bridle.toml` on
//! disk with the files it references.

use std::path::{Path, PathBuf};

use bridle_core::config::{Config, ConfigError, ConfigErrors, FileError, load};

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
        .map_err(|e| ConfigErrors(vec![ConfigError { at: path.display().to_string(), message: e.to_string() }]))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let base = dir.clone();
    let files = move |rel: &str| read_text(&resolve(&dir, rel));
    let mut config = load(&text, &files)?;
    // `[workflows] dir` is relative to the file, like every other path in it.
    if let Some(rel) = &config.workflows.dir {
        config.workflows.dir = Some(resolve(&base, rel).display().to_string());
    }
    // So are `[audit] heads` and `[audit] signing_key_file`.
    for path in [&mut config.audit.heads, &mut config.audit.signing_key_file].into_iter().flatten() {
        *path = resolve(&base, path).display().to_string();
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

/// Largest file a configuration is or references (bytes): `bridle.toml`, schemas, policies,
/// policy tests, prompts, model scripts, rule files and workflow files.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Why a configuration's file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Missing or unreadable.
    #[error("cannot read `{path}`: {cause}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        cause: std::io::Error,
    },
    /// A directory, FIFO, device or socket (never opened: it could hang start-up).
    #[error("`{path}` is {kind}, not a regular file")]
    NotRegular {
        /// The file.
        path: String,
        /// What it is (`a FIFO`, `a device` …).
        kind: &'static str,
    },
    /// Larger than the cap.
    #[error("`{path}` has {len} bytes, more than the {max} a configuration file may have")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        len: u64,
        /// The cap.
        max: u64,
    },
    /// Grew past the cap while read.
    #[error("`{path}` has more than the {max} bytes a configuration file may have")]
    GrewTooLarge {
        /// The file.
        path: String,
        /// The cap.
        max: u64,
    },
    /// Not UTF-8 text.
    #[error("`{path}` is not UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 {
        /// The file.
        path: String,
        /// Offset of the first invalid byte.
        offset: usize,
    },
}

impl From<ReadError> for FileError {
    fn from(e: ReadError) -> Self {
        FileError(e.to_string())
    }
}

/// Reads a UTF-8 text file of at most [`MAX_FILE_BYTES`], naming the problem (missing,
/// not a regular file, too large, unreadable, not UTF-8).
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    read_text_capped(path, MAX_FILE_BYTES)
}

/// [`read_text`] with another cap.
pub fn read_text_capped(path: &Path, max: u64) -> Result<String, ReadError> {
    use std::io::Read;
    let shown = || path.display().to_string();
    let cannot = |cause: std::io::Error| ReadError::Io { path: shown(), cause };
    // INVARIANT: the path is looked at before it is opened, and only a regular file is opened:
    // opening a FIFO waits for a writer and a device such as `/dev/zero` never ends, either of
    // which would hang start-up. The opened file is checked again (it may have been replaced in
    // between) and read with a cap, so nothing reads more than `max` + 1 bytes.
    let regular = |meta: &std::fs::Metadata| -> Result<(), ReadError> {
        if !meta.is_file() {
            return Err(ReadError::NotRegular { path: shown(), kind: file_kind(&meta.file_type()) });
        }
        if meta.len() > max {
            return Err(ReadError::TooLarge { path: shown(), len: meta.len(), max });
        }
        Ok(())
    };
    regular(&std::fs::metadata(path).map_err(cannot)?)?;
    let file = std::fs::File::open(path).map_err(cannot)?;
    regular(&file.metadata().map_err(cannot)?)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(cannot)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max {
        return Err(ReadError::GrewTooLarge { path: shown(), max });
    }
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8 { path: shown(), offset: e.utf8_error().valid_up_to() })
}

fn file_kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() { "a directory" } else { "not a file" }
}
