//! Declarative workflows on the graph engine: a validated [`Workflow`] (from
//! `bridle-core/src/workflow.rs`) compiled into a [`Graph`] whose runs get the runtime's hooks,
//! checkpoints, budgets and event stream, and a deadline of `[runtime.deadlines]
//! workflow_base_ms` + `workflow_per_node_ms` × nodes per start or resume.
//!
//! ```text
//! tool / ai_analysis / approval  ── next ──▶ node | END
//! condition, loop                ── router (reads `_route`, written by the node) ──▶ then | else, body | next
//! parallel                       ──▶ every branch ── join ──▶ next   (branches write the parallel's output)
//! ```
//!
//! The deadline is read from the gate's clock before every node (`deadline_exceeded`), and the
//! same allowance bounds the run in real time through [`RunConfig::deadline`]. Tool calls carry
//! keys fixed by thread, step and task (`{thread}/{step}:{task}/call`, `…/execute` after an
//! approval), so a resumed run never repeats a side effect; nodes that finished before a pause
//! are not run again at all (the checkpoint holds their writes).

mod nodes;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bridle_core::guard::sanitize::Channel;
use bridle_core::ports::Clock;
use bridle_core::workflow::{Next, NodeKind, StateType, Workflow};
use bridle_core::{Code, Principal, Rejection};
use serde_json::Value;
use time::OffsetDateTime;

use crate::agent::{Agent, AgentSpec};
use crate::gate::Gate;
use crate::graph::{
    END, Graph, GraphBuilder, Kind, NodeOptions, Reducer, RunConfig, RunOutcome, RunStream, START, StateSchema, Target,
    node_fn,
};
use crate::guard::Guard;
use crate::llm::LlmClient;
use crate::runtime::Runtime;

/// A fresh run id for `workflow` in its principal's tenant: `{tenant}/{uuid v7}` (ids sort by
/// start time), the shape of the API's run ids.
pub fn new_run_id(workflow: &Workflow, config: &bridle_core::config::Config) -> String {
    let tenant = config.principals.get(&workflow.principal).map_or("", |p| p.tenant.as_str());
    format!("{tenant}/{}", uuid::Uuid::now_v7())
}

/// The state key where a run started over the API keeps the principal it acts for.
pub const REQUESTER: &str = "_requester";

/// Reads and validates a workflow file against `config`; a file that cannot be read or is
/// invalid is `workflow_invalid` with every problem listed.
pub fn load(path: &Path, config: &bridle_core::config::Config) -> Result<Workflow, Rejection> {
    let text = crate::bundled::read_text(path)
        .map_err(|e| Rejection::new(Code::WorkflowInvalid, format!("workflow `{}`: {e}", path.display())))?;
    Workflow::parse(&text, config).map_err(|e| e.rejection())
}

/// A workflow of the configuration's `[workflows] dir` by name (`NAME.toml`): names are
/// letters, digits, `-` and `_` only, so a name never leaves the directory.
pub fn load_named(name: &str, config: &bridle_core::config::Config) -> Result<Workflow, Rejection> {
    let Some(dir) = &config.workflows.dir else {
        return Err(Rejection::new(Code::NotFound, "no workflows are configured (`[workflows] dir`)"));
    };
    let safe =
        !name.is_empty() && name.len() <= 64 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let path = Path::new(dir).join(format!("{name}.toml"));
    if !safe || !path.is_file() {
        return Err(Rejection::new(Code::NotFound, format!("no workflow `{name}`")));
    }
    load(&path, config)
}

/// Which file of `[workflows] dir` a run's graph (`workflow/{name}@{digest}`, as checkpoints
/// name it) was compiled from: the one whose workflow has that name and digest. A file changed
/// since the run started matches none.
pub fn find_by_graph(graph: &str, config: &bridle_core::config::Config) -> Option<Workflow> {
    let rest = graph.strip_prefix("workflow/")?;
    let (name, tail) = rest.split_once('@')?;
    let digest = tail.split('@').next()?;
    let dir = config.workflows.dir.as_ref()?;
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .filter_map(|e| load(&e.path(), config).ok())
        .find(|w| w.name == name && w.digest.starts_with(digest))
}

