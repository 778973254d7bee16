//! `bridle gateway`: what the MCP gateway fronts. `import` writes contract stanzas for an
//! upstream's tools (to review and paste into `bridle.toml`); `pin` records the upstream's current
//! definitions as the reviewed ones: it rewrites the `upstream_pin` of every tool routed to the
//! upstream in the configuration file and audits each change in every tenant's chain. The
//! gateway refuses a tool whose definition is not its pin (`upstream_changed`); the running
//! server reads pins at start.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use bridle_core::audit::{AuditRecord, EventKind, Timings, Versions};
use bridle_core::config::{Config, ToolRoute};
use bridle_core::contract::pin::definition_pin;
use bridle_runtime::adapter::McpAdapter;
use bridle_runtime::adapter::configured::mcp_credential;
use serde_json::{Map, Value};

// What `bridle gateway` was asked (its help is the variant's doc in main.rs).
#[derive(Debug, clap::Subcommand)]
pub enum GatewayCommand {
    /// Print a `[tools.X]` stanza for every tool of upstream NAME (`[adapters.mcp.NAME]`): its
    /// description, a closed input schema, `adapter`, `upstream_tool` and `upstream_pin`, with
    /// mode, risk, scope and executor guessed from its annotations and marked for review.
    Import {
        /// The `[adapters.mcp.NAME]` to list.
        #[arg(long)]
        upstream: String,
    },
    /// Pin upstream NAME's current definitions: set the `upstream_pin` of every tool routed to it
    /// in the configuration file (`--config`), print each change, and audit it.
    Pin {
        /// The `[adapters.mcp.NAME]` whose tools to pin.
        #[arg(long)]
        upstream: String,
        /// Who reviewed the definitions (recorded in the audit events; default `cli`).
        #[arg(long, default_value = "cli")]
        by: String,
    },
}

/// Runs a `bridle gateway` subcommand.
pub async fn run(g: &super::Global, command: &GatewayCommand) -> anyhow::Result<ExitCode> {
    let config = super::config(g.config())?;
    match command {
        GatewayCommand::Import { upstream } => {
            let definitions = definitions(&config, upstream).await?;
            print!("{}", stanzas(upstream, &definitions)?);
            Ok(ExitCode::SUCCESS)
        }
        GatewayCommand::Pin { upstream, by } => {
            let path = g.config().context("`bridle gateway pin` rewrites a configuration file: give --config FILE")?;
            bridle_core::bounds::check_text("by", by, bridle_core::bounds::SUBJECT_MAX)?;
            pin(g, &config, path, upstream, by).await
        }
    }
}

/// The upstream's tool definitions as it lists them now.
async fn definitions(config: &Config, upstream: &str) -> anyhow::Result<Vec<Value>> {
    let settings = config
        .adapters
        .mcp
        .get(upstream)
        .with_context(|| format!("no `[adapters.mcp.{upstream}]` in the configuration"))?;
    let credential = mcp_credential(upstream, settings)?;
    let adapter = McpAdapter::new(upstream, settings.clone(), BTreeMap::new(), credential);
    adapter.definitions().await.map_err(|e| anyhow::anyhow!("MCP upstream `{upstream}`: {e}"))
}

