//! The approval ledger over PostgreSQL: requests, optimistic grants, rejections.
//!
//! Grants are a JSONB array with its length in `grant_count`; adding one is a single UPDATE
//! conditional on `status = 'pending'` and the count the caller saw, which PostgreSQL re-checks
//! against the latest committed row once it holds the row lock, so of two replicas granting on
//! the same count exactly one succeeds. Consumption is not here: it happens inside
//! `JobStore::reserve` (`jobs.rs`), in the job's transaction.

use async_trait::async_trait;
use bridle_core::approval::{ApprovalRequest, Grant};
use bridle_core::plan::PlanHash;
use bridle_core::ports::{ApprovalLedger, Audit, Created, StoreError, StoreResult};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Postgres, Transaction};
use time::OffsetDateTime;

use super::audit::append_in;
use super::{PostgresStore, db_err, to_i64, to_json, to_nanos};

/// The columns [`decode`] reads, in a SELECT list (`grants` as JSON text).
pub(super) const COLUMNS: &str = "id, tenant, plan, plan_hash, requester, level, status, grants::text AS grants, \
     grant_count, rejection_reason, created_at, expires_at, consumed_by, context";

/// A request of `tenant` by id, read through `conn` (inside a transaction when it matters).
pub(super) async fn fetch(conn: &mut PgConnection, tenant: &str, id: &str) -> StoreResult<Option<ApprovalRequest>> {
    let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = $1 AND tenant = $2");
    let row = sqlx::query(&sql).bind(id).bind(tenant).fetch_optional(conn).await.map_err(db_err)?;
    row.as_ref().map(decode).transpose()
}

/// A request from a row of [`COLUMNS`].
pub(super) fn decode(row: &PgRow) -> StoreResult<ApprovalRequest> {
    crate::store::rows::approval(row)
}

/// After a conditional UPDATE changed nothing: `NotFound` if the request does not exist,
/// else `Contention`.
async fn refused(store: &PostgresStore, tenant: &str, id: &str) -> StoreError {
    let exists = sqlx::query("SELECT 1 FROM approvals WHERE id = $1 AND tenant = $2")
        .bind(id)
        .bind(tenant)
        .fetch_optional(&store.pool)
        .await;
    match exists {
        Ok(Some(_)) => StoreError::Contention(format!("approval `{id}`")),
        Ok(None) => StoreError::NotFound(format!("approval `{id}`")),
        Err(e) => db_err(e),
    }
}

/// Rounds of [`ApprovalLedger::create_request`] before it reports contention.
const CREATE_ROUNDS: usize = 4;

/// Ends a grant's or rejection's transaction: with its audit records when the conditional
/// UPDATE changed the request, else rolled back with the reason it changed nothing.
async fn finish(
    store: &PostgresStore,
    mut tx: Transaction<'static, Postgres>,
    changed: bool,
    audit: Audit,
    tenant: &str,
    id: &str,
) -> StoreResult<()> {
    if !changed {
        tx.rollback().await.map_err(db_err)?;
        return Err(refused(store, tenant, id).await);
    }
    // INVARIANT: the decision commits with its audit records (the audit lock taken last).
    append_in(&mut tx, audit).await?;
    tx.commit().await.map_err(db_err)
}

