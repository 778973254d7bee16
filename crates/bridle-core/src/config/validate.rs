//! Raw → validated configuration, collecting every problem before failing.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::raw::{RawConfig, RawTool};
use super::{Config, ConfigError, ConfigErrors, Executor, Files, MemoryResource};
use crate::answer::IntakeLimits;
use crate::contract::{ApprovalLevel, CompiledSchema, Mode, Registry, ToolContract};
use crate::policy::{PolicyEngine, PolicySource, parse_expectations};
use crate::principal::Principal;

/// Longest adapter timeout a tool may declare.
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Longest Korean tool description, in characters.
const MAX_DESCRIPTION_KO_CHARS: usize = 2000;
/// Longest tool title, in characters.
const MAX_TITLE_CHARS: usize = 120;
/// Default adapter timeout.
const DEFAULT_TIMEOUT_MS: u64 = 5_000;
/// Most calls `[intake] max_calls` may allow.
const MAX_INTAKE_CALLS: usize = 100;
/// Longest answer `[intake] max_chars` may allow (characters).
const MAX_INTAKE_CHARS: usize = 1_000_000;

#[derive(Default)]
pub(super) struct Errors(pub(super) Vec<ConfigError>);

impl Errors {
    pub(super) fn push(&mut self, at: impl Into<String>, message: impl Into<String>) {
        self.0.push(ConfigError { at: at.into(), message: message.into() });
    }

    /// `value`, unless an error was collected.
    pub(super) fn into_result<T>(self, value: T) -> Result<T, ConfigErrors> {
        if self.0.is_empty() { Ok(value) } else { Err(ConfigErrors(self.0)) }
    }
}

/// Parses and validates `bridle.toml` text; referenced files are read through `files`.
pub fn load(text: &str, files: &dyn Files) -> Result<Config, ConfigErrors> {
    // INVARIANT: every string, list and table is within its bound before anything is built
    // from the text (a 100 KB sensitive term or a million-item list is refused here).
    let mut bounds = Errors::default();
    super::bounds::check_text(text, &mut bounds);
    if !bounds.0.is_empty() {
        return Err(ConfigErrors(bounds.0));
    }
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        ConfigErrors(vec![ConfigError { at: "bridle.toml".into(), message: e.to_string().trim_end().to_owned() }])
    })?;
    let mut errors = Errors::default();

    let mut executors = BTreeMap::new();
    for (name, e) in &raw.executors {
        if e.credential_env.is_some() && e.credential_file.is_some() {
            errors.push(format!("executors.{name}"), "set `credential_env` or `credential_file`, not both");
        }
        executors.insert(
            name.clone(),
            Executor {
                name: name.clone(),
                mode: e.mode,
                credential_env: e.credential_env.clone(),
                credential_file: e.credential_file.clone(),
            },
        );
    }

    let mut tools = Vec::new();
    for (name, tool) in &raw.tools {
        if let Some(t) = tool_contract(name, tool, &executors, files, &mut errors) {
            tools.push(t);
        }
    }
    let registry = Registry::new(tools);
    check_cross_tool_rules(&raw, &registry, &mut errors);

    let mut principals = BTreeMap::new();
    for (name, p) in raw.principals {
        if p.tenant.trim().is_empty() {
            errors.push(format!("principals.{name}.tenant"), "must not be empty");
        }
        principals.insert(
            name.clone(),
            Principal {
                subject: name,
                tenant: p.tenant,
                services: p.services.into_iter().collect(),
                scopes: p.scopes.into_iter().collect(),
                agent: None,
            },
        );
    }

    if raw.approvals.ttl_seconds == 0 || raw.approvals.ttl_seconds > 30 * 86_400 {
        errors.push("approvals.ttl_seconds", "must be between 1 second and 30 days");
    }

    let mut memory_adapter = Vec::new();
    for (i, m) in raw.adapter.memory.into_iter().enumerate() {
        match serde_json::to_value(&m.state) {
            Ok(state @ Value::Object(_)) => memory_adapter.push(MemoryResource { tenant: m.tenant, key: m.key, state }),
            _ => errors.push(format!("adapter.memory[{i}].state"), "must be a table"),
        }
    }

    let intake = IntakeLimits { max_calls: raw.intake.max_calls, max_chars: raw.intake.max_chars };
    if !(1..=MAX_INTAKE_CALLS).contains(&intake.max_calls) {
        errors.push("intake.max_calls", format!("must be between 1 and {MAX_INTAKE_CALLS}"));
    }
    if !(1..=MAX_INTAKE_CHARS).contains(&intake.max_chars) {
        errors.push("intake.max_chars", format!("must be between 1 and {MAX_INTAKE_CHARS}"));
    }

    let guard = guard_settings(&raw.guard, &mut errors);
    let runtime = super::runtime::runtime_settings(&raw.runtime, &mut errors);
    let llm = super::runtime::llm_settings(raw.llm.as_ref(), files, &mut errors);
    let webhooks = super::webhooks::webhook_settings(&raw.webhooks, &mut errors);
    let server = super::server::server_settings(&raw.server, &mut errors);
    let audit = super::audit::audit_settings(&raw.audit, &mut errors);
    let workflows = super::workflows::workflow_settings(&raw.workflows, &mut errors);
    let drift = super::drift::drift_settings(&raw.drift, &mut errors);
    let adapters = super::adapters::adapter_settings(&raw.adapters, &raw.tools, &registry, &mut errors);
    let levels = super::decisions::level_settings(&raw.levels, &mut errors);
    let diagnosis = super::decisions::diagnosis_settings(&raw.diagnosis, &mut errors);
    let fallback = super::decisions::fallback_rules(raw.fallback, &registry, &mut errors);
    let simulator = match raw.adapter.simulator.as_deref() {
        None => None,
        Some("fab") => Some(super::Simulator::Fab),
        Some(other) => {
            errors.push("adapter.simulator", format!("`{other}` is not a simulator (known: `fab`)"));
            None
        }
    };

    let agents = super::agents::agent_registry(&raw.agents, &registry, files, &mut errors);
    let kill_switch = super::kill::kill_switch_settings(&raw.kill_switch, &mut errors);
    let history = super::history::history_settings(&raw.history, &registry, &mut errors);
    let limits = super::runs::limit_settings(&raw.limits, &agents, &mut errors);
    let taint = super::runs::taint_settings(&raw.taint, &mut errors);
    let identity = super::runs::identity_settings(&raw.identity);
    let auth = super::auth::auth_settings(&raw.auth, &mut errors);
    let policy = load_policy(&raw.policy, &registry, files, &mut errors);

    match policy {
        Some(policy) if errors.0.is_empty() => Ok(Config {
            store_url: raw.store.url,
            registry: Arc::new(registry),
            policy: Arc::new(policy),
            executors,
            principals,
            approval_ttl: time::Duration::seconds(i64::try_from(raw.approvals.ttl_seconds).unwrap_or(i64::MAX)),
            memory_adapter,
            intake,
            guard,
            runtime,
            llm,
            webhooks,
            server,
            adapters,
            levels,
            diagnosis,
            fallback,
            simulator,
            audit,
            workflows,
            drift,
            agents: Arc::new(agents),
            kill_switch,
            history,
            limits,
            taint,
            identity,
            auth,
        }),
        _ => Err(ConfigErrors(errors.0)),
    }
}