/// TOML stanzas for `definitions`, each headed by what to review.
fn stanzas(upstream: &str, definitions: &[Value]) -> anyhow::Result<String> {
    let mut out = format!(
        "# Tools of MCP upstream `{upstream}`, imported by `bridle gateway import`. Review each stanza:\n\
         # mode and risk are guessed from the upstream's own annotations, which Bridle never trusts;\n\
         # scope and executor are placeholders (declare the executors under [executors]).\n"
    );
    for definition in definitions {
        let Some(name) = definition.get("name").and_then(Value::as_str) else { continue };
        let hint = |key: &str| definition.pointer(&format!("/annotations/{key}")).and_then(Value::as_bool);
        let read = hint("readOnlyHint") == Some(true);
        let (mode, risk) = match (read, hint("destructiveHint")) {
            (true, _) => ("read", "read"),
            (false, Some(false)) => ("change", "limited_change"),
            // MCP's default for a tool that is not read-only is destructive.
            (false, _) => ("change", "destructive"),
        };
        let mut tool = Map::new();
        let text = |v: &str| Value::String(v.to_owned());
        tool.insert("description".into(), definition.get("description").cloned().unwrap_or_else(|| text(name)));
        if let Some(title) = definition.get("title").or_else(|| definition.pointer("/annotations/title")) {
            tool.insert("title".into(), title.clone());
        }
        tool.insert("mode".into(), text(mode));
        tool.insert("risk".into(), text(risk));
        tool.insert("scope".into(), text(&format!("{upstream}:{mode}")));
        let identity = if read { "reader" } else { "changer" };
        tool.insert("executor".into(), text(&format!("{upstream}-{identity}")));
        if hint("idempotentHint") == Some(true) && !read {
            tool.insert("idempotent".into(), Value::Bool(true));
        }
        tool.insert("adapter".into(), text(&format!("mcp:{upstream}")));
        tool.insert("upstream_tool".into(), text(name));
        if let Some(pin) = definition_pin(definition) {
            tool.insert("upstream_pin".into(), text(&pin));
        }
        let mut schema =
            definition.get("inputSchema").cloned().unwrap_or_else(|| serde_json::json!({"type": "object"}));
        close(&mut schema);
        tool.insert("input_schema".into(), schema);
        let mut table = Map::new();
        table.insert(key(name), Value::Object(tool));
        let mut doc = Map::new();
        doc.insert("tools".into(), Value::Object(table));
        let toml = toml::to_string(&strip_nulls(Value::Object(doc))).with_context(|| format!("tool `{name}`"))?;
        out.push_str(&format!(
            "\n# review `{name}`: mode `{mode}` and risk `{risk}` guessed (readOnlyHint={:?}, destructiveHint={:?})\n{toml}",
            hint("readOnlyHint"),
            hint("destructiveHint")
        ));
    }
    Ok(out)
}

/// A tool name as a Bridle tool key (the upstream's own when it is one).
fn key(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// Closes every object schema (`additionalProperties: false` where it says nothing), as
/// Bridle's contracts must be.
fn close(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let is_object = map.get("type").and_then(Value::as_str) == Some("object") || map.contains_key("properties");
            if is_object && !map.contains_key("additionalProperties") && !map.contains_key("unevaluatedProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            map.values_mut().for_each(close);
        }
        Value::Array(items) => items.iter_mut().for_each(close),
        _ => {}
    }
}

/// TOML has no null: a key whose value is null is left out.
fn strip_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, strip_nulls(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
        other => other,
    }
}

/// Pins every tool routed to `upstream` to its definition now; rewrites `path` and audits.
async fn pin(g: &super::Global, config: &Config, path: &Path, upstream: &str, by: &str) -> anyhow::Result<ExitCode> {
    let definitions = definitions(config, upstream).await?;
    let mut text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut changes = Vec::new();
    for (tool, route) in &config.adapters.routes {
        let ToolRoute::Mcp { adapter, upstream_tool, pin: old } = route else { continue };
        if adapter != upstream {
            continue;
        }
        let definition = definitions.iter().find(|d| d.get("name").and_then(Value::as_str) == Some(upstream_tool));
        let Some(new) = definition.and_then(definition_pin) else {
            bail!("upstream `{upstream}` no longer lists `{upstream_tool}` (tool `{tool}`): remove or fix its stanza");
        };
        if old.as_deref() == Some(new.as_str()) {
            continue;
        }
        text = set_pin(&text, tool, old.as_deref(), &new)
            .with_context(|| format!("no `[tools.{tool}]` stanza with an `adapter` line in {}", path.display()))?;
        changes.push((tool.clone(), upstream_tool.clone(), old.clone(), new));
    }
    if changes.is_empty() {
        println!("every tool of `{upstream}` is pinned to its current definition");
        return Ok(ExitCode::SUCCESS);
    }
    // The file first (a failed write audits nothing), then one event per change per tenant.
    let staged = path.with_extension("toml.pinning");
    std::fs::write(&staged, &text).with_context(|| format!("writing {}", staged.display()))?;
    std::fs::rename(&staged, path).with_context(|| format!("replacing {}", path.display()))?;
    let stores = super::stores(config, g.db()).await?;
    let mut tenants: std::collections::BTreeSet<String> = stores.audit.tenants().await?.into_iter().collect();
    tenants.extend(config.principals.values().map(|p| p.tenant.clone()));
    let now = time::OffsetDateTime::now_utc();
    let records: Vec<AuditRecord> = changes
        .iter()
        .flat_map(|(tool, upstream_tool, old, new)| {
            tenants.iter().map(move |tenant| AuditRecord {
                kind: EventKind::GatewayPinned,
                call_id: format!("pin:{upstream}/{upstream_tool}"),
                at: now,
                tenant: tenant.clone(),
                subject: by.to_owned(),
                run_id: String::new(),
                incident: String::new(),
                tool: tool.clone(),
                policy_version: config.policy.version().to_owned(),
                plan_hash: Some(new.clone()),
                executor_identity: None,
                approval_id: None,
                approver: None,
                decision: None,
                code: None,
                reason: Some(format!("replaces {}", old.as_deref().unwrap_or("no pin"))),
                timings: Timings::default(),
                auth: None,
                versions: Versions::tools_only(config.registry.schema_hash()),
            })
        })
        .collect();
    stores.audit.append(stores.evidence(records)).await.context("auditing the new pins")?;
    for (tool, upstream_tool, old, new) in &changes {
        println!(
            "pinned `{tool}` (upstream `{upstream}` tool `{upstream_tool}`): {} -> {new}",
            old.as_deref().unwrap_or("none")
        );
    }
    println!("wrote {}; restart `bridle serve` (and `bridle mcp --stdio`) to apply", path.display());
    Ok(ExitCode::SUCCESS)
}