/// One round of `create_request`: lapses the plan's expired pending request, then inserts `r`
/// unless a pending request holds the plan. `Some(New)`: inserted; `Some(Existing)`: the holder;
/// `None`: nothing inserted and no holder visible (it was decided meanwhile, or the id is taken).
///
/// INVARIANT: the `approvals_one_pending` unique index (0007) admits one pending, unlapsed
/// request per (tenant, plan hash). `ON CONFLICT DO NOTHING` waits for a concurrent inserter of
/// the same plan to commit or roll back, so of many replicas racing exactly one inserts; the
/// others then read the committed holder (READ COMMITTED: a new statement sees it).
async fn create_in(tx: &mut Transaction<'static, Postgres>, r: &ApprovalRequest) -> StoreResult<Option<Created>> {
    let what = |field: &str| format!("approval `{}` {field}", r.id);
    let now = to_nanos(&what("created_at"), r.created_at)?;
    sqlx::query(
        "UPDATE approvals SET lapsed = TRUE
         WHERE tenant = $1 AND plan_hash = $2 AND status = 'pending' AND NOT lapsed AND expires_at <= $3",
    )
    .bind(&r.tenant)
    .bind(&r.plan_hash.0)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    let inserted: Option<String> = sqlx::query_scalar(
        "INSERT INTO approvals (id, tenant, plan, plan_hash, requester, level, status, grants, grant_count,
             rejection_reason, rejected_by, created_at, expires_at, consumed_by, context)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, NULL, $11, $12, $13, $14)
         ON CONFLICT DO NOTHING
         RETURNING id",
    )
    .bind(&r.id)
    .bind(&r.tenant)
    .bind(to_json(&what("plan"), &r.plan)?)
    .bind(&r.plan_hash.0)
    .bind(&r.requester)
    .bind(r.level.as_str())
    .bind(r.status.as_str())
    .bind(to_json(&what("grants"), &r.grants)?)
    .bind(count(&what("grant count"), r.grants.len())?)
    .bind(&r.rejection_reason)
    .bind(now)
    .bind(to_nanos(&what("expires_at"), r.expires_at)?)
    .bind(&r.consumed_by)
    .bind(r.context.as_ref().map(serde_json::Value::to_string))
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?;
    if inserted.is_some() {
        return Ok(Some(Created::New));
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM approvals WHERE tenant = $1 AND plan_hash = $2 AND status = 'pending' AND NOT lapsed"
    );
    let row = sqlx::query(&sql).bind(&r.tenant).bind(&r.plan_hash.0).fetch_optional(&mut **tx).await.map_err(db_err)?;
    Ok(row.as_ref().map(decode).transpose()?.map(|e| Created::Existing(Box::new(e))))
}

fn count(what: &str, n: usize) -> StoreResult<i64> {
    to_i64(what, u64::try_from(n).unwrap_or(u64::MAX))
}

#[async_trait]
impl ApprovalLedger for PostgresStore {
    async fn create_request(&self, r: &ApprovalRequest, audit: Audit) -> StoreResult<Created> {
        // Losing to a request that was then decided (or to a duplicate id) is retried a few
        // times; each round is one transaction.
        for _ in 0..CREATE_ROUNDS {
            let mut tx = self.pool.begin().await.map_err(db_err)?;
            match create_in(&mut tx, r).await? {
                Some(Created::New) => {
                    append_in(&mut tx, audit).await?;
                    tx.commit().await.map_err(db_err)?;
                    return Ok(Created::New);
                }
                Some(existing) => {
                    tx.rollback().await.map_err(db_err)?;
                    return Ok(existing);
                }
                None => {
                    let taken = sqlx::query("SELECT 1 FROM approvals WHERE id = $1")
                        .bind(&r.id)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    tx.rollback().await.map_err(db_err)?;
                    if taken.is_some() {
                        return Err(StoreError::Duplicate(format!("approval `{}`", r.id)));
                    }
                }
            }
        }
        Err(StoreError::Contention(format!("pending approval of plan `{}`", r.plan_hash.0)))
    }

