//! Budget counters over PostgreSQL: a debit is one conditional upsert that never passes the
//! limit, however many replicas debit the same counter at once.
//!
//! `INSERT … ON CONFLICT DO UPDATE SET used = used + amount WHERE used <= headroom RETURNING
//! used`: a concurrent debit blocks on the counter's row lock and PostgreSQL re-checks the
//! WHERE clause against the committed value before updating, so the sum of accepted debits
//! stays within the limit. Counters are BIGINT (i64): an amount above `i64::MAX` is refused
//! with an error, and a limit above it can only be reached as far as `i64::MAX` (past that, an
//! error, never a wrap).

use async_trait::async_trait;
use bridle_core::ports::{BudgetKind, BudgetStore, Debit, StoreError, StoreResult};

use super::{PostgresStore, db_err, to_i64, to_u64};

impl PostgresStore {
    async fn used_now(&self, tenant: &str, run_id: &str, kind: BudgetKind) -> StoreResult<u64> {
        let used: Option<i64> =
            sqlx::query_scalar("SELECT used FROM budgets WHERE tenant = $1 AND run_id = $2 AND kind = $3")
                .bind(tenant)
                .bind(run_id)
                .bind(kind.as_str())
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
        used.map_or(Ok(0), |u| to_u64("budget counter", u))
    }
}

#[async_trait]
impl BudgetStore for PostgresStore {
    async fn debit(&self, tenant: &str, run_id: &str, kind: BudgetKind, amount: u64, limit: u64) -> StoreResult<Debit> {
        let stored_amount = to_i64("budget debit", amount)?;
        // The most a counter can hold under this limit; `used <= headroom` is the condition
        // `used + amount <= limit` without any overflowing addition.
        let cap = limit.min(i64::MAX.unsigned_abs());
        if let Some(headroom) = cap.checked_sub(amount) {
            let headroom = to_i64("budget headroom", headroom)?;
            let used: Option<i64> = sqlx::query_scalar(
                "INSERT INTO budgets (tenant, run_id, kind, used) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (tenant, run_id, kind) DO UPDATE SET used = budgets.used + EXCLUDED.used
                 WHERE budgets.used <= $5
                 RETURNING used",
            )
            .bind(tenant)
            .bind(run_id)
            .bind(kind.as_str())
            .bind(stored_amount)
            .bind(headroom)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
            if let Some(used) = used {
                return Ok(Debit::Accepted { used: to_u64("budget counter", used)? });
            }
        }
        // Refused: report the counter as it stands (counters only grow, so it still refuses).
        let used = self.used_now(tenant, run_id, kind).await?;
        if used.checked_add(amount).is_some_and(|next| next <= limit) {
            return Err(StoreError::Unavailable(format!(
                "budget `{}` of run `{run_id}` would pass the largest storable counter",
                kind.as_str()
            )));
        }
        Ok(Debit::Exhausted { used })
    }

    async fn used(&self, tenant: &str, run_id: &str, kind: BudgetKind) -> StoreResult<u64> {
        self.used_now(tenant, run_id, kind).await
    }
}
