//! The automatic-change ledger over SQLite: one `auto_actions` row per admitted change.
//!
//! INVARIANT: the window count and the insert run in one `BEGIN IMMEDIATE` transaction on the
//! writer connection, so two admissions can never both see room for one change.

use std::time::Duration;

use async_trait::async_trait;
use bridle_core::ports::{ActionLedger, StoreResult};
use time::OffsetDateTime;

use super::{SqliteStore, db_err};

/// Milliseconds since the epoch (saturating: a clock past year 292 million is not our problem).
pub(crate) fn epoch_ms(at: OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// The first instant inside the window ending at `at`.
pub(crate) fn window_start_ms(at: OffsetDateTime, window: Duration) -> i64 {
    epoch_ms(at).saturating_sub(i64::try_from(window.as_millis()).unwrap_or(i64::MAX))
}

const COUNT: &str = "SELECT COUNT(*) FROM auto_actions WHERE tenant = ? AND resource = ? AND at_ms > ? AND at_ms <= ?";

#[async_trait]
impl ActionLedger for SqliteStore {
    async fn admit_auto(
        &self,
        tenant: &str,
        resource: &str,
        at: OffsetDateTime,
        window: Duration,
        max: u32,
    ) -> StoreResult<bool> {
        let mut tx = self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db_err)?;
        let used: i64 = sqlx::query_scalar(COUNT)
            .bind(tenant)
            .bind(resource)
            .bind(window_start_ms(at, window))
            .bind(epoch_ms(at))
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        if used >= i64::from(max) {
            return Ok(false);
        }
        sqlx::query("INSERT INTO auto_actions (tenant, resource, at_ms) VALUES (?, ?, ?)")
            .bind(tenant)
            .bind(resource)
            .bind(epoch_ms(at))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    async fn count_auto(&self, tenant: &str, resource: &str, at: OffsetDateTime, window: Duration) -> StoreResult<u64> {
        let used: i64 = sqlx::query_scalar(COUNT)
            .bind(tenant)
            .bind(resource)
            .bind(window_start_ms(at, window))
            .bind(epoch_ms(at))
            .fetch_one(&self.reader)
            .await
            .map_err(db_err)?;
        Ok(u64::try_from(used).unwrap_or(0))
    }
}