/// Largest document `[guard] document_max_bytes` may allow.
const MAX_GUARD_DOCUMENT_BYTES: usize = 64 * 1024 * 1024;

fn guard_settings(raw: &super::raw::RawGuard, errors: &mut Errors) -> super::GuardSettings {
    let defaults = crate::guard::sanitize::Limits::default();
    let mut limit = |at: &str, value: Option<usize>, default: usize, max: usize| {
        let v = value.unwrap_or(default);
        if !(1..=max).contains(&v) {
            errors.push(format!("guard.{at}"), format!("must be between 1 and {max}"));
        }
        v
    };
    let limits = crate::guard::sanitize::Limits {
        chat_chars: limit("chat_max_chars", raw.chat_max_chars, defaults.chat_chars, MAX_INTAKE_CHARS),
        workflow_chars: limit("workflow_max_chars", raw.workflow_max_chars, defaults.workflow_chars, MAX_INTAKE_CHARS),
        document_bytes: limit(
            "document_max_bytes",
            raw.document_max_bytes,
            defaults.document_bytes,
            MAX_GUARD_DOCUMENT_BYTES,
        ),
    };
    for (i, term) in raw.sensitive_terms.iter().enumerate() {
        if term.trim().chars().count() < 3 {
            errors.push(format!("guard.sensitive_terms[{i}]"), "must have at least 3 characters");
        }
    }
    let bundled = crate::guard::combine::Thresholds::BUNDLED;
    let mut threshold = |at: &str, value: Option<f64>, default: f64| {
        let v = value.unwrap_or(default);
        if !crate::guard::combine::valid_threshold(v) {
            errors.push(format!("guard.model.{at}"), "must be a number between 0 and 1 (exclusive)");
        }
        v
    };
    let thresholds = crate::guard::combine::Thresholds {
        chat: threshold("chat", raw.model.chat, bundled.chat),
        workflow: threshold("workflow", raw.model.workflow, bundled.workflow),
        document: threshold("document", raw.model.document, bundled.document),
    };
    super::GuardSettings { limits, sensitive_terms: raw.sensitive_terms.clone(), thresholds }
}

