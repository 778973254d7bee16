//! Workflow files: the shipped examples load, and a bad file is refused with every problem
//! listed at once, each with its path.

use bridle_core::Code;
use bridle_core::workflow::{NodeKind, Workflow};

use super::support::checkout;

fn examples(name: &str) -> String {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/workflows").join(name);
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_checkout_example_loads_against_the_bundled_config() {
    let w = Workflow::parse(&examples("checkout_incident.toml"), &checkout()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.name, "checkout-incident");
    assert_eq!(w.node_count(), 4);
    assert!(matches!(w.nodes["need_more"].kind, NodeKind::Condition { .. }));
}

/// One file with many problems: every one is reported, with its path.
const BAD: &str = r#"
[workflow]
name = "bad"
principal = "requester-1"
start = "snap"

[state]
snapshot = "object"
counter = "integer"

[nodes.snap]
kind = "tool"
tool = "get_service_snapshot"
arguments = { service = "checkout" }
output = "snapshot"
next = "nowhere"            # edge to nowhere

[nodes.orphan]             # unreachable
kind = "approval"
message = "never asked"

[nodes.spin]
kind = "loop"               # no bound, reached from nowhere
while = "counter < 3"
body = "snap"

[nodes.big_loop]
kind = "loop"
while = "true"
body = "snap"
max_iterations = 101       # past 100

[nodes.ask]
kind = "ai_analysis"
prompt = "analyse"
output_schema = { type = "object" }
parameters = { note = "PARAM" }   # over 500 characters
colour = "blue"            # unknown field

[nodes.mystery]
kind = "webhook"           # unknown kind

[nodes.check]
kind = "condition"
expr = "snapshot.replicas >"   # does not compile
then = "end"
else = "end"

[nodes.check2]
kind = "condition"
expr = "missing_key > 2"       # unknown state key
then = "end"
else = "end"

[nodes.a]
kind = "tool"
tool = "no_such_tool"          # unknown tool
next = "b"

[nodes.b]
kind = "tool"
tool = "get_service_snapshot"
next = "a"                      # cycle without a loop
"#;

#[test]
fn a_bad_file_is_refused_with_every_problem_and_its_path() {
    let text = BAD.replace("PARAM", &"x".repeat(501));
    let err = Workflow::parse(&text, &checkout()).unwrap_err();
    let has = |at: &str, words: &str| err.problems.iter().any(|p| p.at == at && p.message.contains(words));
    let expected = [
        ("nodes.snap.next", "`nowhere`, which is not a node"),
        ("nodes.orphan", "unreachable"),
        ("nodes.spin.max_iterations", "needs a bound"),
        ("nodes.big_loop.max_iterations", "outside 1–100"),
        ("nodes.ask", "unknown field `colour`"),
        ("nodes.mystery.kind", "unknown node kind `webhook`"),
        ("nodes.check.expr", "does not compile"),
        ("nodes.check2.expr", "`missing_key`, which is not a state key"),
        ("nodes.a.tool", "unknown tool `no_such_tool`"),
    ];
    for (at, words) in expected {
        assert!(has(at, words), "missing {at}: {words} in\n{err}");
    }
    assert!(err.problems.iter().any(|p| p.message.contains("without a `loop` node")), "{err}");
    assert!(err.problems.len() > expected.len(), "{err}");
    assert_eq!(err.rejection().code, Code::WorkflowInvalid);
    // The over-long parameter is named even though the same node has an unknown field: fix one,
    // and the next run names the other.
    let fixed = text.replace("colour = \"blue\"            # unknown field\n", "");
    let err = Workflow::parse(&fixed, &checkout()).unwrap_err();
    assert!(
        err.problems.iter().any(|p| p.at == "nodes.ask.parameters.note" && p.message.contains("501 characters")),
        "{err}"
    );
}

#[test]
fn every_cycle_needs_a_bounded_loop_and_parallel_branches_stand_alone() {
    let text = r#"
[workflow]
name = "p"
principal = "requester-1"
start = "fan"

[state]
out = "array"
snap = "object"

[nodes.fan]
kind = "parallel"
branches = ["one", "two"]
reduce = "append"
output = "out"
next = "again"

[nodes.one]
kind = "tool"
tool = "get_service_snapshot"
arguments = { service = "checkout" }
output = "snap"                 # a branch writes through its parallel node only

[nodes.two]
kind = "tool"
tool = "get_service_snapshot"
arguments = { service = "checkout" }

[nodes.again]
kind = "loop"
while = "size(out) < 4"
body = "fan"
max_iterations = 3
"#;
    let err = Workflow::parse(text, &checkout()).unwrap_err();
    assert_eq!(err.problems.len(), 1, "{err}");
    assert_eq!(err.problems[0].at, "nodes.one");
    let ok = text.replace("output = \"snap\"                 # a branch writes through its parallel node only\n", "");
    let w = Workflow::parse(&ok, &checkout()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(w.nodes["one"].branch_of.as_deref(), Some("fan"));
}
