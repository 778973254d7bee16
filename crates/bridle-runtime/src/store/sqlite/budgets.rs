//! Budget counters over SQLite: a debit is one conditional upsert that never passes the limit.
//!
//! Counters are INTEGER (i64): an amount above `i64::MAX` is refused with an error, and a limit
//! above it can only be reached as far as `i64::MAX` (past that, an error, never a wrap).

use async_trait::async_trait;
use bridle_core::ports::{BudgetKind, BudgetStore, Debit, StoreError, StoreResult};
use sqlx::SqliteConnection;

use super::{SqliteStore, db_err, to_i64, to_u64};

async fn used_on(conn: &mut SqliteConnection, tenant: &str, run_id: &str, kind: BudgetKind) -> StoreResult<u64> {
    let used: Option<i64> = sqlx::query_scalar("SELECT used FROM budgets WHERE tenant = ? AND run_id = ? AND kind = ?")
        .bind(tenant)
        .bind(run_id)
        .bind(kind.as_str())
        .fetch_optional(conn)
        .await
        .map_err(db_err)?;
    used.map_or(Ok(0), |u| to_u64("budget counter", u))
}

#[async_trait]
impl BudgetStore for SqliteStore {
    async fn debit(&self, tenant: &str, run_id: &str, kind: BudgetKind, amount: u64, limit: u64) -> StoreResult<Debit> {
        let stored_amount = to_i64("budget debit", amount)?;
        // The most a counter can hold under this limit; `used <= headroom` is the condition
        // `used + amount <= limit` without any overflowing addition.
        let cap = limit.min(i64::MAX.unsigned_abs());
        let mut conn = self.writer.acquire().await.map_err(db_err)?;
        if let Some(headroom) = cap.checked_sub(amount) {
            let headroom = to_i64("budget headroom", headroom)?;
            let used: Option<i64> = sqlx::query_scalar(
                "INSERT INTO budgets (tenant, run_id, kind, used) VALUES (?, ?, ?, ?)
                 ON CONFLICT (tenant, run_id, kind) DO UPDATE SET used = used + excluded.used
                 WHERE used <= ?
                 RETURNING used",
            )
            .bind(tenant)
            .bind(run_id)
            .bind(kind.as_str())
            .bind(stored_amount)
            .bind(headroom)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db_err)?;
            if let Some(used) = used {
                return Ok(Debit::Accepted { used: to_u64("budget counter", used)? });
            }
        }
        // Refused: read the unchanged counter on the same (writer) connection.
        let used = used_on(&mut conn, tenant, run_id, kind).await?;
        if used.checked_add(amount).is_some_and(|next| next <= limit) {
            return Err(StoreError::Unavailable(format!(
                "budget `{}` of run `{run_id}` would pass the largest storable counter",
                kind.as_str()
            )));
        }
        Ok(Debit::Exhausted { used })
    }

    async fn used(&self, tenant: &str, run_id: &str, kind: BudgetKind) -> StoreResult<u64> {
        let mut conn = self.reader.acquire().await.map_err(db_err)?;
        used_on(&mut conn, tenant, run_id, kind).await
    }
}
