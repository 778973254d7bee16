//! Fuzz target: any UTF-8 text as a workflow file, validated against the bundled checkout and
//! fab configurations (TOML, node graph, CEL expressions, output schemas). A workflow either
//! loads or is `workflow_invalid` with at least one located problem, never a panic or overflow.
#![no_main]

use std::sync::LazyLock;

use bridle_core::config::{Config, load};
use bridle_core::workflow::Workflow;
use libfuzzer_sys::fuzz_target;

macro_rules! example {
    ($dir:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../examples/", $dir, "/", $path))),)*]
    };
}

fn loaded(toml: &str, files: &'static [(&'static str, &'static str)]) -> Config {
    let read = |path: &str| -> Result<String, String> {
        files.iter().find(|(p, _)| *p == path).map(|(_, t)| (*t).to_owned()).ok_or_else(|| format!("no `{path}`"))
    };
    load(toml, &read).unwrap_or_else(|e| panic!("the example does not load: {e}"))
}

static CONFIGS: LazyLock<[Config; 2]> = LazyLock::new(|| {
    [
        loaded(
            include_str!("../../examples/checkout/bridle.toml"),
            example!("checkout":
                "schemas/service_ref.json", "schemas/scale_replicas.json", "schemas/search_law.json",
                "schemas/calculate.json", "schemas/convert_unit.json", "policies/bridle.cedarschema",
                "policies/tenancy.cedar", "policies/workbench.cedar", "policies/expectations.toml",
            ),
        ),
        loaded(
            include_str!("../../examples/fab/bridle.toml"),
            example!("fab":
                "schemas/equipment_ref.json", "schemas/set_temperature.json", "schemas/adjust_gas_flow.json",
                "schemas/replace_part.json", "schemas/hold_equipment.json", "policies/bridle.cedarschema",
                "policies/fab.cedar", "policies/expectations.toml", "prompts/diagnostician.md",
                "prompts/advisor.md",
            ),
        ),
    ]
});

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for config in CONFIGS.iter() {
        match Workflow::parse(text, config) {
            Ok(w) => assert!(w.node_count() > 0 && w.step_bound() >= 2),
            Err(e) => {
                assert!(!e.problems.is_empty(), "an invalid workflow names a problem");
                let _ = e.rejection();
            }
        }
    }
});
