//! The feedback loop's stores: feedback only on a decision of its own tenant (another tenant's
//! is unknown), listed newest first per tenant and decision; models unique per tenant, stages
//! moved by compare-and-set, so of two racing promotions exactly one wins.

use anyhow::ensure;
use bridle_core::feedback::{Feedback, Source};
use bridle_core::models::{ModelEntry, Stage};
use bridle_core::ports::StoreError;
use bridle_runtime::store::Stores;
use time::OffsetDateTime;

use super::{decision, secs};

fn feedback(id: &str, tenant: &str, decision_id: &str, rating: u8, at: OffsetDateTime) -> Feedback {
    Feedback {
        feedback_id: id.into(),
        tenant: tenant.into(),
        decision_id: decision_id.into(),
        source: Source::Operator,
        rating: Some(rating),
        score: Some(0.25),
        comment: Some("설비 점검 필요 — fine".into()),
        rater: "operator-2".into(),
        created_at: at,
    }
}

pub async fn feedback_rates_decisions_of_its_own_tenant(s: Stores) -> anyhow::Result<()> {
    s.decisions.record(&decision("d-1", "tenant-a", secs(1))).await?;
    s.decisions.record(&decision("d-2", "tenant-a", secs(2))).await?;
    s.decisions.record(&decision("d-9", "tenant-b", secs(3))).await?;
    let f = &s.feedback;
    f.add_feedback(&feedback("f-1", "tenant-a", "d-1", 4, secs(10)), Vec::new()).await?;
    f.add_feedback(&feedback("f-2", "tenant-a", "d-2", 2, secs(12)), Vec::new()).await?;
    f.add_feedback(&feedback("f-3", "tenant-a", "d-1", 5, secs(11)), Vec::new()).await?;
    // Unknown, and another tenant's decision: both not found, nothing stored.
    let missing = f.add_feedback(&feedback("f-4", "tenant-a", "d-404", 3, secs(13)), Vec::new()).await;
    ensure!(matches!(missing, Err(StoreError::NotFound(_))), "{missing:?}");
    let foreign = f.add_feedback(&feedback("f-5", "tenant-a", "d-9", 3, secs(13)), Vec::new()).await;
    ensure!(matches!(foreign, Err(StoreError::NotFound(_))), "{foreign:?}");
    let twice = f.add_feedback(&feedback("f-1", "tenant-a", "d-2", 3, secs(14)), Vec::new()).await;
    ensure!(matches!(twice, Err(StoreError::Duplicate(_))), "{twice:?}");

    let all = f.feedback("tenant-a", None, 10).await?;
    let ids: Vec<&str> = all.iter().map(|x| x.feedback_id.as_str()).collect();
    ensure!(ids == ["f-2", "f-3", "f-1"], "newest first: {ids:?}");
    ensure!(all[2] == feedback("f-1", "tenant-a", "d-1", 4, secs(10)), "round trip: {:?}", all[2]);
    let of_d1: Vec<String> =
        f.feedback("tenant-a", Some("d-1"), 10).await?.into_iter().map(|x| x.feedback_id).collect();
    ensure!(of_d1 == ["f-3", "f-1"], "{of_d1:?}");
    ensure!(f.feedback("tenant-a", None, 1).await?.len() == 1);
    ensure!(f.feedback("tenant-b", None, 10).await?.is_empty());
    Ok(())
}

fn model(tenant: &str, name: &str, stage: Stage) -> ModelEntry {
    ModelEntry {
        tenant: tenant.into(),
        name: name.into(),
        config_path: "models/b.toml".into(),
        config_hash: "ab".repeat(32),
        stage,
        registered_by: "ops".into(),
        registered_at: secs(1),
        updated_at: secs(1),
        validation: None,
    }
}

pub async fn models_move_stage_by_compare_and_set(s: Stores) -> anyhow::Result<()> {
    let r = &s.models;
    r.register_model(&model("fab-1", "qwen-b", Stage::Candidate)).await?;
    r.register_model(&model("fab-1", "llama-a", Stage::Candidate)).await?;
    r.register_model(&model("fab-2", "qwen-b", Stage::Candidate)).await?;
    let twice = r.register_model(&model("fab-1", "qwen-b", Stage::Stable)).await;
    ensure!(matches!(twice, Err(StoreError::Duplicate(_))), "{twice:?}");
    let names: Vec<String> = r.models("fab-1").await?.into_iter().map(|m| m.name).collect();
    ensure!(names == ["llama-a", "qwen-b"], "{names:?}");

    let canary = ModelEntry { stage: Stage::Canary, updated_at: secs(5), ..model("fab-1", "qwen-b", Stage::Canary) };
    // Racing promotions of the same model: exactly one moves it.
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let (r, canary) = (s.models.clone(), canary.clone());
        tasks.spawn(async move { r.move_stage(&canary, Stage::Candidate, Vec::new()).await });
    }
    let mut moved = 0;
    while let Some(done) = tasks.join_next().await {
        moved += usize::from(done??);
    }
    ensure!(moved == 1, "{moved} of 8 racing promotions moved the stage");
    ensure!(r.model("fab-1", "qwen-b").await? == Some(canary.clone()));
    ensure!(r.model("fab-2", "qwen-b").await?.map(|m| m.stage) == Some(Stage::Candidate), "other tenant untouched");
    ensure!(r.model("fab-1", "nope").await?.is_none());
    Ok(())
}
