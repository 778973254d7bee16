//! The runtime builder: assembles a running Bridle from a configuration in a fixed order —
//! stores, checkpointer, model client, hooks, automation, task graph, the gate with the guard's
//! argument scanner — each part replaceable for tests, and a `shutdown` that drains background
//! work.
//!
//! Precedence for every setting: the configuration file, then the environment
//! (`BRIDLE_STORE_URL`, `BRIDLE_LLM_URL`, `BRIDLE_LLM_API_KEY`, the audit heads'
//! `BRIDLE_AUDIT_*`), then what the caller sets on
//! the builder (flags). Nothing here holds a rule of its own: it only wires the parts.

use std::sync::{Arc, Mutex, PoisonError};

use bridle_core::config::{Config, LlmSettings};
use bridle_core::ports::{Adapter, Checkpointer, Clock, InProcessTools, StoreError, SystemClock};
use serde_json::Value;
use tokio::task::JoinSet;

use crate::checkpoint::open_checkpointer;
use crate::engine::Engine;
use crate::graph::hooks::HookHandler;
use crate::graph::observer::TaskGraph;
use crate::graph::{Event, Graph, Hooks, RunConfig, RunOutcome, RunStream};
use crate::llm::openai::{OpenAiClient, OpenAiConfig};
use crate::llm::{CommandModel, LimitedClient, Limits, LlmClient, ScriptedModel};
use crate::store::Stores;

/// The default store when neither the configuration nor the caller names one.
pub const DEFAULT_STORE_URL: &str = "sqlite://bridle-data/bridle.db";
/// Audit appends gathered into one commit at most.
const AUDIT_BATCH: usize = 64;

/// Why a runtime could not be assembled.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A store or the checkpointer could not be opened.
    #[error("{what}: {source}")]
    Store {
        /// Which part.
        what: &'static str,
        /// The store's error.
        source: StoreError,
    },
    /// The model client could not be built.
    #[error("model client: {0}")]
    Llm(String),
    /// The guard's rules could not be compiled.
    #[error("guard: {0}")]
    Guard(String),
    /// A configured adapter could not be set up (a credential missing, a bad client).
    #[error("adapter: {0}")]
    Adapter(#[from] crate::adapter::SetupError),
    /// The audit signing key is set but unusable (the message names no key material).
    #[error(transparent)]
    Heads(#[from] crate::audit::HeadError),
}

/// Environment overrides, read once (tests pass their own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// `BRIDLE_STORE_URL`.
    pub store_url: Option<String>,
    /// `BRIDLE_LLM_URL`: an OpenAI-compatible server, overriding `[llm]`.
    pub llm_url: Option<String>,
    /// `BRIDLE_LLM_API_KEY`.
    pub llm_api_key: Option<String>,
    /// `BRIDLE_LLM_MODEL` (with `BRIDLE_LLM_URL`; default `default`).
    pub llm_model: Option<String>,
    /// `BRIDLE_AUDIT_SIGNING_KEY`, `BRIDLE_AUDIT_SIGNING_KEY_FILE`, `BRIDLE_AUDIT_HEADS`.
    pub heads: crate::audit::HeadEnv,
}

impl Env {
    /// The process environment.
    pub fn from_process() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Self {
            store_url: var("BRIDLE_STORE_URL"),
            llm_url: var("BRIDLE_LLM_URL"),
            llm_api_key: var("BRIDLE_LLM_API_KEY"),
            llm_model: var("BRIDLE_LLM_MODEL"),
            heads: crate::audit::HeadEnv::from_process(),
        }
    }
}

type Registration = (Option<String>, i32, Arc<dyn HookHandler>);

/// Assembles a [`Runtime`].
pub struct RuntimeBuilder {
    config: Arc<Config>,
    env: Env,
    store_url: Option<String>,
    llm: Option<Arc<dyn LlmClient>>,
    adapter: Option<Arc<dyn Adapter>>,
    tools: Arc<dyn InProcessTools>,
    clock: Arc<dyn Clock>,
    hooks: Vec<Registration>,
    task_graph: bool,
    notifier: Option<Arc<dyn crate::notify::ApprovalNotifier>>,
}

impl RuntimeBuilder {
    /// A builder over `config` with the process environment.
    pub fn new(config: Arc<Config>) -> Self {
        Self {
            config,
            env: Env::from_process(),
            store_url: None,
            llm: None,
            adapter: None,
            tools: Arc::new(crate::adapter::NoTools),
            clock: Arc::new(SystemClock),
            hooks: Vec::new(),
            task_graph: true,
            notifier: None,
        }
    }

    /// Replaces the environment overrides.
    #[must_use]
    pub fn env(mut self, env: Env) -> Self {
        self.env = env;
        self
    }

