//! The feedback loop end to end on the runtime: outcomes collected (bounds, unknown decisions,
//! masking, `outcome_collected`), analysed against the decisions' confidence, and the model
//! registry — a model that disagrees on a fifth of the held-out decisions fails validation and
//! stays a candidate, one that agrees is promoted one stage at a time, each promotion a
//! `model_promoted` audit event and hook. The models are the scripted replay models of
//! `replay.rs`: they answer recorded inputs by their hash.

use std::sync::{Arc, Mutex};

use bridle_core::audit::EventKind;
use bridle_core::decision::DecisionRecord;
use bridle_core::feedback::FeedbackInput;
use bridle_core::feedback::stats::Power;
use bridle_core::models::{Refusal, Stage};
use bridle_runtime::feedback::hooks::{LoopEvent, LoopHook};
use bridle_runtime::feedback::{AnalyzeOptions, CollectError, analyze, collect};
use bridle_runtime::llm::scripted::ScriptedReply;
use bridle_runtime::llm::{Message, ScriptedModel, messages_hash};
use bridle_runtime::models::{self, PromoteError, Promotion};
use bridle_runtime::store::Stores;
use serde_json::{Value, json};
use time::macros::datetime;

const T0: time::OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

fn messages(i: usize) -> Vec<Message> {
    vec![Message::system("You advise the corrective action."), Message::user(json!({"case": i}).to_string())]
}

fn advice(i: usize) -> Value {
    json!({
        "action_id": "set_temperature",
        "parameters": {"equipment": "etch-01", "temp_celsius": 360 + 5 * (i % 8)},
        "confidence": 0.3 + 0.6 * (i as f64 / 100.0),
        "reasoning": "trim the setpoint"
    })
}

fn record(i: usize) -> DecisionRecord {
    DecisionRecord {
        decision_id: format!("d-{i:03}"),
        pipeline_run_id: format!("run-{i}"),
        tenant: "fab-1".into(),
        agent: "advisor".into(),
        model: "recorded".into(),
        input: serde_json::to_value(messages(i)).unwrap(),
        output: advice(i),
        prompt_tokens: 10,
        completion_tokens: 10,
        latency_ms: 5,
        harness_checks: json!({"schema_valid": true, "params_in_range": true}),
        final_verdict: "executed".into(),
        created_at: T0 + time::Duration::seconds(i64::try_from(i).unwrap()),
        prompt_hash: None,
        tool_schema_hash: None,
        policy_version: None,
    }
}

fn model(answer: impl Fn(usize) -> Value) -> Arc<ScriptedModel> {
    let replies = (0..100)
        .map(|i| ScriptedReply {
            messages_hash: Some(messages_hash(&messages(i)).unwrap()),
            json: Some(answer(i)),
            ..ScriptedReply::default()
        })
        .collect();
    Arc::new(ScriptedModel::new("model-b", replies).unwrap())
}

/// Remembers every event it is told of.
#[derive(Default)]
struct Recorder(Mutex<Vec<LoopEvent>>);

#[async_trait::async_trait]
impl LoopHook for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    async fn on_event(&self, event: &LoopEvent) -> Result<(), bridle_runtime::hook::HookError> {
        self.0.lock().unwrap().push(event.clone());
        Ok(())
    }
}

/// 100 decisions of `fab-1`; decisions 0..20 rated: low confidence rated 1, the rest 5.
async fn fixture() -> (Stores, Arc<Recorder>, Vec<Arc<dyn LoopHook>>) {
    let stores = Stores::memory();
    for i in 0..100 {
        stores.decisions.record(&record(i)).await.unwrap();
    }
    let recorder = Arc::new(Recorder::default());
    let hooks: Vec<Arc<dyn LoopHook>> = vec![recorder.clone()];
    for i in 0..20 {
        let input = FeedbackInput { rating: Some(if i < 8 { 1 } else { 5 }), ..FeedbackInput::default() };
        collect(&stores, &hooks, "fab-1", &format!("d-{i:03}"), "operator-2", input, T0).await.unwrap();
    }
    (stores, recorder, hooks)
}

#[tokio::test]
async fn outcomes_are_collected_checked_masked_and_analysed() {
    let (stores, recorder, hooks) = fixture().await;
    assert_eq!(recorder.0.lock().unwrap().len(), 20, "one outcome_collected per feedback");
    assert!(recorder.0.lock().unwrap().iter().all(|e| e.event == "outcome_collected"));
    let f = &stores;
    let unknown =
        collect(f, &hooks, "fab-1", "d-404", "op", FeedbackInput { rating: Some(3), ..Default::default() }, T0);
    assert!(matches!(unknown.await, Err(CollectError::UnknownDecision(_))));
    let other_tenant =
        collect(f, &hooks, "fab-2", "d-001", "op", FeedbackInput { rating: Some(3), ..Default::default() }, T0);
    assert!(matches!(other_tenant.await, Err(CollectError::UnknownDecision(_))));
    let bad = collect(f, &hooks, "fab-1", "d-001", "op", FeedbackInput { rating: Some(6), ..Default::default() }, T0);
    assert!(matches!(bad.await, Err(CollectError::Invalid(_))));
    let comment =
        FeedbackInput { score: Some(0.5), comment: Some("ask kim@fab.example about it".into()), ..Default::default() };
    let (stored, _) = collect(f, &hooks, "fab-1", "d-050", "op", comment, T0).await.unwrap();
    let text = stored.comment.unwrap();
    assert!(!text.contains("kim@fab.example"), "masked: {text}");
    assert_eq!(recorder.0.lock().unwrap().len(), 21, "refusals fire nothing");

    let (analysis, observations) =
        analyze(stores.feedback.as_ref(), stores.decisions.as_ref(), "fab-1", 0.5, &AnalyzeOptions::default())
            .await
            .unwrap();
    assert_eq!(observations.len(), 21, "20 rated and d-050 scored");
    assert_eq!((observations[20].rating, observations[20].score), (None, Some(0.5)));
    assert_eq!(analysis.score_rating.power, Power::InsufficientData, "no decision has both");
    let c = &analysis.confidence_rating;
    assert_eq!((c.n, c.power), (20, Power::Low));
    assert!(c.rho.unwrap() > 0.8, "confidence predicts the ratings: {c:?}");
    let p = analysis.proposal.unwrap();
    // Rated 1 up to d-007 (confidence 0.342), 5 from d-008 (0.348): at the grid's 0.30 all 20
    // are above (8 poor, 40 %), at 0.35 the 11 from d-009 on (none poor); d-008 falls below.
    assert_eq!((p.proposed, p.above, p.below), (0.35, (11, 0), (9, 8)), "{p:?}");
    assert!(p.diff().contains("+low_confidence = 0.35"), "{}", p.diff());
}