/// What a compiled workflow runs with.
#[derive(Clone)]
pub struct WorkflowDeps {
    /// The gate every tool call goes through.
    pub gate: Gate,
    /// The model `ai_analysis` nodes ask.
    pub client: Arc<dyn LlmClient>,
    /// The clock the deadline is read from (the gate's by default).
    pub clock: Arc<dyn Clock>,
    /// Base and per-node allowance, and the model-call deadline.
    pub deadlines: bridle_core::deadline::Deadlines,
    /// Who the calls act for instead of the file's `principal` (the API runs a workflow for
    /// the caller who started it).
    pub principal: Option<Principal>,
}

impl WorkflowDeps {
    /// For run `run_id` of `tenant`: the runtime's gate, the run's model session (its token
    /// budget counted in the store for the run), the gate's clock and the configured deadlines.
    pub fn for_run(runtime: &Runtime, tenant: &str, run_id: &str) -> Self {
        Self {
            gate: runtime.engine.gate.clone(),
            client: runtime.session_llm(tenant, run_id),
            clock: runtime.engine.gate.clock().clone(),
            deadlines: runtime.config.runtime.deadlines,
            principal: None,
        }
    }
}

/// The input guard of `ai_analysis` nodes: the guard facade, refusals naming the node input.
pub(crate) struct InputGuard(Guard);

impl InputGuard {
    fn check(&self, at: &str, text: &str, channel: Channel) -> Result<(), Rejection> {
        self.0.check(channel, text).map(drop).map_err(|r| r.rejection(at, |at| format!("`{at}`")))
    }
}

/// What the nodes share.
pub(crate) struct Shared {
    workflow: Arc<Workflow>,
    gate: Gate,
    client: Arc<dyn LlmClient>,
    principal: Principal,
    clock: Arc<dyn Clock>,
    llm_timeout: Duration,
    guard: InputGuard,
    agents: HashMap<String, Agent>,
    /// When each thread's current start or resume must be done by.
    deadlines: Mutex<HashMap<String, OffsetDateTime>>,
}

impl Shared {
    fn deadline(&self, thread: &str) -> Option<OffsetDateTime> {
        self.deadlines.lock().unwrap_or_else(PoisonError::into_inner).get(thread).copied()
    }

    fn check_deadline(&self, thread: &str) -> Result<(), crate::graph::NodeError> {
        match self.deadline(thread) {
            Some(at) if self.clock.now() >= at => Err(crate::graph::NodeError::rejected(Rejection::new(
                Code::DeadlineExceeded,
                format!("workflow `{}` passed its deadline", self.workflow.name),
            ))),
            _ => Ok(()),
        }
    }

    /// Time left before the thread's deadline.
    fn remaining(&self, thread: &str) -> Option<Duration> {
        let left = self.deadline(thread)? - self.clock.now();
        Some(Duration::try_from(left).unwrap_or(Duration::ZERO))
    }
}

/// A workflow compiled onto the graph engine, ready to run any number of threads.
#[derive(Clone)]
pub struct CompiledWorkflow {
    graph: Graph,
    shared: Arc<Shared>,
    allowance: Duration,
}

impl std::fmt::Debug for CompiledWorkflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledWorkflow").field("workflow", &self.shared.workflow.name).finish_non_exhaustive()
    }
}

fn kind(t: StateType) -> Kind {
    match t {
        StateType::Any => Kind::Any,
        StateType::Bool => Kind::Bool,
        StateType::Integer => Kind::Integer,
        StateType::Number => Kind::Number,
        StateType::String => Kind::String,
        StateType::Array => Kind::Array,
        StateType::Object => Kind::Object,
    }
}

fn invalid(message: impl Into<String>) -> Rejection {
    Rejection::new(Code::WorkflowInvalid, message)
}

