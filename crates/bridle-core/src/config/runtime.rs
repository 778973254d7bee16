//! `[runtime]` and `[llm]`: how graph runs checkpoint, how long they may take, what model
//! calls may spend, and which model answers.
//!
//! ```toml
//! [runtime]
//! durability = "sync"        # sync | async | exit
//! strictness = "normal"      # normal | strict (fsync every checkpoint)
//! keep_checkpoints = 3       # per thread; older ones are deleted
//! recursion_limit = 250      # super-steps per run
//! checkpoints_url = "…"      # default: the store's URL
//! [runtime.deadlines]        # llm_call_ms, pipeline_ms, workflow_base_ms, workflow_per_node_ms, chat_turn_ms
//! [runtime.tokens]           # per_agent_default, per_session, [runtime.tokens.per_agent]
//! [runtime.cost.rates]       # prompt_per_1k, completion_per_1k
//! [runtime.cost.circuit]     # threshold, window_ms, cool_down_ms
//!
//! [llm]
//! provider = "scripted"      # scripted (default) | openai
//! script = "script.toml"     # scripted: replies, relative to the config
//! base_url = "http://127.0.0.1:8000/v1"   # openai-compatible server (vLLM, Ollama, llama.cpp, OpenAI)
//! model = "…"
//! api_key_env = "BRIDLE_LLM_API_KEY"      # the key is read from the environment, never written here
//! ```

use serde::Deserialize;

