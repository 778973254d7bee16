//! Jobs and idempotency keys, and `reserve`: key claim, approval consumption and job insert in
//! one write transaction, safe with any number of writers racing (replicas, on PostgreSQL).
//!
//! INVARIANT: a refused `reserve` (key taken, approval refused, duplicate id) writes nothing;
//! the transaction is rolled back before it returns.
//!
//! How exactly one of many concurrent consumers wins (on SQLite the writer's lock already runs
//! one reserve at a time; on PostgreSQL, under READ COMMITTED):
//! 1. `INSERT … ON CONFLICT DO NOTHING RETURNING id` claims the job id and the idempotency key.
//!    If another transaction holds an uncommitted row with the same key, PostgreSQL waits for it
//!    and then either inserts (it rolled back) or reports the conflict (it committed): two
//!    reserves never both claim one key.
//! 2. `UPDATE approvals SET status = 'consumed' … WHERE … status = 'granted' … RETURNING id`
//!    consumes the approval. A second consumer blocks on the row lock the first one holds; when
//!    the first commits, PostgreSQL re-evaluates the WHERE clause against the committed row
//!    (`consumed`), so the second updates nothing and is refused (`approval_replayed`). No
//!    `SELECT … FOR UPDATE` is needed: the conditional UPDATE is the check and the write.
//! 3. Append the reservation's audit records (the tenant's audit lock, taken last), commit.
//!    Lock order is always job key, then approval row, then audit lock, so two reserves cannot
//!    deadlock.

use async_trait::async_trait;
use bridle_core::approval;
use bridle_core::job::{Job, JobStatus, StoredOutcome};
use bridle_core::ports::{Audit, Consume, JobStore, Reserved, StoreError, StoreResult};
use time::OffsetDateTime;

use super::audit::append_in;
use super::{Dialect, SqlStore, approvals, args};
use crate::store::memory::{job_level, replayed};
use crate::store::rows::{self, to_json, to_nanos};

/// The final statuses (`JobStatus::is_final`) as an SQL list, as in the `jobs_unsettled` index.
const FINAL: &str = "('succeeded', 'failed')";

/// The columns [`rows::job`] reads, in a SELECT list.
const COLUMNS: &str = "id, tenant, subject, idempotency_key, plan, plan_hash, executor, approval_id, status, \
     outcome, created_at, updated_at";

async fn by_key<D: Dialect>(conn: &mut D::Conn, tenant: &str, subject: &str, key: &str) -> StoreResult<Option<Job>> {
    let sql = format!("SELECT {COLUMNS} FROM jobs WHERE tenant = $1 AND subject = $2 AND idempotency_key = $3");
    let row = D::fetch_optional(conn, &sql, args![tenant, subject, key]).await?;
    row.as_ref().map(rows::job).transpose()
}

/// Step 1: inserts the job unless its id or key is taken; `false` if either is.
async fn claim<D: Dialect>(conn: &mut D::Conn, job: &Job) -> StoreResult<bool> {
    let what = |field: &str| format!("job `{}` {field}", job.id);
    let outcome = job.outcome.as_ref().map(StoredOutcome::as_str);
    let plan = to_json(&what("plan"), &job.plan)?;
    let inserted = D::fetch_optional(
        conn,
        "INSERT INTO jobs (id, tenant, subject, idempotency_key, plan, plan_hash, executor, approval_id, status,
             outcome, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT DO NOTHING
         RETURNING id",
        args![
            &job.id,
            &job.tenant,
            &job.subject,
            &job.idempotency_key,
            &plan,
            &job.plan_hash.0,
            &job.executor,
            &job.approval_id,
            job.status.as_str(),
            outcome,
            to_nanos(what("created_at"), job.created_at)?,
            to_nanos(what("updated_at"), job.updated_at)?,
        ],
    )
    .await?;
    Ok(inserted.is_some())
}

/// Why a claim failed: the key's holder if the key is taken (checked first, as the memory
/// store does), else a duplicate id.
async fn claim_refused<D: Dialect>(conn: &mut D::Conn, job: &Job) -> StoreResult<Reserved> {
    if let Some(key) = &job.idempotency_key
        && let Some(existing) = by_key::<D>(conn, &job.tenant, &job.subject, key).await?
    {
        return Ok(Reserved::KeyTaken(Box::new(existing)));
    }
    Err(StoreError::Duplicate(format!("job `{}`", job.id)))
}

