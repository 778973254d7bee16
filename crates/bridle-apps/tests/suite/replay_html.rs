//! The replay report's page: self-contained (no script, no external file), every disagreement
//! listed with what differed, text escaped, and an A/B page with both models.

use bridle_apps::replay_html::{ab_page, report_page};
use bridle_core::replay::{AgentAgreement, Tolerance};
use bridle_runtime::replay::{AbReport, ReplayItem, ReplayReport};
use serde_json::json;

fn item(id: &str, agent: &str, error: Option<&str>) -> ReplayItem {
    ReplayItem {
        decision_id: id.to_owned(),
        pipeline_run_id: "run-1".to_owned(),
        agent: agent.to_owned(),
        recorded: json!({"action_id": "scale"}),
        replayed: json!({"action_id": "scale"}),
        comparison: None,
        error: error.map(str::to_owned),
    }
}

fn report(model: &str, items: Vec<ReplayItem>) -> ReplayReport {
    let agents = vec![AgentAgreement {
        agent: "advisor".to_owned(),
        total: items.len(),
        agree: 0,
        action: 0,
        parameters: 0,
        verdict: 0,
        errors: items.len(),
    }];
    ReplayReport { model: model.to_owned(), total: items.len(), agree: 0, agents, items }
}

#[test]
fn the_page_lists_every_disagreement_escaped_and_is_self_contained() {
    let r = report("m<1>", vec![item("d-042", "advisor", Some("model said <no>")), item("d-043", "advisor", None)]);
    let page = report_page(&r);
    assert!(page.starts_with("<!doctype html>") && page.contains("<svg"), "{page}");
    assert!(page.contains("d-042") && page.contains("d-043"));
    assert!(page.contains("model said &lt;no&gt;") && page.contains("m&lt;1&gt;"));
    assert!(!page.contains("<no>") && !page.contains("<script") && !page.contains("src="), "self-contained");
    assert!(page.contains("0 of 2 decisions agree"));
}

#[test]
fn an_empty_replay_says_everything_agreed_and_the_ab_page_shows_both_models() {
    let a = report("model-a", Vec::new());
    assert!(report_page(&a).contains("Every decision agreed."));
    let b = report("model-b", vec![item("d-001", "advisor", Some("timeout"))]);
    let page = ab_page(&AbReport::new(a, b, &Tolerance::default()));
    assert!(page.contains("model-a") && page.contains("model-b") && page.contains("d-001"));
    assert!(page.contains("<h2>A</h2>") && page.contains("<h2>B</h2>") && !page.contains("<script"));
}
