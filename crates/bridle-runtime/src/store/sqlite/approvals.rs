//! The approval ledger over SQLite: requests, optimistic grants, rejections.
//!
//! Grants are a JSON array with its length in `grant_count`; adding one is a single UPDATE
//! conditional on `status = 'pending'` and the count the caller saw. Consumption is not here:
//! it happens inside `JobStore::reserve` (`jobs.rs`), in the job's transaction.

use async_trait::async_trait;
use bridle_core::approval::{ApprovalRequest, Grant};
use bridle_core::plan::PlanHash;
use bridle_core::ports::{ApprovalLedger, Audit, Created, StoreError, StoreResult};
use sqlx::sqlite::SqliteRow;
use sqlx::{Sqlite, SqliteConnection, Transaction};
use time::OffsetDateTime;

use super::audit::append_in;
use super::{SqliteStore, db_err, is_unique_violation, to_i64, to_json, to_nanos};

/// The columns [`decode`] reads, in a SELECT list.
pub(super) const COLUMNS: &str = "id, tenant, plan, plan_hash, requester, level, status, grants, grant_count, \
     rejection_reason, created_at, expires_at, consumed_by, context";

/// A request of `tenant` by id, read through `conn` (inside a transaction when it matters).
pub(super) async fn fetch(conn: &mut SqliteConnection, tenant: &str, id: &str) -> StoreResult<Option<ApprovalRequest>> {
    let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = ? AND tenant = ?");
    let row = sqlx::query(&sql).bind(id).bind(tenant).fetch_optional(conn).await.map_err(db_err)?;
    row.as_ref().map(decode).transpose()
}

/// A request from a row of [`COLUMNS`].
pub(super) fn decode(row: &SqliteRow) -> StoreResult<ApprovalRequest> {
    crate::store::rows::approval(row)
}

/// After a conditional UPDATE changed nothing: `NotFound` if the request does not exist,
/// else `Contention`. Reads through the connection that attempted the update.
async fn refused(conn: &mut SqliteConnection, tenant: &str, id: &str) -> StoreError {
    let exists = sqlx::query("SELECT 1 FROM approvals WHERE id = ? AND tenant = ?")
        .bind(id)
        .bind(tenant)
        .fetch_optional(conn)
        .await;
    match exists {
        Ok(Some(_)) => StoreError::Contention(format!("approval `{id}`")),
        Ok(None) => StoreError::NotFound(format!("approval `{id}`")),
        Err(e) => db_err(e),
    }
}

/// Ends a grant's or rejection's transaction: with its audit records when the conditional
/// UPDATE changed the request, else rolled back with the reason it changed nothing.
async fn finish(
    mut tx: Transaction<'static, Sqlite>,
    changed: bool,
    audit: Audit,
    tenant: &str,
    id: &str,
) -> StoreResult<()> {
    if changed {
        append_in(&mut tx, audit).await?;
        return tx.commit().await.map_err(db_err);
    }
    let why = refused(&mut tx, tenant, id).await;
    tx.rollback().await.map_err(db_err)?;
    Err(why)
}

/// Inserts `r` unless a live pending request of its tenant holds its plan (then that one);
/// inside the writer's transaction.
///
/// INVARIANT: the `approvals_one_pending` unique index (0008) admits one pending, unlapsed
/// request per (tenant, plan hash); an expired one is lapsed first, so it never blocks a new one.
async fn create_in(tx: &mut Transaction<'static, Sqlite>, r: &ApprovalRequest) -> StoreResult<Created> {
    let what = |field: &str| format!("approval `{}` {field}", r.id);
    let now = to_nanos(&what("created_at"), r.created_at)?;
    sqlx::query(
        "UPDATE approvals SET lapsed = 1
         WHERE tenant = ? AND plan_hash = ? AND status = 'pending' AND lapsed = 0 AND expires_at <= ?",
    )
    .bind(&r.tenant)
    .bind(&r.plan_hash.0)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(db_err)?;
    let inserted = sqlx::query(
        "INSERT INTO approvals (id, tenant, plan, plan_hash, requester, level, status, grants, grant_count,
             rejection_reason, rejected_by, created_at, expires_at, consumed_by, context)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?)",
    )
    .bind(&r.id)
    .bind(&r.tenant)
    .bind(to_json(&what("plan"), &r.plan)?)
    .bind(&r.plan_hash.0)
    .bind(&r.requester)
    .bind(r.level.as_str())
    .bind(r.status.as_str())
    .bind(to_json(&what("grants"), &r.grants)?)
    .bind(to_i64(&what("grant count"), u64::try_from(r.grants.len()).unwrap_or(u64::MAX))?)
    .bind(&r.rejection_reason)
    .bind(now)
    .bind(to_nanos(&what("expires_at"), r.expires_at)?)
    .bind(&r.consumed_by)
    .bind(r.context.as_ref().map(serde_json::Value::to_string))
    .execute(&mut **tx)
    .await;
    match inserted {
        Ok(_) => Ok(Created::New),
        Err(e) if is_unique_violation(&e) => match holder(tx, &r.tenant, &r.plan_hash).await? {
            Some(existing) => Ok(Created::Existing(Box::new(existing))),
            None => Err(StoreError::Duplicate(format!("approval `{}`", r.id))),
        },
        Err(e) => Err(db_err(e)),
    }
}

