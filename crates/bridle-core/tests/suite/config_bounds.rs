//! Config that cannot hang or crash start-up: policy, schema and CEL nesting bounded before a
//! recursive parser sees it, and every string and list of the configuration bounded at load.

use std::time::{Duration, Instant};

use bridle_core::config::{ConfigErrors, load};
use bridle_core::nesting::MAX_DEPTH;
use bridle_core::workflow::Workflow;

use super::support::{checkout, read_example};

/// Loads the checkout example with `path`'s text replaced by `text`, on a thread with a small
/// (1 MiB) stack, so a parser that recursed on the input would overflow here too.
fn load_replacing(path: &'static str, text: String) -> Result<(), ConfigErrors> {
    let handle = std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(move || {
            let toml = read_example("bridle.toml").unwrap();
            let files = |p: &str| if p == path { Ok(text.clone()) } else { read_example(p) };
            load(&toml, &files).map(|_| ())
        })
        .unwrap();
    handle.join().unwrap()
}

fn deep_policy(depth: usize) -> String {
    format!(
        "permit (principal, action, resource)\nwhen {{\n  {}resource.tenant == principal.tenant{}\n}};\n",
        "(".repeat(depth),
        ")".repeat(depth)
    )
}

#[test]
fn a_1000_deep_cedar_policy_is_a_load_error_naming_the_file_and_line() {
    let errors = load_replacing("policies/tenancy.cedar", deep_policy(1000)).unwrap_err().to_string();
    assert!(errors.contains("policies/tenancy.cedar: nesting deeper than"), "{errors}");
    assert!(errors.contains("line 3"), "{errors}");
}

#[test]
fn a_policy_at_the_nesting_limit_still_loads_on_a_small_stack() {
    // The example's policies plus a forbid as deep as allowed: `when { … }` is one level, the
    // parentheses the rest. It loads (and its policy tests pass) on a 1 MiB stack.
    let deep_forbid = |depth: usize| {
        format!(
            "{}\nforbid (principal, action, resource)\nwhen {{ {}resource.tenant != principal.tenant{} }};\n",
            read_example("policies/tenancy.cedar").unwrap(),
            "(".repeat(depth),
            ")".repeat(depth)
        )
    };
    load_replacing("policies/tenancy.cedar", deep_forbid(MAX_DEPTH - 1)).unwrap_or_else(|e| panic!("{e}"));
    let errors = load_replacing("policies/tenancy.cedar", deep_forbid(MAX_DEPTH)).unwrap_err().to_string();
    assert!(errors.contains("nesting deeper than"), "{errors}");
}

#[test]
fn a_long_if_chain_in_a_policy_is_a_load_error_not_a_stack_overflow() {
    let chain = format!(
        "permit (principal, action, resource)\nwhen {{ {} true }};\n",
        "if resource.tenant == principal.tenant then true else ".repeat(5_000)
    );
    let errors = load_replacing("policies/tenancy.cedar", chain).unwrap_err().to_string();
    assert!(errors.contains("nesting deeper than"), "{errors}");
}

#[test]
fn a_deep_cedar_schema_is_a_load_error_not_a_stack_overflow() {
    let schema = read_example("policies/bridle.cedarschema").unwrap();
    let deep = format!("{schema}\nnamespace Deep {{ type T = {}Long{}; }}\n", "Set<".repeat(1000), ">".repeat(1000));
    let errors = load_replacing("policies/bridle.cedarschema", deep).unwrap_err().to_string();
    assert!(errors.contains("cedar schema: nesting deeper than"), "{errors}");
    let records = format!("{schema}\nnamespace Deep {{ type T = {}{}; }}\n", "{ a: ".repeat(1000), "}".repeat(1000));
    let errors = load_replacing("policies/bridle.cedarschema", records).unwrap_err().to_string();
    assert!(errors.contains("cedar schema: nesting deeper than"), "{errors}");
}

#[test]
fn long_operator_chains_are_bounded_by_the_policy_size_and_load_on_a_small_stack() {
    // Chains of binary operators nest in Cedar's syntax tree without brackets (10,000 `+` overflow
    // a 1 MiB stack when the policy is dropped); one policy has at most 16 KiB.
    let chain = |n: usize| format!("permit (principal, action, resource)\nwhen {{ 1{} == 2 }};\n", " + 1".repeat(n));
    let errors = load_replacing("policies/tenancy.cedar", chain(10_000)).unwrap_err().to_string();
    assert!(errors.contains("policies/tenancy.cedar: one policy is longer than 16384 bytes"), "{errors}");
    let within = load_replacing("policies/tenancy.cedar", chain(4_000)).unwrap_err().to_string();
    assert!(!within.contains("longer than"), "{within}");
}

