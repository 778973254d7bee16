//! Budget counters: a debit is one conditional upsert that never passes the limit, however many
//! writers (replicas, on PostgreSQL) debit the same counter at once.
//!
//! `INSERT … ON CONFLICT DO UPDATE SET used = used + amount WHERE used <= headroom RETURNING
//! used`: on PostgreSQL a concurrent debit blocks on the counter's row lock and the WHERE clause
//! is re-checked against the committed value before updating (on SQLite the one writer runs one
//! statement at a time), so the sum of accepted debits stays within the limit. Counters are
//! 64-bit: an amount above `i64::MAX` is refused with an error, and a limit above it can only be
//! reached as far as `i64::MAX` (past that, an error, never a wrap).

use async_trait::async_trait;
use bridle_core::ports::{BudgetKind, BudgetStore, Debit, StoreError, StoreResult};

use super::{Dialect, SqlStore, args};
use crate::store::rows::{Columns, to_i64, to_u64};

async fn used_on<D: Dialect>(conn: &mut D::Conn, tenant: &str, run_id: &str, kind: BudgetKind) -> StoreResult<u64> {
    let sql = "SELECT used FROM budgets WHERE tenant = $1 AND run_id = $2 AND kind = $3";
    let row = D::fetch_optional(conn, sql, args![tenant, run_id, kind.as_str()]).await?;
    row.map_or(Ok(0), |r| to_u64("budget counter", r.int("used")?))
}

#[async_trait]
impl<D: Dialect> BudgetStore for SqlStore<D> {
    async fn debit(&self, tenant: &str, run_id: &str, kind: BudgetKind, amount: u64, limit: u64) -> StoreResult<Debit> {
        let stored_amount = to_i64("budget debit", amount)?;
        // The most a counter can hold under this limit; `used <= headroom` is the condition
        // `used + amount <= limit` without any overflowing addition.
        let cap = limit.min(i64::MAX.unsigned_abs());
        let mut conn = self.db().write().await?;
        if let Some(headroom) = cap.checked_sub(amount) {
            let headroom = to_i64("budget headroom", headroom)?;
            let used = D::fetch_optional(
                &mut conn,
                "INSERT INTO budgets (tenant, run_id, kind, used) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (tenant, run_id, kind) DO UPDATE SET used = budgets.used + EXCLUDED.used
                 WHERE budgets.used <= $5
                 RETURNING used",
                args![tenant, run_id, kind.as_str(), stored_amount, headroom],
            )
            .await?;
            if let Some(row) = used {
                return Ok(Debit::Accepted { used: to_u64("budget counter", row.int("used")?)? });
            }
        }
        // Refused: read the unchanged counter on the same connection (counters only grow, so it
        // still refuses).
        let used = used_on::<D>(&mut conn, tenant, run_id, kind).await?;
        if used.checked_add(amount).is_some_and(|next| next <= limit) {
            return Err(StoreError::Unavailable(format!(
                "budget `{}` of run `{run_id}` would pass the largest storable counter",
                kind.as_str()
            )));
        }
        Ok(Debit::Exhausted { used })
    }

    async fn used(&self, tenant: &str, run_id: &str, kind: BudgetKind) -> StoreResult<u64> {
        let mut conn = self.db().read().await?;
        used_on::<D>(&mut conn, tenant, run_id, kind).await
    }
}