/// Step 2: consumes the approval with one conditional UPDATE; on refusal, the rejection `bind`
/// gives for the request as it now stands (or `approval_replayed` when it looks usable: a race
/// lost).
async fn consume<D: Dialect>(
    conn: &mut D::Conn,
    job: &Job,
    c: &Consume,
) -> StoreResult<Result<(), bridle_core::Rejection>> {
    let consumed = D::fetch_optional(
        conn,
        "UPDATE approvals SET status = 'consumed', consumed_by = $1
         WHERE tenant = $2 AND id = $3 AND status = 'granted' AND plan_hash = $4 AND expires_at > $5
         RETURNING id",
        args![&job.id, &job.tenant, &c.approval_id, &c.plan_hash.0, to_nanos("now", c.now)?],
    )
    .await?;
    if consumed.is_some() {
        return Ok(Ok(()));
    }
    let current = approvals::fetch::<D>(conn, &job.tenant, &c.approval_id).await?;
    let current = current.as_ref();
    let why = approval::bind(&c.approval_id, current, &c.plan_hash, job_level(current), c.now)
        .err()
        .unwrap_or_else(|| replayed(&c.approval_id));
    Ok(Err(why))
}

/// The body of `reserve`; the caller commits on `Reserved::Reserved` and rolls back otherwise.
async fn reserve_in<D: Dialect>(conn: &mut D::Conn, job: &Job, c: Option<&Consume>) -> StoreResult<Reserved> {
    if !claim::<D>(conn, job).await? {
        return claim_refused::<D>(conn, job).await;
    }
    if let Some(c) = c
        && let Err(why) = consume::<D>(conn, job, c).await?
    {
        return Ok(Reserved::ApprovalRefused(why));
    }
    Ok(Reserved::Reserved)
}

#[async_trait]
impl<D: Dialect> JobStore for SqlStore<D> {
    async fn find_by_key(&self, tenant: &str, subject: &str, key: &str) -> StoreResult<Option<Job>> {
        let mut conn = self.db().read().await?;
        by_key::<D>(&mut conn, tenant, subject, key).await
    }

    async fn reserve(&self, job: &Job, consume: Option<&Consume>, audit: Audit) -> StoreResult<Reserved> {
        let mut tx = self.db().begin().await?;
        match reserve_in::<D>(&mut tx, job, consume).await {
            Ok(Reserved::Reserved) => {
                // INVARIANT: the reservation (and consumption) commits with its audit records;
                // the audit lock is taken last, after the job key and the approval row.
                append_in::<D>(&mut tx, audit).await?;
                D::commit(tx).await?;
                Ok(Reserved::Reserved)
            }
            outcome => {
                D::rollback(tx).await?;
                outcome
            }
        }
    }

    async fn transition(
        &self,
        id: &str,
        from: JobStatus,
        to: JobStatus,
        outcome: Option<StoredOutcome>,
        now: OffsetDateTime,
        audit: Audit,
    ) -> StoreResult<bool> {
        let mut tx = self.db().begin().await?;
        let done = D::execute(
            &mut tx,
            "UPDATE jobs SET status = $1, outcome = COALESCE($2, outcome), updated_at = $3
             WHERE id = $4 AND status = $5",
            args![to.as_str(), outcome.as_ref().map(StoredOutcome::as_str), to_nanos("now", now)?, id, from.as_str()],
        )
        .await?;
        if done != 1 {
            D::rollback(tx).await?;
            return Ok(false);
        }
        // INVARIANT: the move commits with its audit records, or not at all.
        append_in::<D>(&mut tx, audit).await?;
        D::commit(tx).await?;
        Ok(true)
    }

    async fn get_job(&self, id: &str) -> StoreResult<Option<Job>> {
        let sql = format!("SELECT {COLUMNS} FROM jobs WHERE id = $1");
        let mut conn = self.db().read().await?;
        let row = D::fetch_optional(&mut conn, &sql, args![id]).await?;
        row.as_ref().map(rows::job).transpose()
    }

    async fn unsettled(&self) -> StoreResult<Vec<Job>> {
        // INVARIANT: the same condition as the `jobs_unsettled` partial index, so it is used.
        let sql = format!("SELECT {COLUMNS} FROM jobs WHERE status NOT IN {FINAL} ORDER BY created_at, id");
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(&mut conn, &sql, &[]).await?;
        rows.iter().map(rows::job).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_list_matches_is_final_and_both_schemas() {
        for name in ["reserved", "dispatched", "succeeded", "failed", "unknown"] {
            let status = JobStatus::parse(name);
            assert_eq!(status.map(JobStatus::is_final), Some(FINAL.contains(&format!("'{name}'"))), "{name}");
        }
        for schema in [
            include_str!("../../../migrations/sqlite/0001_init.sql"),
            include_str!("../../../migrations/postgres/0002_stores.sql"),
        ] {
            assert!(schema.contains(&format!("WHERE status NOT IN {FINAL}")));
        }
    }
}