    /// The store URL (a flag: wins over the file and the environment).
    #[must_use]
    pub fn store_url(mut self, url: &str) -> Self {
        self.store_url = Some(url.to_owned());
        self
    }

    /// Uses this model client instead of the configured one (its limits still apply).
    #[must_use]
    pub fn llm(mut self, client: Arc<dyn LlmClient>) -> Self {
        self.llm = Some(client);
        self
    }

    /// Uses this adapter instead of the configured ones (in process, HTTP, command).
    #[must_use]
    pub fn adapter(mut self, adapter: Arc<dyn Adapter>) -> Self {
        self.adapter = Some(adapter);
        self
    }

    /// The application's in-process read tools (the CLI passes the workbench's); the configured
    /// adapter runs those the configuration registers. None by default.
    #[must_use]
    pub fn tools(mut self, tools: Arc<dyn InProcessTools>) -> Self {
        self.tools = tools;
        self
    }

    /// Uses this clock.
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Adds a hook handler for `event` (or every event when `None`).
    #[must_use]
    pub fn hook(mut self, event: Option<&str>, priority: i32, handler: Arc<dyn HookHandler>) -> Self {
        self.hooks.push((event.map(str::to_owned), priority, handler));
        self
    }

    /// Tells `notifier` of every pending approval request (the `[webhooks]` notifier).
    #[must_use]
    pub fn notifier(mut self, notifier: Arc<dyn crate::notify::ApprovalNotifier>) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// Whether to keep a task-graph observer (default: yes).
    #[must_use]
    pub fn task_graph(mut self, on: bool) -> Self {
        self.task_graph = on;
        self
    }

    /// Builds the parts in order: stores → checkpointer → model client → hooks → automation →
    /// task graph → gate.
    pub async fn build(self) -> Result<Runtime, BuildError> {
        let settings = &self.config.runtime;
        // 1. stores
        let url = self
            .store_url
            .or(self.env.store_url.clone())
            .or(self.config.store_url.clone())
            .unwrap_or_else(|| DEFAULT_STORE_URL.to_owned());
        let heads = crate::audit::HeadPlan::resolve(&self.config.audit, &url, &self.env.heads)?;
        let stores = Stores::open(&url)
            .await
            .map_err(|source| BuildError::Store { what: "store", source })?
            .with_batched_audit(AUDIT_BATCH)
            .with_audit_settings(&self.config.audit)
            .with_heads(&heads)
            .await
            .map_err(|source| BuildError::Store { what: "audit heads", source })?;
        // `[audit] retention_days`: applied now and every hour while the runtime lives.
        let _retention = crate::audit::spawn_retention(stores.audit.clone(), &self.config.audit);
        // 2. checkpointer (beside the store unless configured elsewhere)
        let checkpoints_url = settings.checkpoints_url.clone().unwrap_or_else(|| url.clone());
        let checkpointer = open_checkpointer(&checkpoints_url, settings.strictness)
            .await
            .map_err(|source| BuildError::Store { what: "checkpointer", source })?;
        // 3. model client
        // The operator chat answers with the command model when no model is configured at all.
        let unconfigured = self.llm.is_none() && self.config.llm == LlmSettings::Scripted && self.env.llm_url.is_none();
        let base = match self.llm {
            Some(client) => client,
            None => model_client(&self.config.llm, &self.env)?,
        };
        let chat_llm: Arc<dyn LlmClient> = if unconfigured { Arc::new(CommandModel) } else { base.clone() };
        let limits = Limits {
            call_timeout: settings.deadlines.llm_call,
            tokens: settings.tokens.clone(),
            circuit: settings.circuit,
            rates: settings.rates,
        };
        // 4. hooks, 5. automation (none built in yet: drift triggers join here), 6. task graph
        let mut hooks = Hooks::new();
        for (event, priority, handler) in self.hooks {
            hooks = match event {
                Some(event) => hooks.on(&event, priority, handler),
                None => hooks.on_all(priority, handler),
            };
        }
        let task_graph = self.task_graph.then(|| Arc::new(TaskGraph::new()));
        if let Some(observer) = &task_graph {
            hooks = hooks.on_all(i32::MIN, observer.clone());
        }
        // 7. gate
        let adapter = match self.adapter {
            Some(adapter) => adapter,
            None => crate::adapter::from_config(&self.config, self.tools)?,
        };
        let mut engine = Engine::builder(self.config.clone(), stores.clone(), adapter).clock(self.clock.clone());
        if let Some(notifier) = self.notifier {
            engine = engine.notifier(notifier);
        }
        let engine = engine.build().map_err(|e| BuildError::Guard(e.to_string()))?;
        let live = crate::kill::LiveRuns::default();
        let kill_watch = live.watch(stores.clone(), KILL_WATCH);
        Ok(Runtime {
            live,
            kill_watch,
            config: self.config,
            stores,
            checkpointer,
            llm: base,
            chat_llm,
            limits,
            clock: self.clock,
            hooks: Arc::new(hooks),
            task_graph,
            engine,
            background: Mutex::new(JoinSet::new()),
        })
    }
}