/// `text` with `[tools.TOOL]`'s pin set to `new`: its `upstream_pin` line replaced (`old` set),
/// else a line added after its `adapter` line. `None` when the stanza is not found.
fn set_pin(text: &str, tool: &str, old: Option<&str>, new: &str) -> Option<String> {
    let header = format!("[tools.{tool}]");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let start = lines.iter().position(|l| l.trim() == header)?;
    let end =
        lines[start + 1..].iter().position(|l| l.trim_start().starts_with('[')).map_or(lines.len(), |i| start + 1 + i);
    let line = format!("upstream_pin = \"{new}\"");
    if old.is_some()
        && let Some(i) = (start + 1..end).find(|&i| lines[i].trim_start().starts_with("upstream_pin"))
    {
        lines[i] = line;
    } else {
        let at = (start + 1..end).find(|&i| lines[i].trim_start().starts_with("adapter"))?;
        lines.insert(at + 1, line);
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_line_is_replaced_or_added_in_its_own_stanza_only() {
        let text = "[tools.a]\nadapter = \"mcp:up\"\nupstream_pin = \"sha256:old\"\n\n[tools.b]\nmode = \"read\"\nadapter = \"mcp:up\"\n";
        let a = set_pin(text, "a", Some("sha256:old"), "sha256:new").unwrap_or_default();
        assert_eq!(a, text.replace("sha256:old", "sha256:new"));
        let b = set_pin(text, "b", None, "sha256:b").unwrap_or_default();
        assert!(b.ends_with("adapter = \"mcp:up\"\nupstream_pin = \"sha256:b\"\n"), "{b}");
        assert!(b.contains("upstream_pin = \"sha256:old\""), "a's pin is untouched: {b}");
        assert_eq!(set_pin(text, "c", None, "sha256:c"), None);
    }

    #[test]
    fn imported_stanzas_are_closed_reviewable_toml() {
        let definitions = vec![serde_json::json!({
            "name": "restart", "description": "Restart a service.",
            "inputSchema": {"type": "object", "properties": {"service": {"type": "string"},
                "opts": {"type": "object", "properties": {"force": {"type": "boolean", "default": null}}}}},
            "annotations": {"readOnlyHint": false}
        })];
        let out = stanzas("ops", &definitions).unwrap_or_default();
        let parsed: toml::Table = toml::from_str(&out).unwrap_or_default();
        let tool = &parsed["tools"]["restart"];
        assert_eq!(tool["mode"].as_str(), Some("change"));
        assert_eq!(tool["risk"].as_str(), Some("destructive"), "not read-only and no destructiveHint: MCP's default");
        assert_eq!(tool["adapter"].as_str(), Some("mcp:ops"));
        assert_eq!(tool["upstream_pin"].as_str(), definition_pin(&definitions[0]).as_deref());
        assert_eq!(tool["input_schema"]["additionalProperties"].as_bool(), Some(false));
        assert_eq!(tool["input_schema"]["properties"]["opts"]["additionalProperties"].as_bool(), Some(false));
        assert!(out.contains("# review `restart`"), "{out}");
    }
}
