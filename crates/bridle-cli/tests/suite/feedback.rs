//! `bridle feedback` and `bridle models` on the decision log `bridle demo fab` writes: ratings
//! stored (bounds and unknown decisions refused with exit 1), the analysis behind the power gate,
//! and a promotion refused with the stage unchanged when validation cannot pass.

use super::support::{bridle, text};

#[test]
fn feedback_and_the_model_registry_from_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("fab.db").display());
    let out = bridle(&["demo", "fab", "--db", &db], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = bridle(&["replay", "--tenant", "fab-1", "--db", &db, "--limit", "1000", "--json"], dir.path());
    let replay: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let ids: Vec<String> =
        replay["items"].as_array().unwrap().iter().map(|i| i["decision_id"].as_str().unwrap().to_owned()).collect();
    assert!(ids.len() >= 12, "{ids:?}");

    // Nine rated decisions: below the power gate.
    for (n, id) in ids.iter().take(9).enumerate() {
        let rating = (n % 5 + 1).to_string();
        let out = bridle(&["feedback", "add", id, "--db", &db, "--rating", &rating], dir.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let out = bridle(&["feedback", "analyze", "--db", &db, "--json"], dir.path());
    let analysis: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(analysis["decisions"], 9);
    assert_eq!(analysis["confidence_rating"]["power"], "insufficient_data", "{analysis}");
    assert_eq!(analysis["confidence_rating"]["rho"], serde_json::Value::Null);
    assert_eq!(analysis["proposal"], serde_json::Value::Null);

    let refused = bridle(&["feedback", "add", "no-such-decision", "--db", &db, "--rating", "3"], dir.path());
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused.stderr).contains("refused: not_found"), "{}", text(&refused.stderr));
    let refused = bridle(&["feedback", "add", &ids[0], "--db", &db, "--rating", "9"], dir.path());
    assert!(text(&refused.stderr).contains("refused: bad_request"), "{}", text(&refused.stderr));
    let out = bridle(&["feedback", "list", "--db", &db, "--json"], dir.path());
    assert_eq!(text(&out.stdout).lines().count(), 9);

    let model = dir.path().join("model.toml");
    std::fs::write(&model, "[llm]\nprovider = \"scripted\"\n").unwrap();
    let model = model.display().to_string();
    let out = bridle(&["models", "register", "m1", "--model", &model, "--db", &db], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A scripted model with no replies disagrees everywhere: validation fails, the stage stays.
    let out = bridle(&["models", "promote", "m1", "--db", &db], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("refused: validation_failed: `m1` stays candidate"), "{err}");
    let out = bridle(&["models", "promote", "m1", "--to", "stable", "--db", &db], dir.path());
    assert!(text(&out.stderr).contains("refused: stage_not_next"), "{}", text(&out.stderr));
    let out = bridle(&["models", "list", "--db", &db, "--json"], dir.path());
    let listed: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!((listed["name"].as_str(), listed["stage"].as_str()), (Some("m1"), Some("candidate")));
}
