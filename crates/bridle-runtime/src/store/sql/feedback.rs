//! The feedback loop's stores: outcomes per decision and the model registry.
//!
//! Feedback is inserted only if its tenant has the decision it rates (one statement, so a
//! decision of another tenant is as unknown as a missing one); a model's stage moves by
//! compare-and-set on the `stage` column.

use async_trait::async_trait;
use bridle_core::feedback::{Feedback, FeedbackStore};
use bridle_core::models::{ModelEntry, ModelRegistry, Stage};
use bridle_core::ports::{Audit, StoreError, StoreResult};

use super::audit::append_in;
use super::{Dialect, SqlStore, args};
use crate::store::rows::{Columns, from_json, to_json, to_nanos};

#[async_trait]
impl<D: Dialect> FeedbackStore for SqlStore<D> {
    async fn add_feedback(&self, f: &Feedback, audit: Audit) -> StoreResult<()> {
        let what = format!("feedback `{}`", f.feedback_id);
        let body = to_json(&what, f)?;
        let mut tx = self.db().begin().await?;
        let args = args![&f.feedback_id, &f.tenant, &f.decision_id, to_nanos(&what, f.created_at)?, &body];
        let inserted = D::insert(
            &mut tx,
            "INSERT INTO feedback (feedback_id, tenant, decision_id, created_at, body)
             SELECT $1, $2, $3, $4, $5
             WHERE EXISTS (SELECT 1 FROM decisions WHERE tenant = $2 AND decision_id = $3)",
            args,
            "feedback_id_key",
        )
        .await?;
        match inserted {
            None => return Err(StoreError::Duplicate(what)),
            Some(0) => return Err(StoreError::NotFound(format!("decision `{}`", f.decision_id))),
            Some(_) => {}
        }
        // INVARIANT: feedback commits with its audit records, or not at all.
        append_in::<D>(&mut tx, audit).await?;
        D::commit(tx).await
    }

    async fn feedback(&self, tenant: &str, decision_id: Option<&str>, limit: u32) -> StoreResult<Vec<Feedback>> {
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(
            &mut conn,
            "SELECT body FROM feedback WHERE tenant = $1 AND (CAST($2 AS TEXT) IS NULL OR decision_id = $2)
             ORDER BY created_at DESC, n LIMIT $3",
            args![tenant, decision_id, i64::from(limit)],
        )
        .await?;
        rows.iter().map(|r| from_json("feedback", &r.text("body")?)).collect()
    }
}

#[async_trait]
impl<D: Dialect> ModelRegistry for SqlStore<D> {
    async fn register_model(&self, m: &ModelEntry) -> StoreResult<()> {
        let what = format!("model `{}`", m.name);
        let body = to_json(&what, m)?;
        let mut conn = self.db().write().await?;
        let sql = "INSERT INTO models (tenant, name, stage, body) VALUES ($1, $2, $3, $4)";
        let args = args![&m.tenant, &m.name, m.stage.as_str(), &body];
        if D::insert(&mut conn, sql, args, "models_pkey").await?.is_some() {
            Ok(())
        } else {
            Err(StoreError::Duplicate(what))
        }
    }

    async fn model(&self, tenant: &str, name: &str) -> StoreResult<Option<ModelEntry>> {
        let mut conn = self.db().read().await?;
        let sql = "SELECT body FROM models WHERE tenant = $1 AND name = $2";
        let row = D::fetch_optional(&mut conn, sql, args![tenant, name]).await?;
        row.map(|r| from_json(&format!("model `{name}`"), &r.text("body")?)).transpose()
    }

    async fn models(&self, tenant: &str) -> StoreResult<Vec<ModelEntry>> {
        let mut conn = self.db().read().await?;
        let sql = format!("SELECT body FROM models WHERE tenant = $1 ORDER BY name{}", D::BYTE_ORDER);
        let rows = D::fetch_all(&mut conn, &sql, args![tenant]).await?;
        rows.iter().map(|r| from_json("model", &r.text("body")?)).collect()
    }

    async fn move_stage(&self, m: &ModelEntry, from: Stage, audit: Audit) -> StoreResult<bool> {
        let body = to_json(&format!("model `{}`", m.name), m)?;
        let mut tx = self.db().begin().await?;
        let done = D::execute(
            &mut tx,
            "UPDATE models SET stage = $1, body = $2 WHERE tenant = $3 AND name = $4 AND stage = $5",
            args![m.stage.as_str(), &body, &m.tenant, &m.name, from.as_str()],
        )
        .await?;
        if done != 1 {
            return Ok(false);
        }
        // INVARIANT: a promotion commits with its `model_promoted` event, or not at all.
        append_in::<D>(&mut tx, audit).await?;
        D::commit(tx).await?;
        Ok(true)
    }
}
