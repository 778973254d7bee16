//! The second phase of reading a workflow file: raw tables → a [`Workflow`], collecting every
//! problem with its path (unknown kinds and fields, references to nothing, unreachable nodes,
//! cycles without a bounded loop, loops without a bound or past 100, over-long parameters,
//! CEL that does not compile or reads unknown state).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::raw::{KINDS, RawHeader, RawNode, SECTIONS};
use super::{
    AiNode, END, Expr, LoopNode, MAX_LOOP_BOUND, Next, Node, NodeKind, OnRefused, Problem, Reduce, StateType, ToolNode,
    Workflow, WorkflowError,
};
use crate::config::Config;

#[derive(Default)]
struct Problems(Vec<Problem>);

impl Problems {
    fn push(&mut self, at: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem { at: at.into(), message: message.into() });
    }
}

/// What toml/serde said, without the location noise of a value-level error.
fn serde_message(e: &toml::de::Error) -> String {
    e.message().trim().replace('\n', " ")
}

pub(super) fn parse(text: &str, config: &Config) -> Result<Workflow, WorkflowError> {
    let mut p = Problems::default();
    if text.len() > crate::config::MAX_TEXT_BYTES {
        let most = crate::config::MAX_TEXT_BYTES;
        p.push("(file)", format!("{} bytes, more than the {most} a workflow file may have", text.len()));
        return Err(WorkflowError { problems: p.0 });
    }
    let table: toml::Table = match toml::from_str(text) {
        Ok(t) => t,
        Err(e) => {
            p.push("(file)", format!("not valid TOML: {}", serde_message(&e)));
            return Err(WorkflowError { problems: p.0 });
        }
    };
    // INVARIANT: every string, list and table is within its bound before nodes are built.
    for e in crate::config::bound_problems(&table) {
        p.push(e.at, e.message);
    }
    if !p.0.is_empty() {
        return Err(WorkflowError { problems: p.0 });
    }
    for key in table.keys() {
        if !SECTIONS.contains(&key.as_str()) {
            p.push(key.clone(), format!("unknown section; expected one of {}", SECTIONS.join(", ")));
        }
    }
    let header = match table.get("workflow") {
        None => {
            p.push("workflow", "missing: a workflow needs `name`, `principal` and `start`");
            None
        }
        Some(v) => match v.clone().try_into::<RawHeader>() {
            Ok(h) => Some(h),
            Err(e) => {
                p.push("workflow", serde_message(&e));
                None
            }
        },
    };
    let state = state_keys(table.get("state"), &mut p);
    let keys: BTreeSet<String> = state.keys().cloned().collect();
    let raw_nodes = raw_nodes(table.get("nodes"), &mut p);
    let known: BTreeSet<String> = match table.get("nodes").and_then(toml::Value::as_table) {
        Some(t) => t.keys().cloned().collect(),
        None => BTreeSet::new(),
    };
    let ctx = Ctx { config, keys: &keys, state: &state, known: &known, raw: &raw_nodes };
    let mut nodes = BTreeMap::new();
    for (name, raw) in &raw_nodes {
        if let Some(node) = ctx.node(name, raw, &mut p) {
            nodes.insert(name.clone(), node);
        }
    }
    if let Some(h) = &header {
        if h.name.is_empty() || !h.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            p.push("workflow.name", "must be letters, digits, `-` and `_`");
        }
        if !config.principals.contains_key(&h.principal) {
            p.push("workflow.principal", format!("`{}` is not a principal of the configuration", h.principal));
        }
        if h.start == END || !known.contains(&h.start) {
            p.push("workflow.start", format!("`{}` is not a node", h.start));
        }
    }
    mark_branches(&mut nodes, &raw_nodes, &mut p);
    if let Some(h) = &header
        && nodes.get(&h.start).is_some_and(|n| n.branch_of.is_some())
    {
        p.push("workflow.start", "a parallel branch is reached only through its parallel node");
    }
    let shape = shape(table.get("nodes"));
    if let Some(h) = &header {
        reachability(&h.start, &shape, &mut p);
    }
    cycles(&shape, &mut p);
    match header {
        Some(h) if p.0.is_empty() => Ok(Workflow {
            name: h.name,
            description: h.description,
            principal: h.principal,
            start: h.start,
            state,
            nodes,
            digest: hex::encode(Sha256::digest(text.as_bytes())),
        }),
        _ => Err(WorkflowError { problems: p.0 }),
    }
}

