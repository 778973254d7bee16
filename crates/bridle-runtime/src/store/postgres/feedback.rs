//! The feedback loop's stores over PostgreSQL: outcomes per decision and the model registry.
//!
//! Feedback is inserted only if its tenant has the decision it rates (one statement, so a
//! decision of another tenant is as unknown as a missing one); a model's stage moves by
//! compare-and-set on the `stage` column.

use async_trait::async_trait;
use bridle_core::feedback::{Feedback, FeedbackStore};
use bridle_core::models::{ModelEntry, ModelRegistry, Stage};
use bridle_core::ports::{Audit, StoreError, StoreResult};

use super::audit::append_in;
use super::{PostgresStore, db_err, to_json, to_nanos, violates};
use crate::store::sqlite::from_json;

#[async_trait]
impl FeedbackStore for PostgresStore {
    async fn add_feedback(&self, f: &Feedback, audit: Audit) -> StoreResult<()> {
        let what = format!("feedback `{}`", f.feedback_id);
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let inserted = sqlx::query(
            "INSERT INTO feedback (feedback_id, tenant, decision_id, created_at, body)
             SELECT $1, $2, $3, $4, $5
             WHERE EXISTS (SELECT 1 FROM decisions WHERE tenant = $2 AND decision_id = $3)",
        )
        .bind(&f.feedback_id)
        .bind(&f.tenant)
        .bind(&f.decision_id)
        .bind(to_nanos(&what, f.created_at)?)
        .bind(to_json(&what, f)?)
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(done) if done.rows_affected() == 0 => Err(StoreError::NotFound(format!("decision `{}`", f.decision_id))),
            Ok(_) => {
                // INVARIANT: feedback commits with its audit records, or not at all.
                append_in(&mut tx, audit).await?;
                tx.commit().await.map_err(db_err)
            }
            Err(e) if violates(&e, "feedback_id_key") => Err(StoreError::Duplicate(what)),
            Err(e) => Err(db_err(e)),
        }
    }

    async fn feedback(&self, tenant: &str, decision_id: Option<&str>, limit: u32) -> StoreResult<Vec<Feedback>> {
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT body FROM feedback WHERE tenant = $1 AND ($2::TEXT IS NULL OR decision_id = $2)
             ORDER BY created_at DESC, n LIMIT $3",
        )
        .bind(tenant)
        .bind(decision_id)
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(|body| from_json("feedback", body)).collect()
    }
}

#[async_trait]
impl ModelRegistry for PostgresStore {
    async fn register_model(&self, m: &ModelEntry) -> StoreResult<()> {
        let what = format!("model `{}`", m.name);
        let inserted = sqlx::query("INSERT INTO models (tenant, name, stage, body) VALUES ($1, $2, $3, $4)")
            .bind(&m.tenant)
            .bind(&m.name)
            .bind(m.stage.as_str())
            .bind(to_json(&what, m)?)
            .execute(&self.pool)
            .await;
        match inserted {
            Ok(_) => Ok(()),
            Err(e) if violates(&e, "models_pkey") => Err(StoreError::Duplicate(what)),
            Err(e) => Err(db_err(e)),
        }
    }

    async fn model(&self, tenant: &str, name: &str) -> StoreResult<Option<ModelEntry>> {
        let body: Option<String> = sqlx::query_scalar("SELECT body FROM models WHERE tenant = $1 AND name = $2")
            .bind(tenant)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        body.map(|b| from_json(&format!("model `{name}`"), &b)).transpose()
    }

    async fn models(&self, tenant: &str) -> StoreResult<Vec<ModelEntry>> {
        let rows: Vec<String> =
            sqlx::query_scalar("SELECT body FROM models WHERE tenant = $1 ORDER BY name COLLATE \"C\"")
                .bind(tenant)
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
        rows.iter().map(|b| from_json("model", b)).collect()
    }

    async fn move_stage(&self, m: &ModelEntry, from: Stage, audit: Audit) -> StoreResult<bool> {
        let what = format!("model `{}`", m.name);
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done =
            sqlx::query("UPDATE models SET stage = $1, body = $2 WHERE tenant = $3 AND name = $4 AND stage = $5")
                .bind(m.stage.as_str())
                .bind(to_json(&what, m)?)
                .bind(&m.tenant)
                .bind(&m.name)
                .bind(from.as_str())
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        // INVARIANT: a promotion commits with its `model_promoted` event, or not at all.
        append_in(&mut tx, audit).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }
}
