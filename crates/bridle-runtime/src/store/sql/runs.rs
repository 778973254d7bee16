//! Runs and taint (migrations `sqlite/0009_runs.sql`, `postgres/0008_runs.sql`).
//!
//! An admission is one conditional upsert in the dialect's admission transaction
//! ([`Dialect::begin_async`]; on PostgreSQL committed without waiting for the disk): it
//! opens the run bound to the caller's subject, or counts the call if the run is the caller's,
//! its deadline is ahead and it has calls left (`RETURNING` says which); with the kill check
//! ([`RunAdmit::kill_check`]) it also probes the kill switches and writes nothing when one covers
//! the call, so the switch, the run and its limits cost one statement (on SQLite, where
//! `RETURNING` costs a temporary B-tree per statement: the kill probes, a single-row upsert and
//! a read by key, three statements in the writer's group: [`Dialect::RETURNING_BUFFERS`]). A
//! concurrent admission (on PostgreSQL, on another replica) waits for the run's row and the
//! WHERE clause is checked against the committed row, so the calls admitted never pass the
//! limit. Only a refusal pays more statements, to read the switches and the run and say why.
//! Under a concurrency limit the upsert and the lease run in the same transaction: the upsert's
//! row lock serializes the run's lease count, and a refused lease counts nothing. Run taint keeps
//! its first reason (`ON CONFLICT DO NOTHING`); actor taint its latest.

use std::sync::LazyLock;

use async_trait::async_trait;
use bridle_core::ports::{RunFlags, RunLedger, StoreError, StoreResult, Taint, TaintMark, TaintVia};
use bridle_core::runs::{self, Admitted, RunAdmit, RunRecord, RunRefusal};
use time::OffsetDateTime;

use super::{Arg, Dialect, Done, SqlStore, TxKind, args, job};
use crate::store::rows::{Columns, to_nanos};

/// Columns of a run, in select order.
const RUN_COLUMNS: &str = "tenant, run_id, subject, agent, opened_at, last_call_at, calls, state";

/// The admission's upsert: opens the run or counts the call when the run's subject, call limit
/// (`$6`) and deadline (`$7`: opened after) allow and, with `kill_check`, no kill switch covers
/// the call of tenant `$1` on behalf of agent `$8`; returns the run, or nothing. With
/// `taint_check` it also returns the run's taint and the taint of actor `$n` recorded at or after
/// `$n+1` (the two parameters after the others).
fn upsert_sql(kill_check: bool, taint_check: bool) -> String {
    let condition = if kill_check {
        format!("NOT EXISTS ({})", super::governance::covering_probes("1", "$1", "$8"))
    } else {
        "true".to_owned()
    };
    let taint = if taint_check {
        let (actor, since) = if kill_check { ("$9", "$10") } else { ("$8", "$9") };
        taint_columns(actor, since)
    } else {
        String::new()
    };
    format!(
        "INSERT INTO runs ({RUN_COLUMNS}) SELECT $1, $2, $3, $4, $5, $5, 1, 'open' WHERE {condition}
         {COUNT_OR_REFUSE} RETURNING {RUN_COLUMNS}{taint}"
    )
}

/// The columns, after a run's, of its taint (tenant `$1`, run `$2`) and of the taint of
/// `actor` recorded at or after `since` (placeholders).
fn taint_columns(actor: &str, since: &str) -> String {
    format!(
        ", (SELECT reason FROM run_taint WHERE tenant = $1 AND run_id = $2) AS run_taint,
         (SELECT reason FROM actor_taint WHERE tenant = $1 AND actor = {actor} AND tainted_at >= {since})
             AS actor_taint"
    )
}

/// The taint read beside a run ([`taint_columns`]): the run's own first.
fn taint_of(row: &impl Columns) -> StoreResult<Option<Taint>> {
    Ok(match (row.opt_text("run_taint")?, row.opt_text("actor_taint")?) {
        (Some(reason), _) => Some(Taint { reason, via: TaintVia::Run }),
        (None, Some(reason)) => Some(Taint { reason, via: TaintVia::Actor }),
        (None, None) => None,
    })
}

