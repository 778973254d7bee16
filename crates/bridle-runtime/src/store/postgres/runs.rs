//! Runs and taint over PostgreSQL (migration `0008_runs.sql`).
//!
//! An admission is one conditional upsert, committed without waiting for the disk (see
//! [`ASYNC_COMMIT`] for why that is safe): it opens the run bound to the caller's subject, or
//! counts the call if the run is the caller's, its deadline is ahead and it has calls left
//! (`RETURNING` says which). A concurrent admission on another replica blocks on the run's row
//! lock and PostgreSQL re-checks the WHERE clause against the committed row, so the calls
//! admitted between replicas never pass the limit. Only a refusal pays a second statement, to
//! read the run and say why. Under a concurrency limit the upsert and the lease run in one
//! transaction: the upsert's row lock serializes the run's lease count, and a refused lease
//! counts nothing. Run taint keeps its first reason (`ON CONFLICT DO NOTHING`); actor taint its
//! latest.

use async_trait::async_trait;
use bridle_core::ports::{RunFlags, RunLedger, StoreError, StoreResult, Taint, TaintMark, TaintVia};
use bridle_core::runs::{self, RunAdmit, RunRecord, RunRefusal};
use sqlx::PgConnection;
use time::OffsetDateTime;

use super::{PostgresStore, db_err, to_nanos};

/// The admission's transaction commits without waiting for its WAL flush (one round trip with
/// `BEGIN`, as a simple query).
///
/// INVARIANT: nothing a call does outside the database happens before a synchronous commit that
/// follows its admission in the WAL: every call appends its `tool_call` event (and a change its
/// `job_dispatched` event, before the side effect) in a transaction that waits for the flush, and
/// the WAL is flushed in order, so that commit makes the admission durable too. A crash can only
/// lose admissions of calls that never answered and never acted (their count, a lease that would
/// lapse anyway, or a run's first binding, which the next call makes again).
const ASYNC_COMMIT: &str = "BEGIN; SET LOCAL synchronous_commit = off";

/// Columns of a run, in select order.
const RUN_COLUMNS: &str = "tenant, run_id, subject, agent, opened_at, last_call_at, calls, state";

/// Bound values of one admission.
struct Admission<'a> {
    admit: &'a RunAdmit<'a>,
    now: i64,
    calls_limit: Option<i64>,
    /// The run must have opened after this instant for its deadline to be ahead.
    opened_after: Option<i64>,
}

impl<'a> Admission<'a> {
    fn new(admit: &'a RunAdmit<'a>) -> StoreResult<Self> {
        let now = to_nanos("run call", admit.now)?;
        let opened_after = admit.limits.deadline.map(|d| {
            let nanos = i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
            now.saturating_sub(nanos)
        });
        let calls_limit = admit.limits.calls.map(|c| i64::try_from(c).unwrap_or(i64::MAX));
        Ok(Self { admit, now, calls_limit, opened_after })
    }

    /// Opens the run or counts the call; `None` when the run refuses it.
    async fn upsert(&self, conn: &mut PgConnection) -> StoreResult<Option<RunRecord>> {
        let sql = format!(
            "INSERT INTO runs ({RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $5, 1, 'open')
             ON CONFLICT (tenant, run_id) DO UPDATE SET calls = runs.calls + 1,
                 last_call_at = EXCLUDED.last_call_at, state = 'open'
             WHERE runs.subject = EXCLUDED.subject AND ($6::bigint IS NULL OR runs.calls < $6)
                 AND ($7::bigint IS NULL OR runs.opened_at > $7)
             RETURNING {RUN_COLUMNS}"
        );
        let a = self.admit;
        let row = sqlx::query(&sql)
            .bind(a.tenant)
            .bind(a.run_id)
            .bind(a.subject)
            .bind(a.agent)
            .bind(self.now)
            .bind(self.calls_limit)
            .bind(self.opened_after)
            .fetch_optional(conn)
            .await
            .map_err(db_err)?;
        row.as_ref().map(crate::store::rows::run).transpose()
    }

    /// Why the run refused the call (read on the writer, which saw the refusal); records the
    /// state the refusal leaves it in.
    async fn refusal(&self, conn: &mut PgConnection) -> StoreResult<RunRefusal> {
        let a = self.admit;
        let record = read(conn, a.tenant, a.run_id)
            .await?
            .ok_or_else(|| StoreError::Contention(format!("run `{}` vanished during its admission", a.run_id)))?;
        let refusal = runs::judge(&record, a.subject, &a.limits, a.now)
            .err()
            .ok_or_else(|| StoreError::Contention(format!("run `{}` refused a call its record admits", a.run_id)))?;
        if let Some(state) = refusal.state() {
            sqlx::query("UPDATE runs SET state = $1 WHERE tenant = $2 AND run_id = $3")
                .bind(state.as_str())
                .bind(a.tenant)
                .bind(a.run_id)
                .execute(conn)
                .await
                .map_err(db_err)?;
        }
        Ok(refusal)
    }
}