fn state_keys(section: Option<&toml::Value>, p: &mut Problems) -> BTreeMap<String, StateType> {
    let mut out = BTreeMap::new();
    let Some(section) = section else { return out };
    let Some(table) = section.as_table() else {
        p.push("state", "must be a table of `key = \"type\"`");
        return out;
    };
    for (key, ty) in table {
        let at = format!("state.{key}");
        if key.starts_with('_') || key.is_empty() {
            p.push(at.clone(), "keys starting with `_` are reserved");
        }
        match ty.as_str().and_then(StateType::parse) {
            Some(t) => {
                out.insert(key.clone(), t);
            }
            None => p.push(at, "type must be one of any, bool, integer, number, string, array, object"),
        }
    }
    out
}

fn raw_nodes(section: Option<&toml::Value>, p: &mut Problems) -> BTreeMap<String, RawNode> {
    let mut out = BTreeMap::new();
    let Some(section) = section else {
        p.push("nodes", "missing: a workflow needs at least one node");
        return out;
    };
    let Some(table) = section.as_table() else {
        p.push("nodes", "must be a table of `[nodes.NAME]` tables");
        return out;
    };
    for (name, value) in table {
        let at = format!("nodes.{name}");
        if name == END || name.starts_with("__") || name.is_empty() {
            p.push(at.clone(), format!("`{name}` is reserved and cannot name a node"));
        }
        let kind = value.get("kind").and_then(toml::Value::as_str);
        if let Some(kind) = kind
            && !KINDS.contains(&kind)
        {
            p.push(format!("{at}.kind"), format!("unknown node kind `{kind}`; expected one of {}", KINDS.join(", ")));
            continue;
        }
        match value.clone().try_into::<RawNode>() {
            Ok(node) => {
                out.insert(name.clone(), node);
            }
            Err(e) => p.push(at, serde_message(&e)),
        }
    }
    out
}

struct Ctx<'a> {
    config: &'a Config,
    keys: &'a BTreeSet<String>,
    state: &'a BTreeMap<String, StateType>,
    known: &'a BTreeSet<String>,
    raw: &'a BTreeMap<String, RawNode>,
}

