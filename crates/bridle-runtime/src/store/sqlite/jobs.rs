//! Jobs and idempotency keys over SQLite, and `reserve`: key claim, approval consumption and
//! job insert in one write transaction.
//!
//! INVARIANT: a refused `reserve` (key taken, approval refused, duplicate id) writes nothing;
//! the transaction is rolled back before it returns.

use async_trait::async_trait;
use bridle_core::approval;
use bridle_core::job::{Job, JobStatus};
use bridle_core::ports::{Audit, Consume, JobStore, Reserved, StoreError, StoreResult};
use serde_json::Value;
use sqlx::sqlite::SqliteRow;
use sqlx::{Sqlite, SqliteConnection, Transaction};
use time::OffsetDateTime;

use super::audit::append_in;
use super::{SqliteStore, approvals, db_err, is_unique_violation, to_json, to_nanos};
use crate::store::memory::{job_level, replayed};

/// The final statuses (`JobStatus::is_final`) as an SQL list, as in the `jobs_unsettled` index.
const FINAL: &str = "('succeeded', 'failed')";

/// The columns [`decode`] reads, in a SELECT list.
const COLUMNS: &str = "id, tenant, subject, idempotency_key, plan, plan_hash, executor, approval_id, status, \
     outcome, created_at, updated_at";

fn decode(row: &SqliteRow) -> StoreResult<Job> {
    crate::store::rows::job(row)
}

async fn by_key(conn: &mut SqliteConnection, tenant: &str, subject: &str, key: &str) -> StoreResult<Option<Job>> {
    let sql = format!("SELECT {COLUMNS} FROM jobs WHERE tenant = ? AND subject = ? AND idempotency_key = ?");
    let row = sqlx::query(&sql).bind(tenant).bind(subject).bind(key).fetch_optional(conn).await.map_err(db_err)?;
    row.as_ref().map(decode).transpose()
}

/// Consumes the approval with one conditional UPDATE; on refusal, the rejection `bind` gives
/// for the request as it now stands (or `approval_replayed` when it looks usable: a race lost).
async fn consume(
    conn: &mut SqliteConnection,
    job: &Job,
    c: &Consume,
) -> StoreResult<Result<(), bridle_core::Rejection>> {
    let done = sqlx::query(
        "UPDATE approvals SET status = 'consumed', consumed_by = ?
         WHERE tenant = ? AND id = ? AND status = 'granted' AND plan_hash = ? AND expires_at > ?",
    )
    .bind(&job.id)
    .bind(&job.tenant)
    .bind(&c.approval_id)
    .bind(&c.plan_hash.0)
    .bind(to_nanos("now", c.now)?)
    .execute(&mut *conn)
    .await
    .map_err(db_err)?;
    if done.rows_affected() == 1 {
        return Ok(Ok(()));
    }
    let current = approvals::fetch(conn, &job.tenant, &c.approval_id).await?;
    let current = current.as_ref();
    let why = approval::bind(&c.approval_id, current, &c.plan_hash, job_level(current), c.now)
        .err()
        .unwrap_or_else(|| replayed(&c.approval_id));
    Ok(Err(why))
}

async fn insert(conn: &mut SqliteConnection, job: &Job) -> StoreResult<()> {
    let what = |field: &str| format!("job `{}` {field}", job.id);
    let outcome = job.outcome.as_ref().map(|o| to_json(&what("outcome"), o)).transpose()?;
    let inserted = sqlx::query(
        "INSERT INTO jobs (id, tenant, subject, idempotency_key, plan, plan_hash, executor, approval_id, status,
             outcome, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
    .execute(conn)
    .await;
    match inserted {
        Ok(_) => Ok(()),
        Err(e) if is_unique_violation(&e) => Err(StoreError::Duplicate(format!("job `{}`", job.id))),
        Err(e) => Err(db_err(e)),
    }
}

/// The body of `reserve`; the caller commits on `Reserved::Reserved` and rolls back otherwise.
async fn reserve_in(tx: &mut Transaction<'static, Sqlite>, job: &Job, c: Option<&Consume>) -> StoreResult<Reserved> {
    if let Some(key) = &job.idempotency_key
        && let Some(existing) = by_key(tx, &job.tenant, &job.subject, key).await?
    {
        return Ok(Reserved::KeyTaken(Box::new(existing)));
    }
    let taken =
        sqlx::query("SELECT 1 FROM jobs WHERE id = ?").bind(&job.id).fetch_optional(&mut **tx).await.map_err(db_err)?;
    if taken.is_some() {
        return Err(StoreError::Duplicate(format!("job `{}`", job.id)));
    }
    if let Some(c) = c
        && let Err(why) = consume(tx, job, c).await?
    {
        return Ok(Reserved::ApprovalRefused(why));
    }
    insert(tx, job).await?;
    Ok(Reserved::Reserved)
}

#[async_trait]
impl JobStore for SqliteStore {
    async fn find_by_key(&self, tenant: &str, subject: &str, key: &str) -> StoreResult<Option<Job>> {
        let mut conn = self.reader.acquire().await.map_err(db_err)?;
        by_key(&mut conn, tenant, subject, key).await
    }

    async fn reserve(&self, job: &Job, consume: Option<&Consume>, audit: Audit) -> StoreResult<Reserved> {
        let mut tx = self.write_tx().await?;
        match reserve_in(&mut tx, job, consume).await {
            Ok(Reserved::Reserved) => {
                // INVARIANT: the reservation (and consumption) commits with its audit records.
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
        let mut tx = self.write_tx().await?;
        let done = sqlx::query(
            "UPDATE jobs SET status = ?, outcome = COALESCE(?, outcome), updated_at = ?
             WHERE id = ? AND status = ?",
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
        let sql = format!("SELECT {COLUMNS} FROM jobs WHERE id = ?");
        let row = sqlx::query(&sql).bind(id).fetch_optional(&self.reader).await.map_err(db_err)?;
        row.as_ref().map(decode).transpose()
    }

    async fn unsettled(&self) -> StoreResult<Vec<Job>> {
        // INVARIANT: the same condition as the `jobs_unsettled` partial index, so it is used.
        let sql = format!("SELECT {COLUMNS} FROM jobs WHERE status NOT IN {FINAL} ORDER BY created_at, id");
        let rows = sqlx::query(&sql).fetch_all(&self.reader).await.map_err(db_err)?;
        rows.iter().map(decode).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_list_matches_is_final() {
        for name in ["reserved", "dispatched", "succeeded", "failed", "unknown"] {
            let status = JobStatus::parse(name);
            assert_eq!(status.map(JobStatus::is_final), Some(FINAL.contains(&format!("'{name}'"))), "{name}");
        }
        let schema = include_str!("../../../migrations/sqlite/0001_init.sql");
        assert!(schema.contains(&format!("WHERE status NOT IN {FINAL}")));
    }
}