async fn read(conn: &mut PgConnection, tenant: &str, run_id: &str) -> StoreResult<Option<RunRecord>> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE tenant = $1 AND run_id = $2");
    let row = sqlx::query(&sql).bind(tenant).bind(run_id).fetch_optional(conn).await.map_err(db_err)?;
    row.as_ref().map(crate::store::rows::run).transpose()
}

#[async_trait]
impl RunLedger for PostgresStore {
    async fn admit(&self, admit: &RunAdmit<'_>) -> StoreResult<Result<RunRecord, RunRefusal>> {
        let a = Admission::new(admit)?;
        let mut tx = self.pool.begin_with(ASYNC_COMMIT).await.map_err(db_err)?;
        let Some(record) = a.upsert(&mut tx).await? else {
            let refusal = a.refusal(&mut tx).await?;
            tx.commit().await.map_err(db_err)?;
            return Ok(Err(refusal));
        };
        let (Some(limit), Some(lease)) = (admit.limits.concurrency, admit.lease) else {
            tx.commit().await.map_err(db_err)?;
            return Ok(Ok(record));
        };
        sqlx::query("DELETE FROM run_leases WHERE tenant = $1 AND run_id = $2 AND lapses_at <= $3")
            .bind(admit.tenant)
            .bind(admit.run_id)
            .bind(a.now)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        let in_flight: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM run_leases WHERE tenant = $1 AND run_id = $2")
            .bind(admit.tenant)
            .bind(admit.run_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        let in_flight = u64::try_from(in_flight).unwrap_or(0);
        if in_flight >= u64::from(limit) {
            // Rolled back: the call was not counted.
            tx.rollback().await.map_err(db_err)?;
            return Ok(Err(RunRefusal::Busy { in_flight, limit }));
        }
        sqlx::query("INSERT INTO run_leases (tenant, run_id, call_id, lapses_at) VALUES ($1, $2, $3, $4)")
            .bind(admit.tenant)
            .bind(admit.run_id)
            .bind(lease.call_id)
            .bind(to_nanos("run lease", lease.until)?)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)?;
        Ok(Ok(record))
    }

    async fn run(&self, tenant: &str, run_id: &str) -> StoreResult<Option<RunRecord>> {
        let mut conn = self.pool.acquire().await.map_err(db_err)?;
        read(&mut conn, tenant, run_id).await
    }

    async fn release(&self, tenant: &str, run_id: &str, call_id: &str) -> StoreResult<()> {
        // A release lost in a crash only leaves a lease to lapse on its own.
        let mut tx = self.pool.begin_with(ASYNC_COMMIT).await.map_err(db_err)?;
        sqlx::query("DELETE FROM run_leases WHERE tenant = $1 AND run_id = $2 AND call_id = $3")
            .bind(tenant)
            .bind(run_id)
            .bind(call_id)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        tx.commit().await.map_err(db_err)
    }
}

#[async_trait]
impl RunFlags for PostgresStore {
    async fn taint(&self, mark: &TaintMark<'_>) -> StoreResult<()> {
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        sqlx::query(
            "INSERT INTO run_taint (tenant, run_id, reason) VALUES ($1, $2, $3)
             ON CONFLICT (tenant, run_id) DO NOTHING",
        )
        .bind(mark.tenant)
        .bind(mark.run_id)
        .bind(mark.reason)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        if let Some(actor) = mark.actor {
            sqlx::query(
                "INSERT INTO actor_taint (tenant, actor, tainted_at, reason) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (tenant, actor) DO UPDATE SET tainted_at = EXCLUDED.tainted_at, reason = EXCLUDED.reason
                 WHERE EXCLUDED.tainted_at >= actor_taint.tainted_at",
            )
            .bind(mark.tenant)
            .bind(actor)
            .bind(to_nanos("taint", mark.at)?)
            .bind(mark.reason)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)
    }

    async fn tainted(
        &self,
        tenant: &str,
        run_id: &str,
        actor: Option<&str>,
        since: OffsetDateTime,
    ) -> StoreResult<Option<Taint>> {
        // Before the storable range means "any time".
        let since = to_nanos("taint window", since).unwrap_or(i64::MIN);
        let row: Option<(String, i64)> = sqlx::query_as(
            "SELECT reason, 0::bigint AS via FROM run_taint WHERE tenant = $1 AND run_id = $2
             UNION ALL
             SELECT reason, 1::bigint AS via FROM actor_taint WHERE tenant = $1 AND actor = $3 AND tainted_at >= $4
             ORDER BY via LIMIT 1",
        )
        .bind(tenant)
        .bind(run_id)
        .bind(actor)
        .bind(since)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(row.map(|(reason, via)| Taint { reason, via: if via == 0 { TaintVia::Run } else { TaintVia::Actor } }))
    }
}
