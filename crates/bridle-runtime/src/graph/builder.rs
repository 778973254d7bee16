//! Building a graph: nodes, static and conditional edges, fan-out, joins and pauses, checked
//! as a whole when built so a bad graph fails before it runs.
//!
//! `build` lists every problem at once: duplicate or reserved node names, edges from or to
//! unknown nodes, a graph without an entry, a node without a way out, nodes unreachable from
//! the entry, and cycles none of whose nodes has an iteration bound.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::node::{Node, NodeOptions};
use super::state::{State, StateSchema};

/// The virtual node a run starts from.
pub const START: &str = "__start__";
/// The virtual node a branch ends in.
pub const END: &str = "__end__";

/// Where a conditional edge sends the run next.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Run a node on the shared state.
    Node(String),
    /// Run a node on its own input (a fan-out branch: it sees only `input`, an object).
    Send(String, Value),
    /// End this branch.
    End,
}

impl Target {
    /// Run `node` on the shared state.
    pub fn node(node: &str) -> Self {
        Self::Node(node.to_owned())
    }

    /// Run `node` on its own input.
    pub fn send(node: &str, input: Value) -> Self {
        Self::Send(node.to_owned(), input)
    }
}

/// A conditional edge's choice, made on the state after the step.
pub type Router = Arc<dyn Fn(&State) -> Vec<Target> + Send + Sync>;
/// The payload of a pause before a node, made from the state.
pub type PausePayload = Arc<dyn Fn(&State) -> Value + Send + Sync>;

/// The problems found when building a graph, all of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("graph `{graph}` is invalid:\n  - {}", problems.join("\n  - "))]
pub struct GraphError {
    /// Graph name.
    pub graph: String,
    /// One line per problem.
    pub problems: Vec<String>,
}

pub(crate) struct NodeEntry {
    pub name: Arc<str>,
    pub node: Arc<dyn Node>,
    pub options: NodeOptions,
    /// Static successors (`None` = END).
    pub next: Vec<Option<usize>>,
    /// Conditional edge: the router and the nodes it may choose.
    pub router: Option<(Router, HashSet<String>)>,
    /// Joins this node is a source of.
    pub joins: Vec<usize>,
    /// Pause before running, with the payload to show.
    pub pause_before: Option<PausePayload>,
}

pub(crate) struct Join {
    pub sources: Vec<usize>,
    pub target: usize,
}

/// A built graph, ready to run any number of times concurrently.
pub(crate) struct Compiled {
    pub name: String,
    /// `name@hash`: written into checkpoints so a resume with another graph is refused.
    pub id: String,
    pub schema: StateSchema,
    pub nodes: Vec<NodeEntry>,
    pub index: HashMap<String, usize>,
    pub start: Vec<Option<usize>>,
    pub start_router: Option<(Router, HashSet<String>)>,
    pub joins: Vec<Join>,
    pub recursion_limit: u64,
    /// Whether any node has an iteration bound (else the per-step check is skipped).
    pub bounded: bool,
}

/// Assembles a graph.
pub struct GraphBuilder {
    name: String,
    schema: StateSchema,
    nodes: Vec<(String, Arc<dyn Node>, NodeOptions)>,
    edges: Vec<(String, String)>,
    routers: Vec<(String, Vec<String>, Router)>,
    joins: Vec<(Vec<String>, String)>,
    pauses: Vec<(String, Option<PausePayload>)>,
    recursion_limit: u64,
}

/// Super-steps a run may take unless configured otherwise.
pub const DEFAULT_RECURSION_LIMIT: u64 = 250;

impl GraphBuilder {
    /// A graph named `name` over the state `schema`.
    pub fn new(name: &str, schema: StateSchema) -> Self {
        Self {
            name: name.to_owned(),
            schema,
            nodes: Vec::new(),
            edges: Vec::new(),
            routers: Vec::new(),
            joins: Vec::new(),
            pauses: Vec::new(),
            recursion_limit: DEFAULT_RECURSION_LIMIT,
        }
    }

    /// Adds a node with default options.
    #[must_use]
    pub fn node(self, name: &str, node: Arc<dyn Node>) -> Self {
        self.node_with(name, node, NodeOptions::default())
    }

    /// Adds a node with options.
    #[must_use]
    pub fn node_with(mut self, name: &str, node: Arc<dyn Node>, options: NodeOptions) -> Self {
        self.nodes.push((name.to_owned(), node, options));
        self
    }

    /// An edge: after `from` (or [`START`]) runs, `to` (or [`END`]) runs in the next step.
    #[must_use]
    pub fn edge(mut self, from: &str, to: &str) -> Self {
        self.edges.push((from.to_owned(), to.to_owned()));
        self
    }

    /// A conditional edge: after `from` runs, `router` chooses among `targets` (node names or
    /// [`END`]) on the updated state; it may send several, and fan out with [`Target::Send`].
    #[must_use]
    pub fn route(
        mut self,
        from: &str,
        targets: &[&str],
        router: impl Fn(&State) -> Vec<Target> + Send + Sync + 'static,
    ) -> Self {
        self.routers.push((from.to_owned(), targets.iter().map(|t| (*t).to_owned()).collect(), Arc::new(router)));
        self
    }

