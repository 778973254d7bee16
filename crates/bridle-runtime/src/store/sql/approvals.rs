//! The approval ledger: requests, optimistic grants, rejections.
//!
//! Grants are a JSON array (JSONB on PostgreSQL) with its length in `grant_count`; adding one is
//! a single UPDATE conditional on `status = 'pending'` and the count the caller saw, which
//! PostgreSQL re-checks against the latest committed row once it holds the row lock, so of two
//! writers granting on the same count exactly one succeeds. Consumption is not here: it happens
//! inside `JobStore::reserve` (`jobs.rs`), in the job's transaction.

use async_trait::async_trait;
use bridle_core::approval::{ApprovalRequest, Grant};
use bridle_core::plan::PlanHash;
use bridle_core::ports::{ApprovalLedger, Audit, Created, StoreError, StoreResult};
use time::OffsetDateTime;

use super::audit::append_in;
use super::{Dialect, SqlStore, args};
use crate::store::rows::{self, Columns, to_i64, to_json, to_nanos};

/// Rounds of [`ApprovalLedger::create_request`] before it reports contention.
const CREATE_ROUNDS: usize = 4;

/// The columns [`rows::approval`] reads, in a SELECT list.
fn columns<D: Dialect>() -> String {
    format!(
        "id, tenant, plan, plan_hash, requester, level, status, {}, grant_count, rejection_reason, created_at, \
         expires_at, consumed_by, context",
        D::GRANTS
    )
}

/// A request of `tenant` by id, read through `conn` (inside a transaction when it matters).
pub(super) async fn fetch<D: Dialect>(
    conn: &mut D::Conn,
    tenant: &str,
    id: &str,
) -> StoreResult<Option<ApprovalRequest>> {
    let sql = format!("SELECT {} FROM approvals WHERE id = $1 AND tenant = $2", columns::<D>());
    let row = D::fetch_optional(conn, &sql, args![id, tenant]).await?;
    row.as_ref().map(rows::approval).transpose()
}

/// Ends a grant's or rejection's transaction: with its audit records when the conditional
/// UPDATE changed the request, else rolled back with the reason it changed nothing (`NotFound`
/// if the request does not exist, else `Contention`).
async fn finish<D: Dialect>(mut tx: D::Tx, changed: bool, audit: Audit, tenant: &str, id: &str) -> StoreResult<()> {
    if changed {
        // INVARIANT: the decision commits with its audit records (the audit lock taken last).
        append_in::<D>(&mut tx, audit).await?;
        return D::commit(tx).await;
    }
    let exists =
        D::fetch_optional(&mut tx, "SELECT 1 AS n FROM approvals WHERE id = $1 AND tenant = $2", args![id, tenant])
            .await;
    D::rollback(tx).await?;
    match exists? {
        Some(_) => Err(StoreError::Contention(format!("approval `{id}`"))),
        None => Err(StoreError::NotFound(format!("approval `{id}`"))),
    }
}

/// Inserts `r` (`lapsed` as given), or nothing if it would break a unique constraint (its id,
/// or its plan's one pending slot); whether it inserted.
async fn insert<D: Dialect>(conn: &mut D::Conn, r: &ApprovalRequest, lapsed: bool) -> StoreResult<bool> {
    let what = |field: &str| format!("approval `{}` {field}", r.id);
    let plan = to_json(&what("plan"), &r.plan)?;
    let grants = to_json(&what("grants"), &r.grants)?;
    let context = r.context.as_ref().map(serde_json::Value::to_string);
    let sql = format!(
        "INSERT INTO approvals (id, tenant, plan, plan_hash, requester, level, status, grants, grant_count,
             rejection_reason, rejected_by, created_at, expires_at, consumed_by, context, lapsed)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8{}, $9, $10, NULL, $11, $12, $13, $14, $15)
         ON CONFLICT DO NOTHING
         RETURNING id",
        D::JSONB
    );
    let inserted = D::fetch_optional(
        conn,
        &sql,
        args![
            &r.id,
            &r.tenant,
            &plan,
            &r.plan_hash.0,
            &r.requester,
            r.level.as_str(),
            r.status.as_str(),
            &grants,
            count(&what("grant count"), r.grants.len())?,
            &r.rejection_reason,
            to_nanos(what("created_at"), r.created_at)?,
            to_nanos(what("expires_at"), r.expires_at)?,
            &r.consumed_by,
            context.as_deref(),
            lapsed,
        ],
    )
    .await?;
    Ok(inserted.is_some())
}

/// One round of `create_request`: lapses the plan's expired pending request, then inserts `r`
/// unless a pending request holds the plan. `Some(New)`: inserted; `Some(Existing)`: the holder;
/// `None`: nothing inserted and no holder visible (it was decided meanwhile, or the id is taken).
///
/// INVARIANT: the `approvals_one_pending` unique index admits one pending, unlapsed request per
/// (tenant, plan hash). On PostgreSQL `ON CONFLICT DO NOTHING` waits for a concurrent inserter of
/// the same plan to commit or roll back, so of many replicas racing exactly one inserts; the
/// others then read the committed holder (READ COMMITTED: a new statement sees it). On SQLite the
/// writer's lock runs one round at a time.
async fn create_in<D: Dialect>(conn: &mut D::Conn, r: &ApprovalRequest) -> StoreResult<Option<Created>> {
    let now = to_nanos(format!("approval `{}` created_at", r.id), r.created_at)?;
    let sql = format!(
        "UPDATE approvals SET lapsed = TRUE
         WHERE tenant = $1 AND plan_hash = $2 AND status = 'pending' AND {} AND expires_at <= $3",
        D::NOT_LAPSED
    );
    D::execute(conn, &sql, args![&r.tenant, &r.plan_hash.0, now]).await?;
    if insert::<D>(conn, r, false).await? {
        return Ok(Some(Created::New));
    }
    let sql = format!(
        "SELECT {} FROM approvals WHERE tenant = $1 AND plan_hash = $2 AND status = 'pending' AND {}",
        columns::<D>(),
        D::NOT_LAPSED
    );
    let row = D::fetch_optional(conn, &sql, args![&r.tenant, &r.plan_hash.0]).await?;
    Ok(row.as_ref().map(rows::approval).transpose()?.map(|e| Created::Existing(Box::new(e))))
}

