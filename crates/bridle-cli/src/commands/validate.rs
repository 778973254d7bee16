//! `bridle validate`: every config, schema and policy error at once.

use std::path::Path;
use std::process::ExitCode;

pub fn run(path: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let shown = path.map_or_else(|| "bundled default".to_owned(), |p| p.display().to_string());
    match bridle_runtime::bundled::load_or_default(path) {
        Ok(c) => {
            if json {
                let tools: Vec<_> = c.registry.iter().map(|t| t.name.clone()).collect();
                super::out::line(&serde_json::json!({"valid": true, "config": shown, "tools": tools, "policy_version": c.policy.version()}).to_string())?;
            } else {
                super::out::line(&format!(
                    "{shown}: valid ({} tools, policy {})",
                    c.registry.iter().count(),
                    c.policy.version()
                ))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            if json {
                let list: Vec<_> =
                    errors.0.iter().map(|e| serde_json::json!({"at": e.at, "message": e.message})).collect();
                super::out::line(&serde_json::json!({"valid": false, "config": shown, "errors": list}).to_string())?;
            } else {
                eprint!("{shown}: {errors}");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