fn schema(workflow: &Workflow) -> StateSchema {
    let mut schema = StateSchema::new()
        .field(nodes::ROUTE, Kind::Object, Reducer::Merge)
        .field(nodes::LOOPS, Kind::Object, Reducer::Merge)
        .field(nodes::VISITS, Kind::Object, Reducer::Merge)
        .field(REQUESTER, Kind::Object, Reducer::Replace);
    let reduced: HashMap<&str, bridle_core::workflow::Reduce> = workflow
        .nodes
        .values()
        .filter_map(|n| match &n.kind {
            NodeKind::Parallel { output, reduce, .. } => Some((output.as_str(), *reduce)),
            _ => None,
        })
        .collect();
    for (key, ty) in &workflow.state {
        let reducer = match reduced.get(key.as_str()) {
            Some(bridle_core::workflow::Reduce::Merge) => Reducer::Merge,
            Some(bridle_core::workflow::Reduce::Append) => Reducer::Append,
            None => Reducer::Replace,
        };
        schema = schema.field(key, kind(*ty), reducer);
    }
    schema
}

fn to(next: &Next) -> &str {
    match next {
        Next::Node(n) => n,
        Next::End => END,
    }
}

/// The router of a condition or loop: the target its node wrote under `_route`.
fn router(name: String) -> impl Fn(&crate::graph::State) -> Vec<Target> + Send + Sync + 'static {
    move |s| {
        let chosen = s.get(nodes::ROUTE).and_then(|r| r.get(&name)).and_then(Value::as_str);
        match chosen {
            Some(t) if t != bridle_core::workflow::END => vec![Target::node(t)],
            _ => vec![Target::End],
        }
    }
}

impl CompiledWorkflow {
    /// Compiles `workflow` with `deps`: its principal from the gate's configuration, one agent per
    /// `ai_analysis` node, and the graph checked as a whole.
    pub fn new(workflow: Workflow, deps: WorkflowDeps) -> Result<Self, Rejection> {
        let config = deps.gate.config().clone();
        let principal =
            match deps.principal {
                Some(p) => p,
                None => config.principals.get(&workflow.principal).cloned().ok_or_else(|| {
                    invalid(format!("`{}` is not a principal of the configuration", workflow.principal))
                })?,
            };
        let mut agents = HashMap::new();
        for node in workflow.nodes.values() {
            if let NodeKind::AiAnalysis(ai) = &node.kind {
                let spec = AgentSpec::new(ai.agent.clone(), ai.prompt.clone(), ai.output_schema.clone());
                let agent = Agent::new(spec).map_err(|e| invalid(format!("nodes.{}: {e}", node.name)))?;
                agents.insert(node.name.clone(), agent);
            }
        }
        let guard = InputGuard(
            Guard::from_settings(&config.guard)
                .map_err(|e| invalid(format!("the input guard could not start: {e}")))?,
        );
        let allowance = deps.deadlines.workflow(workflow.node_count());
        let workflow = Arc::new(workflow);
        let shared = Arc::new(Shared {
            workflow: workflow.clone(),
            gate: deps.gate,
            client: deps.client,
            principal,
            clock: deps.clock,
            llm_timeout: deps.deadlines.llm_call,
            guard,
            agents,
            deadlines: Mutex::new(HashMap::new()),
        });
        let digest = workflow.digest.get(..16).unwrap_or(&workflow.digest);
        let name = format!("workflow/{}@{digest}", workflow.name);
        let engine_bound = u32::try_from(workflow.step_bound()).unwrap_or(u32::MAX);
        let mut b = GraphBuilder::new(&name, schema(&workflow))
            .recursion_limit(workflow.step_bound())
            .edge(START, &workflow.start);
        for node in workflow.nodes.values() {
            let (s, n) = (shared.clone(), Arc::new(node.clone()));
            let run = node_fn(move |state, ctx| nodes::run(s.clone(), n.clone(), state, ctx));
            // The loop's own counter is the bound that stops it (`max_iterations_exceeded`); the
            // engine's bound is a backstop covering loops nested in loops.
            let options = match node.kind {
                NodeKind::Loop(_) => NodeOptions::default().max_iterations(engine_bound),
                _ => NodeOptions::default(),
            };
            b = b.node_with(&node.name, run, options);
            match &node.kind {
                NodeKind::Condition { then, otherwise, .. } => {
                    b = b.route(&node.name, &[to(then), to(otherwise)], router(node.name.clone()));
                }
                NodeKind::Loop(l) => {
                    let after = node.next.clone().unwrap_or(Next::End);
                    b = b.route(&node.name, &[l.body.as_str(), to(&after)], router(node.name.clone()));
                }
                NodeKind::Parallel { branches, .. } => {
                    for branch in branches {
                        b = b.edge(&node.name, branch);
                    }
                    let sources: Vec<&str> = branches.iter().map(String::as_str).collect();
                    match node.next.as_ref().unwrap_or(&Next::End) {
                        Next::Node(n) => b = b.join(&sources, n),
                        Next::End => {
                            for branch in branches {
                                b = b.edge(branch, END);
                            }
                        }
                    }
                }
                _ if node.branch_of.is_some() => {}
                _ => b = b.edge(&node.name, to(node.next.as_ref().unwrap_or(&Next::End))),
            }
        }
        let graph = b.build().map_err(|e| invalid(e.to_string()))?;
        Ok(Self { graph, shared, allowance })
    }