fn count(what: &str, n: usize) -> StoreResult<i64> {
    to_i64(what, u64::try_from(n).unwrap_or(u64::MAX))
}

#[async_trait]
impl<D: Dialect> ApprovalLedger for SqlStore<D> {
    async fn create_request(&self, r: &ApprovalRequest, audit: Audit) -> StoreResult<Created> {
        // Losing to a request that was then decided (or to a duplicate id) is retried a few
        // times; each round is one transaction.
        for _ in 0..CREATE_ROUNDS {
            let mut tx = self.db().begin().await?;
            match create_in::<D>(&mut tx, r).await? {
                Some(Created::New) => {
                    append_in::<D>(&mut tx, audit).await?;
                    D::commit(tx).await?;
                    return Ok(Created::New);
                }
                Some(existing) => {
                    D::rollback(tx).await?;
                    return Ok(existing);
                }
                None => {
                    let taken =
                        D::fetch_optional(&mut tx, "SELECT 1 AS n FROM approvals WHERE id = $1", args![&r.id]).await?;
                    D::rollback(tx).await?;
                    if taken.is_some() {
                        return Err(StoreError::Duplicate(format!("approval `{}`", r.id)));
                    }
                }
            }
        }
        Err(StoreError::Contention(format!("pending approval of plan `{}`", r.plan_hash.0)))
    }

    async fn create_prepared_request(&self, r: &ApprovalRequest, audit: Audit) -> StoreResult<()> {
        let mut tx = self.db().begin().await?;
        // `lapsed` from the start: an operator-prepared request never holds its plan's slot, so
        // only its id can conflict.
        if !insert::<D>(&mut tx, r, true).await? {
            return Err(StoreError::Duplicate(format!("approval `{}`", r.id)));
        }
        // INVARIANT: the request commits with its `approval_requested` event.
        append_in::<D>(&mut tx, audit).await?;
        D::commit(tx).await
    }

    async fn get_request(&self, tenant: &str, id: &str) -> StoreResult<Option<ApprovalRequest>> {
        let mut conn = self.db().read().await?;
        fetch::<D>(&mut conn, tenant, id).await
    }

    async fn find_for_plan(
        &self,
        tenant: &str,
        plan_hash: &PlanHash,
        now: OffsetDateTime,
    ) -> StoreResult<Option<ApprovalRequest>> {
        // Granted before pending; then oldest first, ties by id (as the memory store).
        let sql = format!(
            "SELECT {} FROM approvals
             WHERE tenant = $1 AND plan_hash = $2 AND status IN ('granted', 'pending') AND expires_at > $3
             ORDER BY CASE status WHEN 'granted' THEN 0 ELSE 1 END, created_at, id
             LIMIT 1",
            columns::<D>()
        );
        let mut conn = self.db().read().await?;
        let row = D::fetch_optional(&mut conn, &sql, args![tenant, &plan_hash.0, to_nanos("now", now)?]).await?;
        row.as_ref().map(rows::approval).transpose()
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
        let sql = format!(
            "UPDATE approvals
             SET grants = {},
                 grant_count = grant_count + 1,
                 status = CASE WHEN $2 THEN 'granted' ELSE status END
             WHERE id = $3 AND tenant = $4 AND status = 'pending' AND grant_count = $5",
            D::APPEND_GRANT
        );
        let mut tx = self.db().begin().await?;
        let done = D::execute(&mut tx, &sql, args![&grant_json, granted, id, tenant, expected]).await?;
        finish::<D>(tx, done == 1, audit, tenant, id).await
    }

    async fn reject_request(
        &self,
        tenant: &str,
        id: &str,
        approver: &str,
        reason: &str,
        audit: Audit,
    ) -> StoreResult<()> {
        let mut tx = self.db().begin().await?;
        let done = D::execute(
            &mut tx,
            "UPDATE approvals SET status = 'rejected', rejection_reason = $1, rejected_by = $2
             WHERE id = $3 AND tenant = $4 AND status = 'pending'",
            args![reason, approver, id, tenant],
        )
        .await?;
        finish::<D>(tx, done == 1, audit, tenant, id).await
    }

    async fn list_pending(&self, tenant: &str, now: OffsetDateTime) -> StoreResult<Vec<ApprovalRequest>> {
        let sql = format!(
            "SELECT {} FROM approvals
             WHERE tenant = $1 AND status = 'pending' AND expires_at > $2
             ORDER BY created_at, id",
            columns::<D>()
        );
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(&mut conn, &sql, args![tenant, to_nanos("now", now)?]).await?;
        rows.iter().map(rows::approval).collect()
    }

    async fn count_pending(&self, now: OffsetDateTime) -> StoreResult<Vec<(String, u64)>> {
        let sql = "SELECT tenant, COUNT(*) AS n FROM approvals WHERE status = 'pending' AND expires_at > $1
                   GROUP BY tenant ORDER BY tenant";
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(&mut conn, sql, args![to_nanos("now", now)?]).await?;
        rows.iter().map(|r| Ok((r.text("tenant")?, u64::try_from(r.int("n")?).unwrap_or(0)))).collect()
    }
}