/// The configured model: `BRIDLE_LLM_URL` wins over `[llm]`.
pub fn model_client(settings: &LlmSettings, env: &Env) -> Result<Arc<dyn LlmClient>, BuildError> {
    let openai = |base_url: &str, model: &str, key: Option<String>| -> Result<Arc<dyn LlmClient>, BuildError> {
        let mut config = OpenAiConfig::new(base_url, model);
        config.api_key = key;
        Ok(Arc::new(OpenAiClient::new(config).map_err(|e| BuildError::Llm(e.to_string()))?))
    };
    if let Some(url) = &env.llm_url {
        return openai(url, env.llm_model.as_deref().unwrap_or("default"), env.llm_api_key.clone());
    }
    match settings {
        LlmSettings::Scripted => {
            Ok(Arc::new(ScriptedModel::new("scripted", Vec::new()).map_err(|e| BuildError::Llm(e.to_string()))?))
        }
        LlmSettings::Script { path, text } => Ok(Arc::new(
            ScriptedModel::from_toml_str(text).map_err(|e| BuildError::Llm(format!("script `{path}`: {e}")))?,
        )),
        LlmSettings::OpenAi { base_url, model, api_key_env } => {
            let key = api_key_env.as_deref().and_then(|k| std::env::var(k).ok()).or(env.llm_api_key.clone());
            openai(base_url, model, key)
        }
    }
}

/// A running Bridle: stores, checkpoints, model, hooks, gate.
pub struct Runtime {
    /// The configuration.
    pub config: Arc<Config>,
    /// Every store port.
    pub stores: Stores,
    /// Where runs keep checkpoints.
    pub checkpointer: Arc<dyn Checkpointer>,
    llm: Arc<dyn LlmClient>,
    /// The operator chat's model: [`Self::llm`], or the command model when none is configured.
    chat_llm: Arc<dyn LlmClient>,
    limits: Limits,
    clock: Arc<dyn Clock>,
    /// Lifecycle handlers every run gets.
    pub hooks: Arc<Hooks>,
    /// The progress DAG of runs, when kept.
    pub task_graph: Option<Arc<TaskGraph>>,
    /// The gate and the services beside it (approval desk, reconciler, kill switches).
    pub engine: Engine,
    background: Mutex<JoinSet<()>>,
    /// Runs this process drives (the kill switch asks those in scope to stop).
    pub live: crate::kill::LiveRuns,
    kill_watch: tokio::task::JoinHandle<()>,
}

/// How often the runtime looks for kill switches covering the runs it drives (set by another
/// replica or by `bridle kill`); the gate itself reads the store on every call.
pub const KILL_WATCH: std::time::Duration = std::time::Duration::from_secs(1);

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("store", &self.stores.url).finish_non_exhaustive()
    }
}

impl Runtime {
    /// A model client for run `run_id` of `tenant`: the configured model under the configured
    /// limits, its token budget counted in the store for the run (shared by every replica and
    /// every resume of the run).
    pub fn session_llm(&self, tenant: &str, run_id: &str) -> Arc<dyn LlmClient> {
        let ledger = crate::llm::limits::TokenLedger {
            budgets: self.stores.budgets.clone(),
            tenant: tenant.to_owned(),
            run_id: run_id.to_owned(),
        };
        Arc::new(LimitedClient::for_run(self.llm.clone(), self.limits.clone(), self.clock.clone(), ledger))
    }

    /// The operator chat over this runtime (`POST /v1/chat`, `bridle chat`): its gate, and for
    /// each conversation the configured model (the command model when none is) under the
    /// configured limits with the token budget of the conversation's run ([`Self::session_llm`]); the turn deadline is
    /// `[runtime.deadlines] chat_turn_ms`. Fails only when the guard's patterns do not compile.
    pub fn chat_desk(&self) -> Result<crate::chat::desk::ChatDesk, bridle_core::guard::GuardError> {
        let settings = crate::chat::ChatSettings::from_config(&self.config);
        let chat = crate::chat::Chat::new(self.engine.gate.clone(), self.chat_llm.clone(), settings)?;
        let (llm, limits, clock, budgets) =
            (self.chat_llm.clone(), self.limits.clone(), self.clock.clone(), self.stores.budgets.clone());
        let model_for: crate::chat::desk::ModelFor = Arc::new(move |tenant: &str, run_id: &str| {
            let ledger = crate::llm::limits::TokenLedger {
                budgets: budgets.clone(),
                tenant: tenant.to_owned(),
                run_id: run_id.to_owned(),
            };
            Arc::new(LimitedClient::for_run(llm.clone(), limits.clone(), clock.clone(), ledger)) as Arc<dyn LlmClient>
        });
        Ok(crate::chat::desk::ChatDesk::new(chat, model_for))
    }

