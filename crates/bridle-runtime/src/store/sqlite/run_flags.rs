//! Run flags over SQLite: one `run_taint` row per tainted run, written once, never updated.
//!
//! The write is a single `INSERT … ON CONFLICT DO NOTHING` on the writer connection, so the
//! first reason wins and a concurrent taint of the same run is a no-op; reads use a reader.

use async_trait::async_trait;
use bridle_core::ports::{RunFlags, StoreResult};

use super::{SqliteStore, db_err};

#[async_trait]
impl RunFlags for SqliteStore {
    async fn taint(&self, tenant: &str, run_id: &str, reason: &str) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO run_taint (tenant, run_id, reason) VALUES (?, ?, ?)
             ON CONFLICT (tenant, run_id) DO NOTHING",
        )
        .bind(tenant)
        .bind(run_id)
        .bind(reason)
        .execute(&self.writer)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn tainted(&self, tenant: &str, run_id: &str) -> StoreResult<Option<String>> {
        sqlx::query_scalar("SELECT reason FROM run_taint WHERE tenant = ? AND run_id = ?")
            .bind(tenant)
            .bind(run_id)
            .fetch_optional(&self.reader)
            .await
            .map_err(db_err)
    }
}