impl Ctx<'_> {
    fn next(&self, at: &str, target: Option<&str>, p: &mut Problems) -> Option<Next> {
        match target {
            None | Some(END) => Some(Next::End),
            Some(t) if self.known.contains(t) => Some(Next::Node(t.to_owned())),
            Some(t) => {
                p.push(at, format!("leads to `{t}`, which is not a node (use `{END}` to finish)"));
                None
            }
        }
    }

    fn expr(&self, at: &str, source: &str, p: &mut Problems) -> Option<Expr> {
        match Expr::compile(source, self.keys) {
            Ok(e) => Some(e),
            Err(list) => {
                for m in list {
                    p.push(at, m);
                }
                None
            }
        }
    }

    fn output(&self, at: &str, key: Option<&String>, p: &mut Problems) -> Option<String> {
        let key = key?;
        if !self.keys.contains(key) {
            p.push(at, format!("`{key}` is not a state key; declare it under [state]"));
        }
        Some(key.clone())
    }

    fn node(&self, name: &str, raw: &RawNode, p: &mut Problems) -> Option<Node> {
        let at = format!("nodes.{name}");
        let before = p.0.len();
        let (kind, next) = match raw {
            RawNode::Tool { tool, arguments, bind, output, on_refused, next } => {
                if self.config.registry.get(tool).is_none() {
                    p.push(format!("{at}.tool"), format!("unknown tool `{tool}`"));
                }
                let mut bound = BTreeMap::new();
                for (param, source) in bind {
                    if arguments.contains_key(param) {
                        p.push(format!("{at}.bind.{param}"), "also given in `arguments`; give it once");
                    }
                    if let Some(e) = self.expr(&format!("{at}.bind.{param}"), source, p) {
                        bound.insert(param.clone(), e);
                    }
                }
                let on_refused = match on_refused.as_deref() {
                    None | Some("fail") => OnRefused::Fail,
                    Some("continue") => OnRefused::Continue,
                    Some(other) => {
                        p.push(format!("{at}.on_refused"), format!("`{other}`: expected `fail` or `continue`"));
                        OnRefused::Fail
                    }
                };
                let output = self.output(&format!("{at}.output"), output.as_ref(), p);
                let kind = NodeKind::Tool(ToolNode {
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                    bind: bound,
                    output,
                    on_refused,
                });
                (kind, self.next(&format!("{at}.next"), next.as_deref(), p))
            }
            RawNode::AiAnalysis { agent, prompt, inputs, parameters, output_schema, output, next } => {
                if prompt.trim().is_empty() {
                    p.push(format!("{at}.prompt"), "must not be empty");
                }
                for key in inputs {
                    if !self.keys.contains(key) {
                        p.push(format!("{at}.inputs"), format!("`{key}` is not a state key"));
                    }
                }
                let limit = self.config.guard.limits.workflow_chars;
                for (param, value) in parameters {
                    let text = match value {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let chars = text.chars().count();
                    if chars > limit {
                        p.push(
                            format!("{at}.parameters.{param}"),
                            format!("{chars} characters; a parameter may have at most {limit} (the guard's workflow channel)"),
                        );
                    }
                }
                if !output_schema.is_object() {
                    p.push(format!("{at}.output_schema"), "must be a table (a JSON Schema object)");
                } else if let Err(e) =
                    jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(output_schema)
                {
                    p.push(format!("{at}.output_schema"), format!("not a valid JSON Schema: {e}"));
                }
                let output = self.output(&format!("{at}.output"), output.as_ref(), p);
                let kind = NodeKind::AiAnalysis(AiNode {
                    agent: agent.clone().unwrap_or_else(|| name.to_owned()),
                    prompt: prompt.clone(),
                    inputs: inputs.clone(),
                    parameters: parameters.clone(),
                    output_schema: output_schema.clone(),
                    output,
                });
                (kind, self.next(&format!("{at}.next"), next.as_deref(), p))
            }
            RawNode::Condition { expr, then, otherwise } => {
                let expr = self.expr(&format!("{at}.expr"), expr, p);
                let then = self.next(&format!("{at}.then"), Some(then), p);
                let otherwise = self.next(&format!("{at}.else"), Some(otherwise), p);
                match (expr, then, otherwise) {
                    (Some(expr), Some(then), Some(otherwise)) => (NodeKind::Condition { expr, then, otherwise }, None),
                    _ => return None,
                }
            }
            RawNode::Loop { condition, body, max_iterations, next } => {
                let expr = self.expr(&format!("{at}.while"), condition, p);
                if body == END || !self.known.contains(body) {
                    p.push(format!("{at}.body"), format!("`{body}` is not a node"));
                }
                let bound = match max_iterations {
                    None => {
                        p.push(
                            format!("{at}.max_iterations"),
                            format!("a loop needs a bound: `max_iterations` between 1 and {MAX_LOOP_BOUND}"),
                        );
                        0
                    }
                    Some(n) => match u32::try_from(*n) {
                        Ok(b) if (1..=MAX_LOOP_BOUND).contains(&b) => b,
                        _ => {
                            p.push(
                                format!("{at}.max_iterations"),
                                format!("{n} is outside 1–{MAX_LOOP_BOUND}; loops are bounded at {MAX_LOOP_BOUND}"),
                            );
                            0
                        }
                    },
                };
                let next = self.next(&format!("{at}.next"), next.as_deref(), p);
                let expr = expr?;
                (NodeKind::Loop(LoopNode { condition: expr, body: body.clone(), max_iterations: bound }), next)
            }
            RawNode::Parallel { branches, reduce, output, next } => {
                if branches.is_empty() {
                    p.push(format!("{at}.branches"), "needs at least one branch");
                }
                let reduce = match reduce.as_deref() {
                    None | Some("merge") => Reduce::Merge,
                    Some("append") => Reduce::Append,
                    Some(other) => {
                        p.push(format!("{at}.reduce"), format!("`{other}`: expected `merge` or `append`"));
                        Reduce::Merge
                    }
                };
                let out = self.output(&format!("{at}.output"), Some(output), p);
                let fits = match (reduce, self.state.get(output)) {
                    (_, None | Some(StateType::Any)) => true,
                    (Reduce::Merge, Some(t)) => *t == StateType::Object,
                    (Reduce::Append, Some(t)) => *t == StateType::Array,
                };
                if !fits {
                    p.push(format!("{at}.output"), "a `merge` output must be an object, an `append` output an array");
                }
                for b in branches {
                    self.branch(&at, b, p);
                }
                let kind = NodeKind::Parallel { branches: branches.clone(), reduce, output: out.unwrap_or_default() };
                (kind, self.next(&format!("{at}.next"), next.as_deref(), p))
            }
            RawNode::Approval { message, payload, output, next } => {
                if message.trim().is_empty() {
                    p.push(format!("{at}.message"), "must not be empty");
                }
                let mut fields = BTreeMap::new();
                for (field, source) in payload {
                    if let Some(e) = self.expr(&format!("{at}.payload.{field}"), source, p) {
                        fields.insert(field.clone(), e);
                    }
                }
                let output = self.output(&format!("{at}.output"), output.as_ref(), p);
                let kind = NodeKind::Approval { message: message.clone(), payload: fields, output };
                (kind, self.next(&format!("{at}.next"), next.as_deref(), p))
            }
        };
        if p.0.len() > before {
            return None;
        }
        Some(Node { name: name.to_owned(), kind, next, branch_of: None })
    }

    /// A parallel branch: a tool or ai_analysis node that leads nowhere of its own and writes
    /// nothing of its own (its result goes to the parallel node's output).
    fn branch(&self, at: &str, name: &str, p: &mut Problems) {
        let here = format!("{at}.branches");
        match self.raw.get(name) {
            None if !self.known.contains(name) => p.push(here, format!("`{name}` is not a node")),
            None => {}
            Some(RawNode::Tool { next, output, .. } | RawNode::AiAnalysis { next, output, .. })
                if next.is_some() || output.is_some() =>
            {
                p.push(
                    format!("nodes.{name}"),
                    "a parallel branch has no `next` or `output` of its own (its result goes to the parallel node's output)",
                );
            }
            Some(RawNode::Tool { .. } | RawNode::AiAnalysis { .. }) => {}
            Some(_) => p.push(here, format!("`{name}`: a branch must be a `tool` or `ai_analysis` node")),
        }
    }
}

