//! The automatic-change ledger: one `auto_actions` row per admitted change.
//!
//! INVARIANT: an admission counts the window and inserts in one write transaction holding the
//! resource's [`Lock::AutoWindow`] (SQLite: the write lock of `BEGIN IMMEDIATE`; PostgreSQL: an
//! advisory lock on the tenant and resource), so two admissions, from any replica, can never
//! both see room for one change.

use std::time::Duration;

use async_trait::async_trait;
use bridle_core::ports::{ActionLedger, StoreResult};
use time::OffsetDateTime;

use super::{Dialect, Lock, SqlStore, args};
use crate::store::rows::Columns;

/// Milliseconds since the epoch (saturating: a clock past year 292 million is not our problem).
fn epoch_ms(at: OffsetDateTime) -> i64 {
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

/// The first instant inside the window ending at `at`.
fn window_start_ms(at: OffsetDateTime, window: Duration) -> i64 {
    epoch_ms(at).saturating_sub(i64::try_from(window.as_millis()).unwrap_or(i64::MAX))
}

const COUNT: &str =
    "SELECT COUNT(*) AS n FROM auto_actions WHERE tenant = $1 AND resource = $2 AND at_ms > $3 AND at_ms <= $4";

async fn count<D: Dialect>(
    conn: &mut D::Conn,
    tenant: &str,
    resource: &str,
    at: OffsetDateTime,
    window: Duration,
) -> StoreResult<i64> {
    let args = args![tenant, resource, window_start_ms(at, window), epoch_ms(at)];
    let row = D::fetch_optional(conn, COUNT, args).await?;
    row.map_or(Ok(0), |r| r.int("n"))
}

#[async_trait]
impl<D: Dialect> ActionLedger for SqlStore<D> {
    async fn admit_auto(
        &self,
        tenant: &str,
        resource: &str,
        at: OffsetDateTime,
        window: Duration,
        max: u32,
    ) -> StoreResult<bool> {
        let mut tx = self.db().begin().await?;
        D::lock(&mut tx, Lock::AutoWindow { tenant, resource }).await?;
        if count::<D>(&mut tx, tenant, resource, at, window).await? >= i64::from(max) {
            return Ok(false);
        }
        let sql = "INSERT INTO auto_actions (tenant, resource, at_ms) VALUES ($1, $2, $3)";
        D::execute(&mut tx, sql, args![tenant, resource, epoch_ms(at)]).await?;
        D::commit(tx).await?;
        Ok(true)
    }

    async fn count_auto(&self, tenant: &str, resource: &str, at: OffsetDateTime, window: Duration) -> StoreResult<u64> {
        let mut conn = self.db().read().await?;
        let used = count::<D>(&mut conn, tenant, resource, at, window).await?;
        Ok(u64::try_from(used).unwrap_or(0))
    }
}