    /// Compiles `workflow` for run `run_id` (see [`new_run_id`]) on a runtime's gate, model and
    /// deadlines, acting as the file's principal.
    pub fn for_runtime(workflow: Workflow, runtime: &Runtime, run_id: &str) -> Result<Self, Rejection> {
        let tenant = runtime.config.principals.get(&workflow.principal).map(|p| p.tenant.clone()).unwrap_or_default();
        Self::new(workflow, WorkflowDeps::for_run(runtime, &tenant, run_id))
    }

    /// The tenant its calls act in.
    pub fn tenant(&self) -> &str {
        &self.shared.principal.tenant
    }

    /// The workflow.
    pub fn workflow(&self) -> &Workflow {
        &self.shared.workflow
    }

    /// The graph it runs on.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Time allowed per start or resume: base + per node × nodes.
    pub fn allowance(&self) -> Duration {
        self.allowance
    }

    /// A runtime's run settings for a thread of this workflow: its checkpointer, durability and
    /// hooks, the workflow's allowance as the deadline, and a step limit covering every loop.
    pub fn run_config(&self, runtime: &Runtime, thread_id: &str) -> RunConfig {
        // Registered with its principal's credential agent: that agent's kill switch stops it.
        let own = runtime.config.agents.acting(&self.shared.principal, None).ok().flatten().map(|a| a.agent);
        let agents: Vec<&str> = own.as_deref().into_iter().collect();
        let mut config = runtime.run_config_for(thread_id, &agents).deadline(self.allowance);
        config.recursion_limit = Some(config.recursion_limit.unwrap_or(0).max(self.shared.workflow.step_bound()));
        config
    }

    /// Starts the thread's deadline clock (and forgets deadlines passed an hour ago).
    fn arm(&self, thread: &str) {
        let now = self.shared.clock.now();
        let at = now + self.allowance;
        let mut map = self.shared.deadlines.lock().unwrap_or_else(PoisonError::into_inner);
        map.retain(|_, d| *d + time::Duration::HOUR > now);
        map.insert(thread.to_owned(), at);
    }

    /// Starts a thread and streams its events.
    pub fn start(&self, config: RunConfig, input: Value) -> RunStream {
        self.arm(&config.thread_id);
        self.graph.stream(config, input)
    }

    /// Answers a pending interrupt of a thread and streams the rest.
    pub fn resume(&self, config: RunConfig, interrupt_id: &str, value: Value) -> RunStream {
        self.arm(&config.thread_id);
        self.graph.resume(config, interrupt_id, value)
    }

    /// Runs a thread to its end or pause.
    pub async fn invoke(&self, config: RunConfig, input: Value) -> Result<RunOutcome, Rejection> {
        self.arm(&config.thread_id);
        self.graph.invoke(config, input).await
    }

    /// Answers a pending interrupt and runs to the end or the next pause.
    pub async fn resume_invoke(
        &self,
        config: RunConfig,
        interrupt_id: &str,
        value: Value,
    ) -> Result<RunOutcome, Rejection> {
        self.arm(&config.thread_id);
        self.graph.resume_invoke(config, interrupt_id, value).await
    }
}