/// Edges of a node: (target, is-branch).
fn edges(node: &Node) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    if let Some(Next::Node(n)) = &node.next {
        out.push((n.clone(), false));
    }
    match &node.kind {
        NodeKind::Condition { then, otherwise, .. } => {
            for t in [then, otherwise] {
                if let Next::Node(n) = t {
                    out.push((n.clone(), false));
                }
            }
        }
        NodeKind::Loop(l) => out.push((l.body.clone(), false)),
        NodeKind::Parallel { branches, .. } => out.extend(branches.iter().map(|b| (b.clone(), true))),
        _ => {}
    }
    out
}

/// Records each branch's parallel node and refuses a branch reached any other way.
fn mark_branches(nodes: &mut BTreeMap<String, Node>, raw: &BTreeMap<String, RawNode>, p: &mut Problems) {
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut other: BTreeSet<String> = BTreeSet::new();
    for node in nodes.values() {
        for (target, branch) in edges(node) {
            if branch {
                if let Some(first) = owner.insert(target.clone(), node.name.clone()) {
                    p.push(
                        format!("nodes.{}.branches", node.name),
                        format!("`{target}` is already a branch of `{first}`"),
                    );
                }
            } else {
                other.insert(target);
            }
        }
    }
    for (branch, parallel) in owner {
        if other.contains(&branch) {
            p.push(format!("nodes.{branch}"), "a parallel branch is reached only through its parallel node");
        }
        if raw.contains_key(&branch)
            && let Some(n) = nodes.get_mut(&branch)
        {
            n.branch_of = Some(parallel);
            n.next = None;
        }
    }
}