#[tokio::test]
async fn promotion_needs_a_passing_validation_and_goes_one_stage_at_a_time() {
    let (stores, recorder, hooks) = fixture().await;
    let contracts = bridle_runtime::bundled::fab().unwrap().registry.clone();
    let held_out = models::held_out(&stores, "fab-1", 100, None).await.unwrap();
    assert_eq!(held_out.len(), 80, "rated decisions are not held out");
    assert_eq!(held_out[0].decision_id, "d-020", "oldest first");

    let bytes = b"[llm]\nprovider = \"scripted\"\n";
    let entry = models::candidate("fab-1", "model-b", "models/b.toml", bytes, "ops", T0);
    stores.models.register_model(&entry).await.unwrap();
    let hash = models::file_hash(bytes);

    // Disagrees on every fifth held-out decision: 64/80 = 80 % < 90 %.
    let bad = model(|i| if i % 5 == 0 { json!({"action_id": "hold_equipment", "parameters": {}}) } else { advice(i) });
    let (failed, report) = models::validate(bad.clone(), contracts.clone(), &entry, &hash, &held_out, 0.9, T0).await;
    assert_eq!((failed.held_out, failed.agree, failed.passed), (80, 64, false));
    assert_eq!(report.disagreements().count(), 16);
    assert_eq!(bad.requests().len(), 80, "only held-out decisions were asked");
    let promotion = |v| Promotion { tenant: "fab-1", name: "model-b", to: None, validation: v, actor: "ops", now: T0 };
    let refused = models::promote(&stores, &hooks, promotion(&failed)).await.unwrap_err();
    let PromoteError::Refused(refusal @ Refusal::ValidationFailed { .. }) = &refused else { panic!("{refused}") };
    assert_eq!(refusal.code().as_str(), "validation_failed");
    assert!(refused.to_string().contains("stays candidate") && refused.to_string().contains("64/80"), "{refused}");
    assert_eq!(stores.models.model("fab-1", "model-b").await.unwrap().unwrap().stage, Stage::Candidate);

    let good = model(advice);
    let (passed, _) = models::validate(good, contracts, &entry, &hash, &held_out, 0.9, T0).await;
    assert_eq!((passed.agree, passed.passed), (80, true));
    // Not two stages at once.
    let skip = Promotion { to: Some(Stage::Stable), ..promotion(&passed) };
    assert!(matches!(
        models::promote(&stores, &hooks, skip).await,
        Err(PromoteError::Refused(Refusal::NotNext { .. }))
    ));
    let (canary, _) = models::promote(&stores, &hooks, promotion(&passed)).await.unwrap();
    assert_eq!(canary.stage, Stage::Canary);
    let (stable, _) = models::promote(&stores, &hooks, promotion(&passed)).await.unwrap();
    assert_eq!(stable.stage, Stage::Stable);
    assert!(matches!(
        models::promote(&stores, &hooks, promotion(&passed)).await,
        Err(PromoteError::Refused(Refusal::AlreadyStable(_)))
    ));
    // A validation of another file never promotes.
    let other = bridle_core::models::judge(80, 80, 0.9, "0000", T0);
    let entry2 = models::candidate("fab-1", "model-c", "c.toml", b"c", "ops", T0);
    stores.models.register_model(&entry2).await.unwrap();
    let p2 = Promotion { name: "model-c", ..promotion(&other) };
    assert!(matches!(
        models::promote(&stores, &hooks, p2).await,
        Err(PromoteError::Refused(Refusal::FileChanged { .. }))
    ));

    // Exactly the two promotions were recorded, as audit events and hook events.
    let events = stores.audit.events("fab-1", 0, 100).await.unwrap();
    let promoted: Vec<String> = events
        .iter()
        .filter(|e| e.record.kind == EventKind::ModelPromoted)
        .map(|e| e.record.reason.clone().unwrap_or_default())
        .collect();
    assert_eq!(promoted.len(), 2, "{promoted:?}");
    assert!(promoted[0].starts_with("candidate → canary: agreement 80/80"), "{promoted:?}");
    assert!(promoted[1].starts_with("canary → stable"), "{promoted:?}");
    let hooked: Vec<String> = recorder
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|e| e.event == "model_promoted")
        .map(|e| e.data["stage"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(hooked, ["canary", "stable"]);
}