fn tool_contract(
    name: &str,
    tool: &RawTool,
    executors: &BTreeMap<String, Executor>,
    files: &dyn Files,
    errors: &mut Errors,
) -> Option<ToolContract> {
    let at = format!("tools.{name}");
    let before = errors.0.len();
    let valid_name =
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name {
        errors.push(&at, "a tool name is 1-64 characters of ASCII letters, digits, `_` and `-`");
    }
    if tool.description.trim().is_empty() {
        errors.push(format!("{at}.description"), "must not be empty");
    }
    match executors.get(&tool.executor) {
        None => errors.push(format!("{at}.executor"), format!("no executor `{}` is defined", tool.executor)),
        Some(e) if e.mode != tool.mode => errors.push(
            format!("{at}.executor"),
            format!(
                "`{}` is a {} identity but the tool is `{}`; reads and changes never share an identity",
                e.name,
                e.mode.as_str(),
                tool.mode.as_str()
            ),
        ),
        Some(_) => {}
    }
    for (field, title) in [("title", &tool.title), ("title_ko", &tool.title_ko)] {
        if let Some(title) = title
            && (title.trim().is_empty()
                || title.chars().count() > MAX_TITLE_CHARS
                || title.chars().any(char::is_control))
        {
            errors.push(
                format!("{at}.{field}"),
                format!("must be 1 to {MAX_TITLE_CHARS} characters, no control characters"),
            );
        }
    }
    if let Some(text) = &tool.description_ko
        && (text.trim().is_empty() || text.chars().count() > MAX_DESCRIPTION_KO_CHARS || text.contains('\0'))
    {
        errors.push(
            format!("{at}.description_ko"),
            format!("must be 1 to {MAX_DESCRIPTION_KO_CHARS} characters, no NUL"),
        );
    }
    let timeout_ms = tool.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
        errors.push(format!("{at}.timeout_ms"), format!("must be between 1 and {MAX_TIMEOUT_MS}"));
    }
    let source = match (&tool.schema, &tool.input_schema) {
        (Some(path), None) => match files.read(path) {
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(v) => Some(v),
                Err(e) => {
                    errors.push(format!("{at}.schema"), format!("`{path}` is not JSON: {e}"));
                    None
                }
            },
            Err(e) => {
                errors.push(format!("{at}.schema"), format!("cannot read `{path}`: {e}"));
                None
            }
        },
        (None, Some(inline)) => match serde_json::to_value(inline) {
            Ok(v) => Some(v),
            Err(e) => {
                errors.push(format!("{at}.input_schema"), e.to_string());
                None
            }
        },
        _ => {
            errors.push(&at, "set exactly one of `schema` (a JSON file) and `input_schema` (inline)");
            None
        }
    };
    let schema = source.and_then(|s| match CompiledSchema::compile(s) {
        Ok(c) => Some(c),
        Err(errs) => {
            for e in errs {
                errors.push(format!("{at}.schema"), e.to_string());
            }
            None
        }
    });
    if let Some(schema) = &schema {
        check_params(&at, tool, schema.source(), errors);
    }
    let output_schema = tool.output_schema.as_ref().and_then(|inline| {
        let compiled = serde_json::to_value(inline)
            .map_err(|e| vec![e.to_string()])
            .and_then(|v| CompiledSchema::compile_output(v).map_err(|es| es.iter().map(ToString::to_string).collect()));
        compiled.map_err(|es| es.into_iter().for_each(|e| errors.push(format!("{at}.output_schema"), e))).ok()
    });
    let approval = tool.approval.unwrap_or(match tool.mode {
        Mode::Read => ApprovalLevel::Auto,
        Mode::Change => ApprovalLevel::Approval,
    });
    if errors.0.len() > before {
        return None;
    }
    Some(ToolContract {
        name: name.to_owned(),
        title: tool.title.clone().unwrap_or_else(|| title_of(name)),
        description: tool.description.clone(),
        title_ko: tool.title_ko.clone(),
        description_ko: tool.description_ko.clone(),
        idempotent: tool.idempotent,
        mode: tool.mode,
        scope: tool.scope.clone(),
        risk: tool.risk,
        executor: tool.executor.clone(),
        approval,
        timeout: Duration::from_millis(timeout_ms),
        resource: tool.resource.clone(),
        params: tool.params.clone(),
        schema: Arc::new(schema?),
        output_schema: output_schema.map(Arc::new),
        untrusted_output: tool.untrusted_output,
    })
}