/// The upsert's conflict clause: the call is counted when the run's subject, call limit (`$6`)
/// and deadline (`$7`: opened after) allow it.
const COUNT_OR_REFUSE: &str = "ON CONFLICT (tenant, run_id) DO UPDATE SET calls = runs.calls + 1,
         last_call_at = EXCLUDED.last_call_at, state = 'open'
     WHERE runs.subject = EXCLUDED.subject AND (CAST($6 AS BIGINT) IS NULL OR runs.calls < $6)
         AND (CAST($7 AS BIGINT) IS NULL OR runs.opened_at > $7)";

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

    /// Opens the run or counts the call (with the taint, if asked); `None` when the run refuses
    /// it or (with [`RunAdmit::kill_check`]) a kill switch covers the call, in which case
    /// nothing is written.
    async fn upsert<D: Dialect>(&self, conn: &mut D::Conn) -> StoreResult<Option<Admitted>> {
        // Built once, by (kill check, taint check): admissions run on the SQLite writer's
        // thread, one per call.
        static SQL: LazyLock<[String; 4]> = LazyLock::new(|| {
            [upsert_sql(false, false), upsert_sql(true, false), upsert_sql(false, true), upsert_sql(true, true)]
        });
        if D::RETURNING_BUFFERS {
            return self.upsert_then_read::<D>(conn).await;
        }
        let a = self.admit;
        let mut args: Vec<Arg<'_>> =
            vec![a.tenant.into(), a.run_id.into(), a.subject.into(), a.agent.into(), self.now.into()];
        args.extend([Arg::from(self.calls_limit), Arg::from(self.opened_after)]);
        if a.kill_check {
            args.push(a.agent.unwrap_or("").into());
        }
        if let Some(check) = &a.taint_check {
            // Before the storable range means "any time".
            let since = to_nanos("taint window", check.since).unwrap_or(i64::MIN);
            args.extend([Arg::from(check.actor.as_deref()), Arg::from(since)]);
        }
        let [plain, unless_killed, with_taint, both] = &*SQL;
        let sql = match (a.kill_check, a.taint_check.is_some()) {
            (false, false) => plain,
            (true, false) => unless_killed,
            (false, true) => with_taint,
            (true, true) => both,
        };
        let Some(row) = D::fetch_optional(conn, sql, &args).await? else { return Ok(None) };
        let record = crate::store::rows::run(&row)?;
        let taint = if a.taint_check.is_some() { taint_of(&row)? } else { None };
        Ok(Some(Admitted { record, taint }))
    }

    /// [`Self::upsert`] where `RETURNING` costs more than a key probe (SQLite): the kill
    /// switches probed, a single-row upsert, and the run read back by its key, each a statement
    /// that needs no temporary B-tree and no statement journal. Same transaction, same answers.
    async fn upsert_then_read<D: Dialect>(&self, conn: &mut D::Conn) -> StoreResult<Option<Admitted>> {
        static SQL: LazyLock<[String; 3]> = LazyLock::new(|| {
            let read = format!("SELECT {RUN_COLUMNS}{{taint}} FROM runs WHERE tenant = $1 AND run_id = $2");
            [
                format!(
                    "INSERT INTO runs ({RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $5, 1, 'open') {COUNT_OR_REFUSE}"
                ),
                read.replace("{taint}", ""),
                read.replace("{taint}", &taint_columns("$3", "$4")),
            ]
        });
        let [upsert, read, read_taint] = &*SQL;
        let a = self.admit;
        if a.kill_check && super::governance::covering_in::<D>(conn, a.tenant, a.agent).await?.is_some() {
            return Ok(None);
        }
        let args = args![a.tenant, a.run_id, a.subject, a.agent, self.now, self.calls_limit, self.opened_after];
        if D::execute(conn, upsert, args).await? == 0 {
            return Ok(None);
        }
        let row = match &a.taint_check {
            None => D::fetch_optional(conn, read, args![a.tenant, a.run_id]).await?,
            Some(check) => {
                let since = to_nanos("taint window", check.since).unwrap_or(i64::MIN);
                D::fetch_optional(conn, read_taint, args![a.tenant, a.run_id, check.actor.as_deref(), since]).await?
            }
        };
        let row =
            row.ok_or_else(|| StoreError::Contention(format!("run `{}` vanished during its admission", a.run_id)))?;
        let record = crate::store::rows::run(&row)?;
        let taint = if a.taint_check.is_some() { taint_of(&row)? } else { None };
        Ok(Some(Admitted { record, taint }))
    }

    /// Why the run refused the call (read in the admission's transaction, which saw the
    /// refusal); records the state the refusal leaves it in.
    async fn refusal<D: Dialect>(&self, conn: &mut D::Conn) -> StoreResult<RunRefusal> {
        let a = self.admit;
        let record = read::<D>(conn, a.tenant, a.run_id)
            .await?
            .ok_or_else(|| StoreError::Contention(format!("run `{}` vanished during its admission", a.run_id)))?;
        let refusal = runs::judge(&record, a.subject, &a.limits, a.now)
            .err()
            .ok_or_else(|| StoreError::Contention(format!("run `{}` refused a call its record admits", a.run_id)))?;
        if let Some(state) = refusal.state() {
            let sql = "UPDATE runs SET state = $1 WHERE tenant = $2 AND run_id = $3";
            D::execute(conn, sql, args![state.as_str(), a.tenant, a.run_id]).await?;
        }
        Ok(refusal)
    }
}

