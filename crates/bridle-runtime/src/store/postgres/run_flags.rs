//! Run flags over PostgreSQL: one `run_taint` row per tainted run, written once, never updated.
//!
//! The write is a single `INSERT … ON CONFLICT DO NOTHING`, so the first reason wins and a
//! concurrent taint of the same run from another replica is a no-op.

use async_trait::async_trait;
use bridle_core::ports::{RunFlags, StoreResult};

use super::{PostgresStore, db_err};

#[async_trait]
impl RunFlags for PostgresStore {
    async fn taint(&self, tenant: &str, run_id: &str, reason: &str) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO run_taint (tenant, run_id, reason) VALUES ($1, $2, $3)
             ON CONFLICT (tenant, run_id) DO NOTHING",
        )
        .bind(tenant)
        .bind(run_id)
        .bind(reason)
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn tainted(&self, tenant: &str, run_id: &str) -> StoreResult<Option<String>> {
        sqlx::query_scalar("SELECT reason FROM run_taint WHERE tenant = $1 AND run_id = $2")
            .bind(tenant)
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)
    }
}