    /// A join: `to` runs once after every one of `sources` has run (in any steps).
    #[must_use]
    pub fn join(mut self, sources: &[&str], to: &str) -> Self {
        self.joins.push((sources.iter().map(|s| (*s).to_owned()).collect(), to.to_owned()));
        self
    }

    /// Pauses the run before `node` until a human resumes it; the payload is `{"node": …}`.
    #[must_use]
    pub fn interrupt_before(mut self, node: &str) -> Self {
        self.pauses.push((node.to_owned(), None));
        self
    }

    /// Pauses before `node` with a payload made from the state.
    #[must_use]
    pub fn interrupt_before_with(
        mut self,
        node: &str,
        payload: impl Fn(&State) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.pauses.push((node.to_owned(), Some(Arc::new(payload))));
        self
    }

    /// Super-steps one run may take (`recursion_limit` past it).
    #[must_use]
    pub fn recursion_limit(mut self, steps: u64) -> Self {
        self.recursion_limit = steps;
        self
    }

    /// Checks the whole graph and compiles it.
    pub fn build(self) -> Result<super::Graph, GraphError> {
        let mut problems = Vec::new();
        let mut index = HashMap::new();
        for (i, (name, _, _)) in self.nodes.iter().enumerate() {
            if name == START || name == END || name.is_empty() {
                problems.push(format!("`{name}` is not a usable node name"));
            } else if index.insert(name.clone(), i).is_some() {
                problems.push(format!("node `{name}` is defined twice"));
            }
        }
        let resolve_to = |to: &str, what: &str, problems: &mut Vec<String>| -> Option<Option<usize>> {
            if to == END {
                return Some(None);
            }
            let found = index.get(to).copied();
            if found.is_none() {
                problems.push(format!("{what} leads to `{to}`, which is not a node"));
            }
            found.map(Some)
        };
        let mut entries: Vec<NodeEntry> = self
            .nodes
            .into_iter()
            .map(|(name, node, options)| NodeEntry {
                name: name.into(),
                node,
                options,
                next: Vec::new(),
                router: None,
                joins: Vec::new(),
                pause_before: None,
            })
            .collect();
        let mut start = Vec::new();
        let mut start_router = None;
        let mut describe = format!("graph {}\nstate {}\n", self.name, self.schema.describe());
        for (from, to) in &self.edges {
            describe.push_str(&format!("edge {from}>{to}\n"));
            let Some(to_index) = resolve_to(to, &format!("the edge from `{from}`"), &mut problems) else { continue };
            if from == START {
                start.push(to_index);
            } else if let Some(entry) = index.get(from).and_then(|i| entries.get_mut(*i)) {
                entry.next.push(to_index);
            } else {
                problems.push(format!("an edge starts at `{from}`, which is not a node"));
            }
        }
        for (from, targets, router) in self.routers {
            describe.push_str(&format!("route {from}>{}\n", targets.join(",")));
            for t in &targets {
                resolve_to(t, &format!("the conditional edge from `{from}`"), &mut problems);
            }
            let declared: HashSet<String> = targets.into_iter().collect();
            let slot = if from == START {
                Some(&mut start_router)
            } else {
                index.get(&from).and_then(|i| entries.get_mut(*i)).map(|e| &mut e.router)
            };
            match slot {
                Some(slot) if slot.is_none() => *slot = Some((router, declared)),
                Some(_) => problems.push(format!("`{from}` has two conditional edges; make one router choose")),
                None => problems.push(format!("a conditional edge starts at `{from}`, which is not a node")),
            }
        }
        let mut joins = Vec::new();
        for (sources, to) in &self.joins {
            describe.push_str(&format!("join {}>{to}\n", sources.join(",")));
            let target = index.get(to).copied();
            if target.is_none() {
                problems.push(format!("the join of {} leads to `{to}`, which is not a node", sources.join(", ")));
            }
            let mut source_ids = Vec::new();
            for s in sources {
                match index.get(s) {
                    Some(i) => source_ids.push(*i),
                    None => problems.push(format!("the join into `{to}` waits for `{s}`, which is not a node")),
                }
            }
            if let Some(target) = target {
                for s in &source_ids {
                    if let Some(e) = entries.get_mut(*s) {
                        e.joins.push(joins.len());
                    }
                }
                joins.push(Join { sources: source_ids, target });
            }
        }
        for (node, payload) in self.pauses {
            describe.push_str(&format!("pause {node}\n"));
            match index.get(&node).and_then(|i| entries.get_mut(*i)) {
                Some(e) => e.pause_before = Some(payload.unwrap_or_else(|| default_pause(&node))),
                None => problems.push(format!("interrupt_before names `{node}`, which is not a node")),
            }
        }
        for e in &entries {
            if let Some(bound) = e.options.max_iterations {
                describe.push_str(&format!("bound {}={bound}\n", e.name));
            }
        }
        if start.is_empty() && start_router.is_none() {
            problems.push(format!("nothing starts the graph; add an edge from `{START}`"));
        }
        if self.recursion_limit == 0 {
            problems.push("the recursion limit must be at least 1".to_owned());
        }
        if problems.is_empty() {
            check_shape(&entries, &joins, &index, &start, start_router.as_ref(), &mut problems);
        }
        if !problems.is_empty() {
            return Err(GraphError { graph: self.name, problems });
        }
        let hash = hex::encode(Sha256::digest(describe.as_bytes()));
        let id = format!("{}@{}", self.name, hash.get(..16).unwrap_or(&hash));
        let bounded = entries.iter().any(|e| e.options.max_iterations.is_some());
        Ok(super::Graph(Arc::new(Compiled {
            name: self.name,
            id,
            schema: self.schema,
            nodes: entries,
            index,
            start,
            start_router,
            joins,
            recursion_limit: self.recursion_limit,
            bounded,
        })))
    }
}