async fn read<D: Dialect>(conn: &mut D::Conn, tenant: &str, run_id: &str) -> StoreResult<Option<RunRecord>> {
    let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE tenant = $1 AND run_id = $2");
    let row = D::fetch_optional(conn, &sql, args![tenant, run_id]).await?;
    row.as_ref().map(crate::store::rows::run).transpose()
}

/// An admission's values, owned, for a job that may run on another task.
struct Owned {
    tenant: String,
    run_id: String,
    subject: String,
    agent: Option<String>,
    now: OffsetDateTime,
    limits: runs::RunLimits,
    lease: Option<(String, OffsetDateTime)>,
    kill_check: bool,
    taint_check: Option<runs::TaintCheck>,
}

impl Owned {
    fn new(a: &RunAdmit<'_>) -> Self {
        Self {
            tenant: a.tenant.to_owned(),
            run_id: a.run_id.to_owned(),
            subject: a.subject.to_owned(),
            agent: a.agent.map(str::to_owned),
            now: a.now,
            limits: a.limits,
            lease: a.lease.map(|l| (l.call_id.to_owned(), l.until)),
            kill_check: a.kill_check,
            taint_check: a.taint_check.clone(),
        }
    }

    fn admit(&self) -> RunAdmit<'_> {
        RunAdmit {
            tenant: &self.tenant,
            run_id: &self.run_id,
            subject: &self.subject,
            agent: self.agent.as_deref(),
            now: self.now,
            limits: self.limits,
            lease: self.lease.as_ref().map(|(call_id, until)| runs::Lease { call_id, until: *until }),
            kill_check: self.kill_check,
            taint_check: self.taint_check.clone(),
        }
    }
}

/// One admission's statements: the run's upsert (which, with `kill_check`, writes nothing when
/// a kill switch covers the call); only a refusal reads why, the kill switches first. A refused
/// lease undoes the call's count.
async fn admit_in<D: Dialect>(
    conn: &mut D::Conn,
    admit: &RunAdmit<'_>,
) -> StoreResult<Done<Result<Admitted, RunRefusal>>> {
    let a = Admission::new(admit)?;
    let Some(admitted) = a.upsert::<D>(conn).await? else {
        if admit.kill_check
            && let Some(switch) = super::governance::covering_in::<D>(conn, admit.tenant, admit.agent).await?
        {
            // Nothing counted, nothing written.
            return Ok(Done { value: Err(RunRefusal::Killed(switch)), keep: false });
        }
        return Ok(Done::kept(Err(a.refusal::<D>(conn).await?)));
    };
    let (Some(limit), Some(lease)) = (admit.limits.concurrency, admit.lease) else {
        return Ok(Done::kept(Ok(admitted)));
    };
    let sql = "DELETE FROM run_leases WHERE tenant = $1 AND run_id = $2 AND lapses_at <= $3";
    D::execute(conn, sql, args![admit.tenant, admit.run_id, a.now]).await?;
    let sql = "SELECT COUNT(*) AS n FROM run_leases WHERE tenant = $1 AND run_id = $2";
    let in_flight = D::fetch_optional(conn, sql, args![admit.tenant, admit.run_id]).await?;
    let in_flight = in_flight.map_or(Ok(0), |r| r.int("n"))?;
    let in_flight = u64::try_from(in_flight).unwrap_or(0);
    if in_flight >= u64::from(limit) {
        // Undone: the call was not counted.
        return Ok(Done { value: Err(RunRefusal::Busy { in_flight, limit }), keep: false });
    }
    let sql = "INSERT INTO run_leases (tenant, run_id, call_id, lapses_at) VALUES ($1, $2, $3, $4)";
    let until = to_nanos("run lease", lease.until)?;
    D::execute(conn, sql, args![admit.tenant, admit.run_id, lease.call_id, until]).await?;
    Ok(Done::kept(Ok(admitted)))
}