    async fn create_prepared_request(&self, r: &ApprovalRequest, audit: Audit) -> StoreResult<()> {
        let what = |field: &str| format!("approval `{}` {field}", r.id);
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        // `lapsed` from the start: an operator-prepared request never holds its plan's slot.
        let inserted = sqlx::query(
            "INSERT INTO approvals (id, tenant, plan, plan_hash, requester, level, status, grants, grant_count,
                 rejection_reason, rejected_by, created_at, expires_at, consumed_by, context, lapsed)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10, NULL, $11, $12, $13, $14, TRUE)",
        )
        .bind(&r.id)
        .bind(&r.tenant)
        .bind(to_json(&what("plan"), &r.plan)?)
        .bind(&r.plan_hash.0)
        .bind(&r.requester)
        .bind(r.level.as_str())
        .bind(r.status.as_str())
        .bind(to_json(&what("grants"), &r.grants)?)
        .bind(count(&what("grant count"), r.grants.len())?)
        .bind(&r.rejection_reason)
        .bind(to_nanos(&what("created_at"), r.created_at)?)
        .bind(to_nanos(&what("expires_at"), r.expires_at)?)
        .bind(&r.consumed_by)
        .bind(r.context.as_ref().map(serde_json::Value::to_string))
        .execute(&mut *tx)
        .await;
        match inserted {
            Ok(_) => {
                // INVARIANT: the request commits with its `approval_requested` event.
                append_in(&mut tx, audit).await?;
                tx.commit().await.map_err(db_err)
            }
            Err(e) if super::violates(&e, "approvals_pkey") => {
                Err(StoreError::Duplicate(format!("approval `{}`", r.id)))
            }
            Err(e) => Err(db_err(e)),
        }
    }

    async fn get_request(&self, tenant: &str, id: &str) -> StoreResult<Option<ApprovalRequest>> {
        let mut conn = self.pool.acquire().await.map_err(db_err)?;
        fetch(&mut conn, tenant, id).await
    }

    async fn find_for_plan(
        &self,
        tenant: &str,
        plan_hash: &PlanHash,
        now: OffsetDateTime,
    ) -> StoreResult<Option<ApprovalRequest>> {
        // Granted before pending; then oldest first, ties by id (as the memory store).
        let sql = format!(
            "SELECT {COLUMNS} FROM approvals
             WHERE tenant = $1 AND plan_hash = $2 AND status IN ('granted', 'pending') AND expires_at > $3
             ORDER BY CASE status WHEN 'granted' THEN 0 ELSE 1 END, created_at, id
             LIMIT 1"
        );
        let row = sqlx::query(&sql)
            .bind(tenant)
            .bind(&plan_hash.0)
            .bind(to_nanos("now", now)?)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        row.as_ref().map(decode).transpose()
    }

    async fn add_grant(
        &self,
        tenant: &str,
        id: &str,
        expected_grants: usize,
        grant: &Grant,
        granted: bool,
        audit: Audit,
    ) -> StoreResult<()> {
        let expected = count("expected grant count", expected_grants)?;
        let grant_json = to_json(&format!("grant of approval `{id}`"), grant)?;
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query(
            "UPDATE approvals
             SET grants = grants || jsonb_build_array($1::jsonb),
                 grant_count = grant_count + 1,
                 status = CASE WHEN $2 THEN 'granted' ELSE status END
             WHERE id = $3 AND tenant = $4 AND status = 'pending' AND grant_count = $5",
        )
        .bind(grant_json)
        .bind(granted)
        .bind(id)
        .bind(tenant)
        .bind(expected)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        finish(self, tx, done.rows_affected() == 1, audit, tenant, id).await
    }

    async fn reject_request(
        &self,
        tenant: &str,
        id: &str,
        approver: &str,
        reason: &str,
        audit: Audit,
    ) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query(
            "UPDATE approvals SET status = 'rejected', rejection_reason = $1, rejected_by = $2
             WHERE id = $3 AND tenant = $4 AND status = 'pending'",
        )
        .bind(reason)
        .bind(approver)
        .bind(id)
        .bind(tenant)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        finish(self, tx, done.rows_affected() == 1, audit, tenant, id).await
    }

    async fn list_pending(&self, tenant: &str, now: OffsetDateTime) -> StoreResult<Vec<ApprovalRequest>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM approvals
             WHERE tenant = $1 AND status = 'pending' AND expires_at > $2
             ORDER BY created_at, id"
        );
        let rows =
            sqlx::query(&sql).bind(tenant).bind(to_nanos("now", now)?).fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter().map(decode).collect()
    }
}
