//! The automatic-change ledger over PostgreSQL: one `auto_actions` row per admitted change.
//!
//! INVARIANT: an admission takes `pg_advisory_xact_lock(AUTO_LOCK_SPACE, hashtext(tenant/resource))`
//! before counting the window, so replicas admitting changes on one resource are serialized and
//! never admit more than `max` between them (a hash collision only serializes two resources).

use std::time::Duration;

use async_trait::async_trait;
use bridle_core::ports::{ActionLedger, StoreResult};
use time::OffsetDateTime;

use super::{PostgresStore, db_err};
use crate::store::sqlite::auto_actions::{epoch_ms, window_start_ms};

/// The first key of the two-key advisory locks of this ledger (`auto` as ASCII).
const AUTO_LOCK_SPACE: i32 = 0x6175_746f;

const COUNT: &str =
    "SELECT COUNT(*) FROM auto_actions WHERE tenant = $1 AND resource = $2 AND at_ms > $3 AND at_ms <= $4";

#[async_trait]
impl ActionLedger for PostgresStore {
    async fn admit_auto(
        &self,
        tenant: &str,
        resource: &str,
        at: OffsetDateTime,
        window: Duration,
        max: u32,
    ) -> StoreResult<bool> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind(AUTO_LOCK_SPACE)
            .bind(format!("{tenant}/{resource}"))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
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
        sqlx::query("INSERT INTO auto_actions (tenant, resource, at_ms) VALUES ($1, $2, $3)")
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
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(u64::try_from(used).unwrap_or(0))
    }
}