#[async_trait]
impl<D: Dialect> RunLedger for SqlStore<D> {
    async fn admit(&self, admit: &RunAdmit<'_>) -> StoreResult<Result<Admitted, RunRefusal>> {
        // Only a lease refused for concurrency undoes what the admission wrote (the call's count).
        let kind =
            if admit.limits.concurrency.is_some() && admit.lease.is_some() { TxKind::Async } else { TxKind::AsyncKept };
        let owned = Owned::new(admit);
        let admission = job::<D, _, _>(move |conn| Box::pin(async move { admit_in::<D>(conn, &owned.admit()).await }));
        self.db().transact(kind, admission).await
    }

    async fn run(&self, tenant: &str, run_id: &str) -> StoreResult<Option<RunRecord>> {
        let mut conn = self.db().read().await?;
        read::<D>(&mut conn, tenant, run_id).await
    }

    async fn release(&self, tenant: &str, run_id: &str, call_id: &str) -> StoreResult<()> {
        // A release lost in a crash only leaves a lease to lapse on its own.
        let mut tx = self.db().begin_async().await?;
        let sql = "DELETE FROM run_leases WHERE tenant = $1 AND run_id = $2 AND call_id = $3";
        D::execute(&mut tx, sql, args![tenant, run_id, call_id]).await?;
        D::commit(tx).await
    }
}

#[async_trait]
impl<D: Dialect> RunFlags for SqlStore<D> {
    async fn taint(&self, mark: &TaintMark<'_>) -> StoreResult<()> {
        let mut tx = self.db().begin().await?;
        D::execute(
            &mut tx,
            "INSERT INTO run_taint (tenant, run_id, reason) VALUES ($1, $2, $3)
             ON CONFLICT (tenant, run_id) DO NOTHING",
            args![mark.tenant, mark.run_id, mark.reason],
        )
        .await?;
        if let Some(actor) = mark.actor {
            D::execute(
                &mut tx,
                "INSERT INTO actor_taint (tenant, actor, tainted_at, reason) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (tenant, actor) DO UPDATE SET tainted_at = EXCLUDED.tainted_at, reason = EXCLUDED.reason
                 WHERE EXCLUDED.tainted_at >= actor_taint.tainted_at",
                args![mark.tenant, actor, to_nanos("taint", mark.at)?, mark.reason],
            )
            .await?;
        }
        D::commit(tx).await
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
        let mut conn = self.db().read().await?;
        let row = D::fetch_optional(
            &mut conn,
            "SELECT reason, CAST(0 AS BIGINT) AS via FROM run_taint WHERE tenant = $1 AND run_id = $2
             UNION ALL
             SELECT reason, CAST(1 AS BIGINT) AS via FROM actor_taint
             WHERE tenant = $1 AND actor = $3 AND tainted_at >= $4
             ORDER BY via LIMIT 1",
            args![tenant, run_id, actor, since],
        )
        .await?;
        let Some(row) = row else { return Ok(None) };
        let via = if row.int("via")? == 0 { TaintVia::Run } else { TaintVia::Actor };
        Ok(Some(Taint { reason: row.text("reason")?, via }))
    }
}