/// Each node's edges (target, is-branch) and whether it is a loop, read from the tables as
/// written, so a node refused for another reason still counts for reachability and cycles.
type Shape = BTreeMap<String, (bool, Vec<String>)>;

fn shape(section: Option<&toml::Value>) -> Shape {
    let mut out = Shape::new();
    let Some(table) = section.and_then(toml::Value::as_table) else { return out };
    for (name, v) in table {
        let is_loop = v.get("kind").and_then(toml::Value::as_str) == Some("loop");
        let mut targets: Vec<String> = ["next", "then", "else", "body"]
            .iter()
            .filter_map(|k| v.get(k).and_then(toml::Value::as_str))
            .filter(|t| *t != END)
            .map(str::to_owned)
            .collect();
        if let Some(list) = v.get("branches").and_then(toml::Value::as_array) {
            targets.extend(list.iter().filter_map(toml::Value::as_str).map(str::to_owned));
        }
        out.insert(name.clone(), (is_loop, targets));
    }
    out
}

fn reachability(start: &str, shape: &Shape, p: &mut Problems) {
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([start.to_owned()]);
    while let Some(name) = queue.pop_front() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some((_, targets)) = shape.get(&name) {
            queue.extend(targets.iter().cloned());
        }
    }
    for name in shape.keys() {
        if !seen.contains(name) {
            p.push(format!("nodes.{name}"), format!("unreachable from the start node `{start}`"));
        }
    }
}

/// Every cycle must pass through a `loop` node (the only nodes with a bound).
fn cycles(shape: &Shape, p: &mut Problems) {
    let is_loop = |n: &str| shape.get(n).is_some_and(|(l, _)| *l);
    let mut state: BTreeMap<&str, u8> = BTreeMap::new(); // 1 = on the path, 2 = done
    let mut reported: BTreeSet<Vec<String>> = BTreeSet::new();
    for root in shape.keys() {
        if is_loop(root) || state.contains_key(root.as_str()) {
            continue;
        }
        // Iterative DFS over non-loop nodes: (node, next edge index), with the current path.
        let mut stack: Vec<(&str, usize)> = vec![(root.as_str(), 0)];
        state.insert(root.as_str(), 1);
        while let Some((name, i)) = stack.last().copied() {
            let Some(target) = shape.get(name).and_then(|(_, t)| t.get(i)) else {
                state.insert(name, 2);
                stack.pop();
                continue;
            };
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            let Some((key, _)) = shape.get_key_value(target.as_str()) else { continue };
            if is_loop(key) {
                continue;
            }
            match state.get(key.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|(n, _)| *n == key.as_str()).unwrap_or(0);
                    let mut path: Vec<String> = stack.iter().skip(from).map(|(n, _)| (*n).to_owned()).collect();
                    let mut sorted = path.clone();
                    sorted.sort();
                    if reported.insert(sorted) {
                        path.push(key.clone());
                        p.push(
                            format!("nodes.{key}"),
                            format!(
                                "cycle {} without a `loop` node; every cycle needs a bounded loop",
                                path.join(" → ")
                            ),
                        );
                    }
                }
                Some(_) => {}
                None => {
                    state.insert(key.as_str(), 1);
                    stack.push((key.as_str(), 0));
                }
            }
        }
    }
}