#[test]
fn a_100kb_sensitive_term_is_refused_quickly() {
    let term = "x".repeat(100 * 1024);
    let toml =
        format!("{}\n[guard]\nsensitive_terms = [\"orders_db\", \"{term}\"]\n", read_example("bridle.toml").unwrap());
    let started = Instant::now();
    let errors = load(&toml, &read_example).unwrap_err().to_string();
    let took = started.elapsed();
    assert!(errors.contains("guard.sensitive_terms[1]: at most 256 characters (found 102400)"), "{errors}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn more_than_10000_sensitive_terms_are_refused() {
    let terms: Vec<String> = (0..10_001).map(|i| format!("\"term_{i}\"")).collect();
    let toml = format!("{}\n[guard]\nsensitive_terms = [{}]\n", read_example("bridle.toml").unwrap(), terms.join(","));
    let errors = load(&toml, &read_example).unwrap_err().to_string();
    assert!(errors.contains("guard.sensitive_terms: at most 10000 terms (found 10001)"), "{errors}");
}

#[test]
fn every_long_string_and_list_is_named_with_its_field_and_all_are_listed() {
    let base = read_example("bridle.toml").unwrap();
    let toml = base.replace(
        "[tools.scale_replicas]\n",
        &format!(
            "[tools.scale_replicas]\nupstream_tool = \"{}\"\n",
            "u".repeat(bridle_core::config::MAX_STRING_BYTES + 1)
        ),
    ) + &format!(
        "\n[principals.{}]\ntenant = \"t\"\n[principals.many]\ntenant = \"t\"\nscopes = [{}]\n",
        "p".repeat(200),
        vec!["\"s\""; 10_001].join(",")
    );
    let errors = load(&toml, &read_example).unwrap_err();
    let at: Vec<&str> = errors.0.iter().map(|e| e.at.as_str()).collect();
    assert!(at.contains(&"tools.scale_replicas.upstream_tool"), "{at:?}");
    assert!(at.contains(&"principals.many.scopes"), "{at:?}");
    assert!(at.iter().any(|a| a.starts_with("principals.ppp")), "{at:?}");
}

#[test]
fn a_configuration_text_past_its_size_bound_is_refused() {
    let toml = format!("{}\n# {}\n", read_example("bridle.toml").unwrap(), "x".repeat(2 * 1024 * 1024));
    let errors = load(&toml, &read_example).unwrap_err().to_string();
    let said = format!("bridle.toml: {} bytes, more than the 1048576 allowed", toml.len());
    assert!(errors.contains(&said), "{errors}");
}

fn workflow_with_expr(expr: &str) -> String {
    let text = std::fs::read_to_string(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/workflows/checkout_incident.toml"),
    )
    .unwrap();
    text.replace("expr = \"analysis.replicas > snapshot.result.replicas\"", &format!("expr = \"{expr}\""))
}

/// Parses a workflow on a thread with a small stack.
fn parse_small_stack(text: String) -> Result<(), String> {
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(move || Workflow::parse(&text, &checkout()).map(|_| ()).map_err(|e| e.to_string()))
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn a_1000_deep_cel_expression_is_a_workflow_problem_not_a_stack_overflow() {
    let deep = format!("{}analysis.replicas > 1{}", "(".repeat(1000), ")".repeat(1000));
    let errors = parse_small_stack(workflow_with_expr(&deep)).unwrap_err();
    assert!(errors.contains("nodes.need_more.expr") && errors.contains("nesting deeper than"), "{errors}");
    let ternary = format!("{}true", "analysis.replicas > 1 ? true : ".repeat(1000));
    let errors = parse_small_stack(workflow_with_expr(&ternary)).unwrap_err();
    assert!(errors.contains("CEL expression"), "{errors}");
}

#[test]
fn cel_expressions_within_their_bounds_compile_on_a_small_stack() {
    let nested = format!("{}analysis.replicas > 1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    parse_small_stack(workflow_with_expr(&nested)).unwrap_or_else(|e| panic!("{e}"));
    // The longest chain of operators an expression's size bound admits.
    let mut chain = String::from("analysis.replicas > 0");
    while chain.len() + 24 < bridle_core::workflow::MAX_EXPR_BYTES {
        chain.push_str(" && analysis.replicas > 0");
    }
    let _ = parse_small_stack(workflow_with_expr(&chain));
    let sums = format!("analysis.replicas{} > 0", " + 1".repeat(bridle_core::workflow::MAX_EXPR_BYTES / 4 - 10));
    let _ = parse_small_stack(workflow_with_expr(&sums));
}

#[test]
fn a_cel_expression_past_its_size_bound_is_a_workflow_problem() {
    let long = format!("analysis.replicas > {}", "1".repeat(bridle_core::workflow::MAX_EXPR_BYTES));
    let errors = parse_small_stack(workflow_with_expr(&long)).unwrap_err();
    assert!(errors.contains("at most 4096 bytes"), "{errors}");
}

#[test]
fn model_thresholds_are_read_per_channel_and_bounded() {
    use bridle_core::guard::combine::Thresholds;
    let example = read_example("bridle.toml").unwrap();
    let bad = format!("{example}\n[guard.model]\nchat = 0.8\ndocument = 1.5\nworkflow = 0\n");
    let errors = load(&bad, &read_example).unwrap_err().to_string();
    assert!(errors.contains("guard.model.document: must be a number between 0 and 1"), "{errors}");
    assert!(errors.contains("guard.model.workflow: must be a number between 0 and 1"), "{errors}");
    let config = load(&format!("{example}\n[guard.model]\nchat = 0.8\n"), &read_example).unwrap();
    assert!((config.guard.thresholds.chat - 0.8).abs() < 1e-12);
    assert_eq!(config.guard.thresholds.document.to_bits(), Thresholds::BUNDLED.document.to_bits());
    let unknown = format!("{example}\n[guard.model]\nchatt = 0.8\n");
    assert!(load(&unknown, &read_example).is_err());
}