/// The pending request holding a plan's one pending slot, if any.
async fn holder(
    conn: &mut SqliteConnection,
    tenant: &str,
    plan_hash: &PlanHash,
) -> StoreResult<Option<ApprovalRequest>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM approvals WHERE tenant = ? AND plan_hash = ? AND status = 'pending' AND lapsed = 0"
    );
    let row = sqlx::query(&sql).bind(tenant).bind(&plan_hash.0).fetch_optional(conn).await.map_err(db_err)?;
    row.as_ref().map(decode).transpose()
}

#[async_trait]
impl ApprovalLedger for SqliteStore {
    async fn create_request(&self, r: &ApprovalRequest, audit: Audit) -> StoreResult<Created> {
        let mut tx = self.write_tx().await?;
        let created = create_in(&mut tx, r).await?;
        if created == Created::New {
            append_in(&mut tx, audit).await?;
            tx.commit().await.map_err(db_err)?;
        } else {
            tx.rollback().await.map_err(db_err)?;
        }
        Ok(created)
    }

    async fn create_prepared_request(&self, r: &ApprovalRequest, audit: Audit) -> StoreResult<()> {
        let what = |field: &str| format!("approval `{}` {field}", r.id);
        let mut tx = self.write_tx().await?;
        // `lapsed` from the start: an operator-prepared request never holds its plan's slot.
        let inserted = sqlx::query(
            "INSERT INTO approvals (id, tenant, plan, plan_hash, requester, level, status, grants, grant_count,
                 rejection_reason, rejected_by, created_at, expires_at, consumed_by, context, lapsed)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, ?, 1)",
        )
        .bind(&r.id)
        .bind(&r.tenant)
        .bind(to_json(&what("plan"), &r.plan)?)
        .bind(&r.plan_hash.0)
        .bind(&r.requester)
        .bind(r.level.as_str())
        .bind(r.status.as_str())
        .bind(to_json(&what("grants"), &r.grants)?)
        .bind(to_i64(&what("grant count"), u64::try_from(r.grants.len()).unwrap_or(u64::MAX))?)
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
            Err(e) if is_unique_violation(&e) => Err(StoreError::Duplicate(format!("approval `{}`", r.id))),
            Err(e) => Err(db_err(e)),
        }
    }

    async fn get_request(&self, tenant: &str, id: &str) -> StoreResult<Option<ApprovalRequest>> {
        let mut conn = self.reader.acquire().await.map_err(db_err)?;
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
             WHERE tenant = ? AND plan_hash = ? AND status IN ('granted', 'pending') AND expires_at > ?
             ORDER BY CASE status WHEN 'granted' THEN 0 ELSE 1 END, created_at, id
             LIMIT 1"
        );
        let row = sqlx::query(&sql)
            .bind(tenant)
            .bind(&plan_hash.0)
            .bind(to_nanos("now", now)?)
            .fetch_optional(&self.reader)
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
        let expected = to_i64("expected grant count", u64::try_from(expected_grants).unwrap_or(u64::MAX))?;
        let grant_json = to_json(&format!("grant of approval `{id}`"), grant)?;
        let mut conn = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE approvals
             SET grants = json_insert(grants, '$[#]', json(?)),
                 grant_count = grant_count + 1,
                 status = CASE WHEN ? THEN 'granted' ELSE status END
             WHERE id = ? AND tenant = ? AND status = 'pending' AND grant_count = ?",
        )
        .bind(grant_json)
        .bind(granted)
        .bind(id)
        .bind(tenant)
        .bind(expected)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        finish(conn, done.rows_affected() == 1, audit, tenant, id).await
    }

    async fn reject_request(
        &self,
        tenant: &str,
        id: &str,
        approver: &str,
        reason: &str,
        audit: Audit,
    ) -> StoreResult<()> {
        let mut conn = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE approvals SET status = 'rejected', rejection_reason = ?, rejected_by = ?
             WHERE id = ? AND tenant = ? AND status = 'pending'",
        )
        .bind(reason)
        .bind(approver)
        .bind(id)
        .bind(tenant)
        .execute(&mut *conn)
        .await
        .map_err(db_err)?;
        finish(conn, done.rows_affected() == 1, audit, tenant, id).await
    }

    async fn list_pending(&self, tenant: &str, now: OffsetDateTime) -> StoreResult<Vec<ApprovalRequest>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM approvals
             WHERE tenant = ? AND status = 'pending' AND expires_at > ?
             ORDER BY created_at, id"
        );
        let rows =
            sqlx::query(&sql).bind(tenant).bind(to_nanos("now", now)?).fetch_all(&self.reader).await.map_err(db_err)?;
        rows.iter().map(decode).collect()
    }
}