use super::Files;
use super::validate::Errors;
use crate::budget::{CircuitConfig, CostRates, TokenLimits};
use crate::checkpoint::{Durability, Strictness};
use crate::deadline::Deadlines;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRuntime {
    durability: Option<Durability>,
    strictness: Option<Strictness>,
    keep_checkpoints: Option<u32>,
    recursion_limit: Option<u64>,
    checkpoints_url: Option<String>,
    #[serde(default)]
    deadlines: Deadlines,
    #[serde(default)]
    tokens: TokenLimits,
    cost: Option<RawCost>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCost {
    #[serde(default)]
    rates: CostRates,
    circuit: Option<CircuitConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLlm {
    #[serde(default = "scripted")]
    provider: String,
    script: Option<String>,
    base_url: Option<String>,
    model: Option<String>,
    api_key_env: Option<String>,
}

fn scripted() -> String {
    "scripted".to_owned()
}

/// Validated `[runtime]`.
#[derive(Debug, Clone, PartialEq)]
pub struct RuntimeSettings {
    /// When runs write checkpoints.
    pub durability: Durability,
    /// How hard each checkpoint is made durable.
    pub strictness: Strictness,
    /// Checkpoints kept per thread.
    pub keep_checkpoints: u32,
    /// Super-steps one run may take.
    pub recursion_limit: u64,
    /// Where checkpoints go (`None`: the store's URL).
    pub checkpoints_url: Option<String>,
    /// Time limits.
    pub deadlines: Deadlines,
    /// Token limits of model calls.
    pub tokens: TokenLimits,
    /// Token prices (for the cost circuit).
    pub rates: CostRates,
    /// The cost circuit, when configured.
    pub circuit: Option<CircuitConfig>,
}

impl Default for RuntimeSettings {
    fn default() -> Self {
        Self {
            durability: Durability::Sync,
            strictness: Strictness::Normal,
            keep_checkpoints: 3,
            recursion_limit: 250,
            checkpoints_url: None,
            deadlines: Deadlines::default(),
            tokens: TokenLimits::default(),
            rates: CostRates::default(),
            circuit: None,
        }
    }
}

/// Validated `[llm]`: which model answers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum LlmSettings {
    /// The scripted model without replies: every call fails with `llm_unavailable` naming the
    /// agent and turn (the default when nothing is configured).
    #[default]
    Scripted,
    /// The scripted model with a script read from the configuration's directory.
    Script {
        /// Path as written.
        path: String,
        /// The script's text.
        text: String,
    },
    /// An OpenAI-compatible chat-completions server.
    OpenAi {
        /// Base URL (server root or ending in `/v1`).
        base_url: String,
        /// Model name.
        model: String,
        /// Environment variable holding the API key.
        api_key_env: Option<String>,
    },
}

/// Largest `recursion_limit` accepted.
const MAX_RECURSION: u64 = 100_000;

pub(super) fn runtime_settings(raw: &RawRuntime, errors: &mut Errors) -> RuntimeSettings {
    let defaults = RuntimeSettings::default();
    let keep = raw.keep_checkpoints.unwrap_or(defaults.keep_checkpoints);
    if !(1..=1000).contains(&keep) {
        errors.push("runtime.keep_checkpoints", "must be between 1 and 1000");
    }
    let recursion_limit = raw.recursion_limit.unwrap_or(defaults.recursion_limit);
    if !(1..=MAX_RECURSION).contains(&recursion_limit) {
        errors.push("runtime.recursion_limit", format!("must be between 1 and {MAX_RECURSION}"));
    }
    let d = &raw.deadlines;
    for (name, value) in [
        ("llm_call_ms", d.llm_call),
        ("pipeline_ms", d.pipeline),
        ("workflow_base_ms", d.workflow_base),
        ("chat_turn_ms", d.chat_turn),
    ] {
        if value.is_zero() {
            errors.push(format!("runtime.deadlines.{name}"), "must be more than 0");
        }
    }
    let (rates, circuit) = match &raw.cost {
        Some(cost) => (cost.rates, cost.circuit),
        None => (CostRates::default(), None),
    };
    if !(rates.prompt_per_1k >= 0.0 && rates.completion_per_1k >= 0.0) {
        errors.push("runtime.cost.rates", "prices must be 0 or more");
    }
    if let Some(c) = &circuit {
        if !(c.threshold > 0.0 && c.threshold.is_finite()) {
            errors.push("runtime.cost.circuit.threshold", "must be a positive number");
        }
        if c.window.is_zero() || c.cool_down.is_zero() {
            errors.push("runtime.cost.circuit", "`window_ms` and `cool_down_ms` must be more than 0");
        }
    }
    RuntimeSettings {
        durability: raw.durability.unwrap_or(defaults.durability),
        strictness: raw.strictness.unwrap_or(defaults.strictness),
        keep_checkpoints: keep,
        recursion_limit,
        checkpoints_url: raw.checkpoints_url.clone(),
        deadlines: raw.deadlines,
        tokens: raw.tokens.clone(),
        rates,
        circuit,
    }
}

pub(super) fn llm_settings(raw: Option<&RawLlm>, files: &dyn Files, errors: &mut Errors) -> LlmSettings {
    let Some(raw) = raw else { return LlmSettings::Scripted };
    match raw.provider.as_str() {
        "scripted" => {
            for (field, set) in [("base_url", raw.base_url.is_some()), ("model", raw.model.is_some())] {
                if set {
                    errors.push(format!("llm.{field}"), "only an `openai` provider takes it");
                }
            }
            match &raw.script {
                None => LlmSettings::Scripted,
                Some(path) => match files.read(path) {
                    Ok(text) => LlmSettings::Script { path: path.clone(), text },
                    Err(e) => {
                        errors.push("llm.script", format!("cannot read `{path}`: {e}"));
                        LlmSettings::Scripted
                    }
                },
            }
        }
        "openai" => {
            if raw.script.is_some() {
                errors.push("llm.script", "only the `scripted` provider takes a script");
            }
            let base_url = raw.base_url.clone().unwrap_or_default();
            if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                errors.push("llm.base_url", "an `openai` provider needs an http(s) base URL");
            }
            let model = raw.model.clone().unwrap_or_default();
            if model.trim().is_empty() {
                errors.push("llm.model", "an `openai` provider needs a model name");
            }
            LlmSettings::OpenAi { base_url, model, api_key_env: raw.api_key_env.clone() }
        }
        other => {
            errors.push("llm.provider", format!("unknown provider `{other}` (use `scripted` or `openai`)"));
            LlmSettings::Scripted
        }
    }
}

/// A model configuration file of its own (`bridle replay --model FILE`): an `[llm]` section
/// like `bridle.toml`'s, with `script` relative to the file's directory through `files`.
pub fn llm_from_toml(text: &str, files: &dyn Files) -> Result<LlmSettings, super::ConfigErrors> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ModelFile {
        llm: RawLlm,
    }
    let parsed: ModelFile = toml::from_str(text).map_err(|e| {
        super::ConfigErrors(vec![super::ConfigError { at: "llm".to_owned(), message: e.message().to_owned() }])
    })?;
    let mut errors = Errors::default();
    let settings = llm_settings(Some(&parsed.llm), files, &mut errors);
    errors.into_result(settings)
}
