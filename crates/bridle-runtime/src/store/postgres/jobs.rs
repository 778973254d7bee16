//! Jobs and idempotency keys over PostgreSQL, and `reserve`: key claim, approval consumption
//! and job insert in one transaction, safe with any number of replicas racing.
//!
//! INVARIANT: a refused `reserve` (key taken, approval refused, duplicate id) writes nothing;
//! the transaction is rolled back before it returns.
//!
//! How exactly one of many concurrent consumers wins, under READ COMMITTED:
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
use bridle_core::job::{Job, JobStatus};
use bridle_core::ports::{Audit, Consume, JobStore, Reserved, StoreError, StoreResult};
use serde_json::Value;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Postgres, Transaction};
use time::OffsetDateTime;

use super::audit::append_in;
use super::{PostgresStore, approvals, db_err, to_json, to_nanos};
use crate::store::memory::{job_level, replayed};

/// The final statuses (`JobStatus::is_final`) as an SQL list, as in the `jobs_unsettled` index.
const FINAL: &str = "('succeeded', 'failed')";

/// The columns [`decode`] reads, in a SELECT list.
const COLUMNS: &str = "id, tenant, subject, idempotency_key, plan, plan_hash, executor, approval_id, status, \
     outcome, created_at, updated_at";

fn decode(row: &PgRow) -> StoreResult<Job> {
    crate::store::rows::job(row)
}

async fn by_key(conn: &mut PgConnection, tenant: &str, subject: &str, key: &str) -> StoreResult<Option<Job>> {
    let sql = format!("SELECT {COLUMNS} FROM jobs WHERE tenant = $1 AND subject = $2 AND idempotency_key = $3");
    let row = sqlx::query(&sql).bind(tenant).bind(subject).bind(key).fetch_optional(conn).await.map_err(db_err)?;
    row.as_ref().map(decode).transpose()
}

/// Step 1: inserts the job unless its id or key is taken; `false` if either is.
async fn claim(conn: &mut PgConnection, job: &Job) -> StoreResult<bool> {
    let what = |field: &str| format!("job `{}` {field}", job.id);
    let outcome = job.outcome.as_ref().map(|o| to_json(&what("outcome"), o)).transpose()?;
    let inserted: Option<String> = sqlx::query_scalar(
        "INSERT INTO jobs (id, tenant, subject, idempotency_key, plan, plan_hash, executor, approval_id, status,
             outcome, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT DO NOTHING
         RETURNING id",
    )
    .bind(&job.id)
    .bind(&job.tenant)
    .bind(&job.subject)
    .bind(&job.idempotency_key)
    .bind(to_json(&what("plan"), &job.plan)?)
    .bind(&job.plan_hash.0)
    .bind(&job.executor)
    .bind(&job.approval_id)
    .bind(job.status.as_str())
    .bind(outcome)
    .bind(to_nanos(&what("created_at"), job.created_at)?)
    .bind(to_nanos(&what("updated_at"), job.updated_at)?)
    .fetch_optional(conn)
    .await
    .map_err(db_err)?;
    Ok(inserted.is_some())
}

/// Why a claim failed: the key's holder if the key is taken (checked first, as the memory
/// store does), else a duplicate id.
async fn claim_refused(conn: &mut PgConnection, job: &Job) -> StoreResult<Reserved> {
    if let Some(key) = &job.idempotency_key
        && let Some(existing) = by_key(conn, &job.tenant, &job.subject, key).await?
    {
        return Ok(Reserved::KeyTaken(Box::new(existing)));
    }
    Err(StoreError::Duplicate(format!("job `{}`", job.id)))
}