/// `scale_replicas` → `Scale replicas`: the title of a tool that names none.
fn title_of(name: &str) -> String {
    let spaced = name.replace(['_', '-'], " ");
    let mut chars = spaced.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

fn check_params(at: &str, tool: &RawTool, schema: &Value, errors: &mut Errors) {
    let props = schema.get("properties").and_then(Value::as_object);
    let prop_type = |p: &str| props.and_then(|m| m.get(p)).map(|s| s.get("type").cloned().unwrap_or(Value::Null));
    if let Some(r) = &tool.resource {
        match prop_type(&r.param) {
            Some(Value::String(t)) if t == "string" => {}
            Some(_) => errors.push(format!("{at}.resource"), format!("parameter `{}` must be a string", r.param)),
            None => errors.push(format!("{at}.resource"), format!("no parameter `{}` in the schema", r.param)),
        }
        let required = schema.get("required").and_then(Value::as_array);
        if !required.is_some_and(|r2| r2.iter().any(|v| v == r.param.as_str())) {
            errors.push(format!("{at}.resource"), format!("parameter `{}` must be required", r.param));
        }
    }
    for (param, rule) in &tool.params {
        let pat = format!("{at}.params.{param}");
        let Some(ty) = prop_type(param) else {
            errors.push(&pat, "no such parameter in the schema");
            continue;
        };
        let numeric = matches!(ty.as_str(), Some("number" | "integer"));
        if rule.is_numeric() && !numeric {
            errors.push(&pat, "numeric rules need a `number` or `integer` parameter");
        }
        if rule.scan && ty.as_str() != Some("string") {
            errors.push(&pat, "`scan` applies to string parameters");
        }
        for (field, v) in [
            ("min", rule.min),
            ("max", rule.max),
            ("step", rule.step),
            ("requires_approval_above", rule.requires_approval_above),
        ] {
            if v.is_some_and(|v| !v.is_finite()) {
                errors.push(format!("{pat}.{field}"), "must be finite");
            }
        }
        if let (Some(min), Some(max)) = (rule.min, rule.max)
            && min > max
        {
            errors.push(&pat, format!("min {min} is above max {max}"));
        }
        if rule.step.is_some_and(|s| s <= 0.0) {
            errors.push(format!("{pat}.step"), "must be positive");
        }
        if let Some(d) = &rule.max_delta {
            if !(d.value.is_finite() && d.value >= 0.0) {
                errors.push(format!("{pat}.max_delta.value"), "must be a non-negative number");
            }
            if tool.mode != Mode::Change {
                errors.push(format!("{pat}.max_delta"), "applies to change tools only");
            }
        }
    }
}

fn check_cross_tool_rules(raw: &RawConfig, registry: &Registry, errors: &mut Errors) {
    for tool in registry.iter() {
        for (param, rule) in &tool.params {
            let Some(d) = &rule.max_delta else { continue };
            let at = format!("tools.{}.params.{param}.max_delta.read_tool", tool.name);
            match registry.get(&d.read_tool) {
                None if raw.tools.contains_key(&d.read_tool) => {} // its own errors are reported
                None => errors.push(at, format!("no tool `{}`", d.read_tool)),
                Some(r) if r.mode != Mode::Read => errors.push(at, format!("`{}` is not a read tool", d.read_tool)),
                Some(_) => {}
            }
        }
    }
}

fn load_policy(
    raw: &super::raw::RawPolicy,
    registry: &Registry,
    files: &dyn Files,
    errors: &mut Errors,
) -> Option<PolicyEngine> {
    let schema = files
        .read(&raw.schema)
        .map_err(|e| errors.push("policy.schema", format!("cannot read `{}`: {e}", raw.schema)))
        .ok();
    if raw.files.is_empty() {
        errors.push("policy.files", "list at least one policy file (default deny would refuse every call)");
    }
    let mut sources = Vec::new();
    for path in &raw.files {
        match files.read(path) {
            Ok(text) => sources.push(PolicySource { name: path.clone(), text }),
            Err(e) => errors.push("policy.files", format!("cannot read `{path}`: {e}")),
        }
    }
    let expectations = raw.expectations.as_ref().and_then(|path| {
        match files
            .read(path)
            .map_err(|e| e.to_string())
            .and_then(|t| parse_expectations(&t).map_err(|e| e.to_string()))
        {
            Ok(x) => Some(x),
            Err(e) => {
                errors.push("policy.expectations", format!("`{path}`: {e}"));
                None
            }
        }
    });
    let engine = match PolicyEngine::load(&schema?, &sources, registry, raw.version.as_deref()) {
        Ok(engine) => engine,
        Err(errs) => {
            for e in errs {
                errors.push("policy", e);
            }
            return None;
        }
    };
    for failure in engine.check_expectations(registry, expectations.as_deref().unwrap_or_default()) {
        errors.push("policy.expectations", failure);
    }
    Some(engine)
}