    /// Settings for a pipeline run: the checkpointer, durability, retention, recursion limit,
    /// the pipeline deadline and the hooks.
    pub fn run_config(&self, thread_id: &str) -> RunConfig {
        self.run_config_for(thread_id, &[])
    }

    /// [`Self::run_config`] for a run whose calls are made on behalf of `agents`: a kill switch
    /// of its tenant, or of one of those agents, asks it to stop.
    pub fn run_config_for(&self, thread_id: &str, agents: &[&str]) -> RunConfig {
        let settings = &self.config.runtime;
        let mut config = RunConfig::new(thread_id)
            .cancel(self.live.register(thread_id, agents))
            .checkpointer(self.checkpointer.clone())
            .durability(settings.durability)
            .deadline(settings.deadlines.pipeline)
            .hooks(self.hooks.clone());
        config.keep = settings.keep_checkpoints;
        config.recursion_limit = Some(settings.recursion_limit);
        config
    }

    /// Starts a run in the background; `shutdown` waits for it. Events go to `on_event`.
    pub fn spawn_run(
        &self,
        graph: &Graph,
        config: RunConfig,
        input: Value,
        on_event: impl Fn(&Event) + Send + 'static,
    ) {
        self.spawn_stream(graph.stream(config, input), on_event);
    }

    /// Drains an already started run (a [`Graph::stream`] or [`Graph::resume`]) in the
    /// background; `shutdown` and `drain` wait for it. Events go to `on_event`.
    pub fn spawn_stream(&self, mut stream: RunStream, on_event: impl Fn(&Event) + Send + 'static) {
        // A poisoned lock only means another thread panicked while holding it; the set itself is
        // intact, and losing track of a run would let `shutdown` return before it ends.
        self.background.lock().unwrap_or_else(PoisonError::into_inner).spawn(async move {
            while let Some(event) = stream.next().await {
                on_event(&event);
            }
        });
    }

    /// Runs `task` in the background beside the runs, so [`Runtime::drain`] waits for it too
    /// (a run kept with its history, `runs.rs`).
    pub fn spawn_background(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        self.background.lock().unwrap_or_else(PoisonError::into_inner).spawn(task);
    }

    /// Waits for the background runs started so far (for a runtime shared behind an `Arc`,
    /// which cannot be `shutdown`).
    pub async fn drain(&self) {
        let mut set = std::mem::take(&mut *self.background.lock().unwrap_or_else(PoisonError::into_inner));
        while set.join_next().await.is_some() {}
    }

    /// Runs a graph to its end or pause with this runtime's settings.
    pub async fn invoke(
        &self,
        graph: &Graph,
        thread_id: &str,
        input: Value,
    ) -> Result<RunOutcome, bridle_core::Rejection> {
        graph.invoke(self.run_config(thread_id), input).await
    }

    /// Sets a kill switch as `who`: stored (every replica's gate sees it at its next call),
    /// audited, the runs of this process in scope asked to stop, the unfinished work listed.
    pub async fn kill(
        &self,
        who: &str,
        scope: bridle_core::kill::KillScope,
        reason: &str,
    ) -> Result<crate::kill::KillReport, bridle_core::ports::StoreError> {
        self.engine.kills.set(Some(&self.checkpointer), Some(&self.live), who, scope, reason).await
    }

    /// Lifts the kill switch of exactly `scope` as `who`, audited.
    pub async fn lift_kill(
        &self,
        who: &str,
        scope: bridle_core::kill::KillScope,
        reason: &str,
    ) -> Result<crate::kill::KillReport, bridle_core::ports::StoreError> {
        self.engine.kills.lift(who, scope, reason).await
    }

    /// Waits for background runs to finish, writes the last signed audit heads, then closes the
    /// stores.
    pub async fn shutdown(self) {
        self.kill_watch.abort();
        let mut set = self.background.into_inner().unwrap_or_else(PoisonError::into_inner);
        while set.join_next().await.is_some() {}
        // A failure is logged by `close`; the shutdown goes on.
        let _ = self.stores.anchoring.close().await;
        drop(self.engine);
        drop(self.stores);
    }
}