/// Step 2: consumes the approval with one conditional UPDATE; on refusal, the rejection `bind`
/// gives for the request as it now stands (or `approval_replayed` when it looks usable).
async fn consume(conn: &mut PgConnection, job: &Job, c: &Consume) -> StoreResult<Result<(), bridle_core::Rejection>> {
    let consumed: Option<String> = sqlx::query_scalar(
        "UPDATE approvals SET status = 'consumed', consumed_by = $1
         WHERE tenant = $2 AND id = $3 AND status = 'granted' AND plan_hash = $4 AND expires_at > $5
         RETURNING id",
    )
    .bind(&job.id)
    .bind(&job.tenant)
    .bind(&c.approval_id)
    .bind(&c.plan_hash.0)
    .bind(to_nanos("now", c.now)?)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db_err)?;
    if consumed.is_some() {
        return Ok(Ok(()));
    }
    let current = approvals::fetch(conn, &job.tenant, &c.approval_id).await?;
    let current = current.as_ref();
    let why = approval::bind(&c.approval_id, current, &c.plan_hash, job_level(current), c.now)
        .err()
        .unwrap_or_else(|| replayed(&c.approval_id));
    Ok(Err(why))
}

/// The body of `reserve`; the caller commits on `Reserved::Reserved` and rolls back otherwise.
async fn reserve_in(tx: &mut Transaction<'static, Postgres>, job: &Job, c: Option<&Consume>) -> StoreResult<Reserved> {
    if !claim(tx, job).await? {
        return claim_refused(tx, job).await;
    }
    if let Some(c) = c
        && let Err(why) = consume(tx, job, c).await?
    {
        return Ok(Reserved::ApprovalRefused(why));
    }
    Ok(Reserved::Reserved)
}

#[async_trait]
impl JobStore for PostgresStore {
    async fn find_by_key(&self, tenant: &str, subject: &str, key: &str) -> StoreResult<Option<Job>> {
        let mut conn = self.pool.acquire().await.map_err(db_err)?;
        by_key(&mut conn, tenant, subject, key).await
    }

    async fn reserve(&self, job: &Job, consume: Option<&Consume>, audit: Audit) -> StoreResult<Reserved> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        match reserve_in(&mut tx, job, consume).await {
            Ok(Reserved::Reserved) => {
                // INVARIANT: the reservation (and consumption) commits with its audit records;
                // the audit lock is taken last, after the job key and the approval row.
                append_in(&mut tx, audit).await?;
                tx.commit().await.map_err(db_err)?;
                Ok(Reserved::Reserved)
            }
            outcome => {
                tx.rollback().await.map_err(db_err)?;
                outcome
            }
        }
    }

    async fn transition(
        &self,
        id: &str,
        from: JobStatus,
        to: JobStatus,
        outcome: Option<&Value>,
        now: OffsetDateTime,
        audit: Audit,
    ) -> StoreResult<bool> {
        let outcome = outcome.map(|o| to_json(&format!("job `{id}` outcome"), o)).transpose()?;
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let done = sqlx::query(
            "UPDATE jobs SET status = $1, outcome = COALESCE($2, outcome), updated_at = $3
             WHERE id = $4 AND status = $5",
        )
        .bind(to.as_str())
        .bind(outcome)
        .bind(to_nanos("now", now)?)
        .bind(id)
        .bind(from.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if done.rows_affected() != 1 {
            tx.rollback().await.map_err(db_err)?;
            return Ok(false);
        }
        // INVARIANT: the move commits with its audit records, or not at all.
        append_in(&mut tx, audit).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(true)
    }

    async fn get_job(&self, id: &str) -> StoreResult<Option<Job>> {
        let sql = format!("SELECT {COLUMNS} FROM jobs WHERE id = $1");
        let row = sqlx::query(&sql).bind(id).fetch_optional(&self.pool).await.map_err(db_err)?;
        row.as_ref().map(decode).transpose()
    }

    async fn unsettled(&self) -> StoreResult<Vec<Job>> {
        // INVARIANT: the same condition as the `jobs_unsettled` partial index, so it is used.
        let sql = format!("SELECT {COLUMNS} FROM jobs WHERE status NOT IN {FINAL} ORDER BY created_at, id");
        let rows = sqlx::query(&sql).fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter().map(decode).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_list_matches_is_final_and_the_schema() {
        for name in ["reserved", "dispatched", "succeeded", "failed", "unknown"] {
            let status = JobStatus::parse(name);
            assert_eq!(status.map(JobStatus::is_final), Some(FINAL.contains(&format!("'{name}'"))), "{name}");
        }
        let schema = include_str!("../../../migrations/postgres/0002_stores.sql");
        assert!(schema.contains(&format!("WHERE status NOT IN {FINAL}")));
    }
}