fn default_pause(node: &str) -> PausePayload {
    let payload = serde_json::json!({ "node": node });
    Arc::new(move |_| payload.clone())
}

/// Successors of every node (static edges, declared router targets, joins), `None` = END.
fn successors(entries: &[NodeEntry], joins: &[Join], index: &HashMap<String, usize>) -> Vec<Vec<usize>> {
    entries
        .iter()
        .map(|e| {
            let mut next: Vec<usize> = e.next.iter().flatten().copied().collect();
            if let Some((_, targets)) = &e.router {
                next.extend(targets.iter().filter_map(|t| index.get(t)));
            }
            next.extend(e.joins.iter().filter_map(|j| joins.get(*j)).map(|j| j.target));
            next
        })
        .collect()
}

/// Ways out, reachability and guarded cycles.
fn check_shape(
    entries: &[NodeEntry],
    joins: &[Join],
    index: &HashMap<String, usize>,
    start: &[Option<usize>],
    start_router: Option<&(Router, HashSet<String>)>,
    problems: &mut Vec<String>,
) {
    let next = successors(entries, joins, index);
    for e in entries {
        if e.next.is_empty() && e.router.is_none() && e.joins.is_empty() {
            problems.push(format!("node `{}` has no way out; add an edge to `{END}`", e.name));
        }
    }
    let mut seen = vec![false; entries.len()];
    let mut stack: Vec<usize> = start.iter().flatten().copied().collect();
    if let Some((_, targets)) = start_router {
        stack.extend(targets.iter().filter_map(|t| index.get(t)));
    }
    while let Some(n) = stack.pop() {
        if let Some(s) = seen.get_mut(n).filter(|s| !**s) {
            *s = true;
            stack.extend(next.get(n).into_iter().flatten());
        }
    }
    for (e, reached) in entries.iter().zip(&seen) {
        if !reached {
            problems.push(format!("node `{}` cannot be reached from `{START}`", e.name));
        }
    }
    for cycle in cycles(&next) {
        if !cycle.iter().any(|n| entries.get(*n).is_some_and(|e| e.options.max_iterations.is_some())) {
            let names: Vec<&str> = cycle.iter().filter_map(|n| entries.get(*n)).map(|e| &*e.name).collect();
            problems.push(format!(
                "the cycle through {} has no iteration bound; set max_iterations on one of its nodes",
                names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
}

/// Strongly connected components that contain a cycle (Tarjan, iterative).
fn cycles(next: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = next.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut counter = 0;
    let mut found = Vec::new();
    for root in 0..n {
        if index.get(root).is_some_and(|i| *i != usize::MAX) {
            continue;
        }
        // (node, position in its successor list)
        let mut work = vec![(root, 0usize)];
        while let Some(&(v, pos)) = work.last() {
            if pos == 0 && index.get(v) == Some(&usize::MAX) {
                set(&mut index, v, counter);
                set(&mut low, v, counter);
                counter += 1;
                stack.push(v);
                set(&mut on_stack, v, true);
            }
            let succ = next.get(v).map_or(&[][..], Vec::as_slice);
            if let Some(&w) = succ.get(pos) {
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if index.get(w) == Some(&usize::MAX) {
                    work.push((w, 0));
                } else if on_stack.get(w) == Some(&true) {
                    let m = low.get(v).copied().unwrap_or(0).min(index.get(w).copied().unwrap_or(0));
                    set(&mut low, v, m);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                let m = low.get(parent).copied().unwrap_or(0).min(low.get(v).copied().unwrap_or(0));
                set(&mut low, parent, m);
            }
            if low.get(v) == index.get(v) {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    set(&mut on_stack, w, false);
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                let self_loop = component.len() == 1 && succ.contains(&v);
                if component.len() > 1 || self_loop {
                    component.reverse();
                    found.push(component);
                }
            }
        }
    }
    found
}

fn set<T>(slots: &mut [T], i: usize, value: T) {
    if let Some(slot) = slots.get_mut(i) {
        *slot = value;
    }
}
