//! Fuzz target: the config loader from raw text through validation. The first byte chooses
//! what the rest replaces in the bundled checkout example: `bridle.toml` itself, a Cedar
//! policy file, the Cedar schema, the policy tests or a tool's JSON schema file. Loading must
//! answer (a config or a list of errors, each with a location), never panic or overflow.
#![no_main]

use bridle_core::config::load;
use libfuzzer_sys::fuzz_target;

macro_rules! checkout {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../examples/checkout/", $path))),)*]
    };
}

const TOML: &str = include_str!("../../examples/checkout/bridle.toml");
const FILES: &[(&str, &str)] = checkout!(
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

/// What the input stands for, by its first byte.
const REPLACED: &[&str] = &[
    "bridle.toml",
    "policies/tenancy.cedar",
    "policies/bridle.cedarschema",
    "policies/expectations.toml",
    "schemas/scale_replicas.json",
];

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let replaced = REPLACED.get(usize::from(first) % REPLACED.len()).copied().unwrap_or("bridle.toml");
    let files = |path: &str| -> Result<String, String> {
        if path == replaced {
            return Ok(text.to_owned());
        }
        FILES
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, t)| (*t).to_owned())
            .ok_or_else(|| format!("no `{path}`"))
    };
    let toml = if replaced == "bridle.toml" { text } else { TOML };
    match load(toml, &files) {
        Ok(config) => assert!(config.registry.iter().count() > 0 || replaced == "bridle.toml"),
        Err(errors) => {
            assert!(!errors.0.is_empty(), "an error list is never empty");
            for e in &errors.0 {
                assert!(!e.at.is_empty() && !e.message.is_empty(), "an error without location or message: {e:?}");
            }
        }
    }
});
