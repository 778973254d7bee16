//! PostgreSQL: connecting and bringing the schema up to date, shared by every port implemented
//! on PostgreSQL (the checkpointer and [`PostgresStore`]), and the PostgreSQL [`Dialect`] of the
//! SQL store (`sql.rs`), for several `bridle serve` replicas sharing one database.
//!
//! Owns the connection pool options, the embedded migrations (`postgres/migrate.rs`), the
//! advisory locks and the batch insert of audit events; it must not hold any rule of a port:
//! semantics are those of [`super::MemoryStore`], which the contract suite checks every backend
//! against.
//!
//! Concurrency across replicas rests on PostgreSQL alone, never on a lock in this process:
//! - approval consumption and job reservation (`sql/jobs.rs`): one transaction whose job INSERT
//!   claims the id and idempotency key (`ON CONFLICT DO NOTHING` waits for a concurrent claimer
//!   to commit or roll back) and whose `UPDATE … WHERE status = 'granted' … RETURNING`
//!   consumes the approval; a second consumer blocks on the row lock and, once the winner
//!   commits, re-checks the condition against the committed row and matches nothing;
//! - budget debits (`sql/budgets.rs`): one `INSERT … ON CONFLICT DO UPDATE … WHERE used <=
//!   headroom RETURNING used`, likewise re-checked under the row lock;
//! - grants and rejections (`sql/approvals.rs`): one conditional UPDATE each (compare-and-set on
//!   `status` and `grant_count`);
//! - the audit chains (`sql/audit.rs`): each append transaction takes a transaction-level
//!   advisory lock per tenant it touches ([`Lock::Chain`], in sorted order, LAST: after every
//!   row the transaction changes) before reading the chain's head, so appends of one tenant
//!   queue while other tenants proceed; the `(tenant, seq)` primary key refuses a fork even if
//!   that were bypassed. A plain append commits asynchronously and then flushes, so the lock
//!   is released before the disk write (see [`ASYNC_COMMIT`]);
//! - automatic changes (`sql/auto_actions.rs`): an advisory lock per tenant and resource
//!   ([`Lock::AutoWindow`]) before counting the window.

pub(crate) mod migrate;

use std::time::Duration;

use bridle_core::audit::AuditEvent;
use bridle_core::ports::{StoreError, StoreResult};
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgPoolOptions, PgRow};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use super::sql::audit::Stored;
use super::sql::{Dialect, Lock, SqlStore, sqlx_statements};

/// Connections per pool; PostgreSQL serializes conflicting writes itself.
const POOL_SIZE: u32 = 8;
/// How long opening waits for the server (and a pooled call for a free connection).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to the database a `postgres://…` / `postgresql://…` URL names and brings its schema
/// up to date (safe when several processes open it at once).
pub async fn connect(url: &str) -> Result<PgPool, StoreError> {
    connect_with(url, POOL_SIZE).await
}

/// [`connect`] with at most `max_connections` (at least 1) pooled connections.
pub async fn connect_with(url: &str, max_connections: u32) -> Result<PgPool, StoreError> {
    let pool = PgPoolOptions::new()
        .max_connections(max_connections.max(1))
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect(url)
        .await
        .map_err(|e| StoreError::Unavailable(format!("cannot connect to PostgreSQL at `{}`: {e}", redact(url))))?;
    migrate::run(&pool).await?;
    Ok(pool)
}

/// The URL without its password, for messages.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((userinfo, host)) = rest.rsplit_once('@') else { return url.to_owned() };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

pub(crate) use super::db_err;

/// Every store port over PostgreSQL; cheap to clone (the pool is shared).
pub type PostgresStore = SqlStore<PostgresDb>;

/// The connection pool of a PostgreSQL store.
#[derive(Debug, Clone)]
pub struct PostgresDb {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database a `postgres://…` / `postgresql://…` URL names and brings its
    /// schema up to date.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Ok(Self::new(PostgresDb { pool: connect(url).await? }))
    }

    /// [`Self::open`] with a pool of at most `max_connections` connections.
    pub async fn open_with_connections(url: &str, max_connections: u32) -> Result<Self, StoreError> {
        Ok(Self::new(PostgresDb { pool: connect_with(url, max_connections).await? }))
    }

    /// Closes every connection; later calls fail with `Unavailable`.
    pub async fn close(&self) {
        self.db().pool.close().await;
    }
}

/// Run admissions and audit appends commit without waiting for their WAL flush (one round trip
/// with `BEGIN`, as a simple query), so a tenant's chain lock is held for a few round trips, never
/// across the disk write, and the replicas appending to one chain do not queue behind each
/// other's fsync.
///
/// INVARIANT: nothing a call does outside the database happens before a synchronous commit or a
/// [`FLUSH`] that follows its writes in the WAL, and the WAL is flushed in order:
/// - an audit append answers only after its [`FLUSH`], so every event a caller was told about
///   (the `tool_call` of every call, the `job_dispatched` of a change, before its side effect) is
///   durable, and so are the admission and the events chained before it;
/// - reads of the log that hand events or heads out of the store ([`AuditLog::events`],
///   [`AuditLog::heads`]) flush after reading, so no exported event and no signed head can
///   vanish in a crash (a role that may only read waits for the WAL writer instead:
///   [`wait_for_wal_flush`]);
/// - a state change that appends inside its own transaction commits synchronously.
///
/// A crash can only lose asynchronous commits nobody was answered about: admissions of calls
/// that never answered and never acted (their count, a lease that would lapse anyway, a run's
/// first binding, which the next call makes again) and audit events whose callers were still
/// waiting, each with every later event of its chain, so what survives is a prefix of every
/// chain.
///
/// [`AuditLog::events`]: bridle_core::ports::AuditLog::events
/// [`AuditLog::heads`]: bridle_core::ports::AuditLog::heads
const ASYNC_COMMIT: &str = "BEGIN; SET LOCAL synchronous_commit = off";
/// A synchronous commit of one WAL record of its own: `setval` writes the sequence's record
/// under a transaction id (migration 13), so the commit waits for the WAL to be flushed up to
/// that record, past every commit before it. Concurrent flushes take no lock of each other's.
const FLUSH: &str = "SELECT setval('audit_flush', 1)";

/// How long a role that may not write waits for the WAL writer to flush what it read.
const FLUSH_WAIT: Duration = Duration::from_secs(10);
/// Pause between looks at the flushed WAL position.
const FLUSH_POLL: Duration = Duration::from_millis(5);

/// Whether PostgreSQL refused [`FLUSH`] because this role or session may not write: no `UPDATE`
/// on the sequence (42501), a read-only transaction or a hot standby (25006).
fn may_not_write(e: &sqlx::Error) -> bool {
    e.as_database_error().and_then(|d| d.code()).is_some_and(|code| code == "42501" || code == "25006")
}

/// [`FLUSH`] for a role that may only read (an auditor's, a SIEM exporter's): waits until the
/// WAL is flushed past its position now, which the WAL writer reaches on its own within a few
/// `wal_writer_delay`s. A standby has nothing to wait for: its primary sends only WAL it has
/// flushed.
async fn wait_for_wal_flush(pool: &PgPool) -> StoreResult<()> {
    let target: Option<String> =
        sqlx::query_scalar("SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_current_wal_insert_lsn()::text END")
            .fetch_one(pool)
            .await
            .map_err(db_err)?;
    let Some(target) = target else { return Ok(()) };
    let started = std::time::Instant::now();
    loop {
        let flushed: bool = sqlx::query_scalar("SELECT pg_current_wal_flush_lsn() >= CAST($1 AS pg_lsn)")
            .bind(&target)
            .fetch_one(pool)
            .await
            .map_err(db_err)?;
        if flushed {
            return Ok(());
        }
        if started.elapsed() >= FLUSH_WAIT {
            return Err(StoreError::Unavailable(format!(
                "the WAL was not flushed past {target} within {FLUSH_WAIT:?}; what was read is not handed out"
            )));
        }
        tokio::time::sleep(FLUSH_POLL).await;
    }
}

/// The first key of the two-key advisory locks that serialize appends per tenant (`audt` as
/// ASCII); the migration lock uses the one-key form, so the two never collide.
const AUDIT_LOCK_SPACE: i32 = 0x6175_6474;
/// The first key of the two-key advisory locks of the automatic-change windows (`auto` as ASCII).
const AUTO_LOCK_SPACE: i32 = 0x6175_746f;

impl Dialect for PostgresDb {
    type Conn = PgConnection;
    type Tx = Transaction<'static, Postgres>;
    type Pooled = PoolConnection<Postgres>;
    type Row = PgRow;

    async fn begin(&self) -> StoreResult<Self::Tx> {
        self.pool.begin().await.map_err(db_err)
    }

    /// Committed asynchronously: see [`ASYNC_COMMIT`] for why that is safe.
    async fn begin_async(&self) -> StoreResult<Self::Tx> {
        self.pool.begin_with(ASYNC_COMMIT).await.map_err(db_err)
    }

    async fn flush(&self) -> StoreResult<()> {
        match sqlx::query(FLUSH).execute(&self.pool).await {
            Ok(_) => Ok(()),
            Err(e) if may_not_write(&e) => wait_for_wal_flush(&self.pool).await,
            Err(e) => Err(db_err(e)),
        }
    }

    async fn read(&self) -> StoreResult<Self::Pooled> {
        self.pool.acquire().await.map_err(db_err)
    }

    async fn write(&self) -> StoreResult<Self::Pooled> {
        self.pool.acquire().await.map_err(db_err)
    }

    async fn commit(tx: Self::Tx) -> StoreResult<()> {
        tx.commit().await.map_err(db_err)
    }

    async fn rollback(tx: Self::Tx) -> StoreResult<()> {
        tx.rollback().await.map_err(db_err)
    }

    sqlx_statements!(Postgres, violates);

    /// A transaction-level advisory lock, `pg_advisory_xact_lock(space, hashtext(key))`: a hash
    /// collision only serializes two chains (or windows), never breaks one. An advisory lock
    /// rather than a row lock, because a tenant's first append has no row to lock.
    async fn lock<'a>(conn: &'a mut Self::Conn, lock: Lock<'a>) -> StoreResult<()> {
        let (space, key) = match lock {
            Lock::Chain(tenant) => (AUDIT_LOCK_SPACE, tenant.to_owned()),
            Lock::AutoWindow { tenant, resource } => (AUTO_LOCK_SPACE, format!("{tenant}/{resource}")),
        };
        sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
            .bind(space)
            .bind(key)
            .execute(conn)
            .await
            .map_err(db_err)?;
        Ok(())
    }

    /// One `INSERT … SELECT FROM UNNEST(…)` of column arrays.
    async fn insert_events<'a>(conn: &'a mut Self::Conn, events: &'a [AuditEvent]) -> StoreResult<()> {
        let mut columns = Columns::default();
        for event in events {
            columns.push(&Stored::new(event)?);
        }
        columns.insert(conn).await
    }

    const GRANTS: &'static str = "grants::text AS grants";
    const JSONB: &'static str = "::jsonb";
    const APPEND_GRANT: &'static str = "grants || jsonb_build_array($1::jsonb)";
    const NOT_LAPSED: &'static str = "NOT lapsed";
    const BYTE_ORDER: &'static str = " COLLATE \"C\"";
    const RETURNING_BUFFERS: bool = false;
}

/// Whether a driver error is a violation of the unique constraint or index `name`.
fn violates(e: &sqlx::Error, name: &str) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation() && d.constraint() == Some(name))
}

/// Inserts a batch: each parameter is one column as an array, in [`COLUMNS`] order.
const INSERT: &str = "INSERT INTO audit_events (tenant, seq, kind, call_id, at, at_offset, subject, run_id, incident,
         tool, policy_version, plan_hash, executor_identity, approval_id, approver, decision, code, reason,
         total_us, policy_us, adapter_us, prev_hash, hash, evidence_digest, agent_id, model, prompt_hash,
         tool_schema_hash, agent_source, auth)
     SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bigint[],
         $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
         $15::text[], $16::text[], $17::text[], $18::text[], $19::bigint[], $20::bigint[], $21::bigint[],
         $22::text[], $23::text[], $24::text[], $25::text[], $26::text[], $27::text[], $28::text[], $29::text[], $30::text[])";

/// A batch of events as column arrays.
#[derive(Default)]
struct Columns<'a> {
    tenant: Vec<&'a str>,
    seq: Vec<i64>,
    kind: Vec<&'a str>,
    call_id: Vec<&'a str>,
    at: Vec<i64>,
    at_offset: Vec<i64>,
    subject: Vec<&'a str>,
    run_id: Vec<&'a str>,
    incident: Vec<&'a str>,
    tool: Vec<&'a str>,
    policy_version: Vec<&'a str>,
    plan_hash: Vec<Option<&'a str>>,
    executor_identity: Vec<Option<&'a str>>,
    approval_id: Vec<Option<&'a str>>,
    approver: Vec<Option<&'a str>>,
    decision: Vec<Option<String>>,
    code: Vec<Option<&'a str>>,
    reason: Vec<Option<&'a str>>,
    total_us: Vec<i64>,
    policy_us: Vec<i64>,
    adapter_us: Vec<i64>,
    prev_hash: Vec<&'a str>,
    hash: Vec<&'a str>,
    evidence_digest: Vec<Option<&'a str>>,
    agent_id: Vec<Option<&'a str>>,
    model: Vec<Option<&'a str>>,
    prompt_hash: Vec<Option<&'a str>>,
    tool_schema_hash: Vec<Option<&'a str>>,
    agent_source: Vec<Option<&'a str>>,
    auth: Vec<Option<&'a str>>,
}

impl<'a> Columns<'a> {
    fn push(&mut self, s: &Stored<'a>) {
        let (e, r) = (s.event, &s.event.record);
        self.tenant.push(&r.tenant);
        self.seq.push(s.seq);
        self.kind.push(s.kind);
        self.call_id.push(&r.call_id);
        self.at.push(s.at);
        self.at_offset.push(s.at_offset);
        self.subject.push(&r.subject);
        self.run_id.push(&r.run_id);
        self.incident.push(&r.incident);
        self.tool.push(&r.tool);
        self.policy_version.push(&r.policy_version);
        self.plan_hash.push(r.plan_hash.as_deref());
        self.executor_identity.push(r.executor_identity.as_deref());
        self.approval_id.push(r.approval_id.as_deref());
        self.approver.push(r.approver.as_deref());
        self.decision.push(s.decision.clone());
        self.code.push(r.code.as_deref());
        self.reason.push(r.reason.as_deref());
        self.total_us.push(s.total_us);
        self.policy_us.push(s.policy_us);
        self.adapter_us.push(s.adapter_us);
        self.prev_hash.push(&e.prev_hash);
        self.hash.push(&e.hash);
        self.evidence_digest.push(e.evidence_digest.as_deref());
        self.agent_id.push(r.versions.agent_id.as_deref());
        self.model.push(r.versions.model.as_deref());
        self.prompt_hash.push(r.versions.prompt_hash.as_deref());
        self.tool_schema_hash.push(r.versions.tool_schema_hash.as_deref());
        self.agent_source.push(s.agent_source);
        self.auth.push(s.auth);
    }

    async fn insert(self, conn: &mut PgConnection) -> StoreResult<()> {
        sqlx::query(INSERT)
            .bind(self.tenant)
            .bind(self.seq)
            .bind(self.kind)
            .bind(self.call_id)
            .bind(self.at)
            .bind(self.at_offset)
            .bind(self.subject)
            .bind(self.run_id)
            .bind(self.incident)
            .bind(self.tool)
            .bind(self.policy_version)
            .bind(self.plan_hash)
            .bind(self.executor_identity)
            .bind(self.approval_id)
            .bind(self.approver)
            .bind(self.decision)
            .bind(self.code)
            .bind(self.reason)
            .bind(self.total_us)
            .bind(self.policy_us)
            .bind(self.adapter_us)
            .bind(self.prev_hash)
            .bind(self.hash)
            .bind(self.evidence_digest)
            .bind(self.agent_id)
            .bind(self.model)
            .bind(self.prompt_hash)
            .bind(self.tool_schema_hash)
            .bind(self.agent_source)
            .bind(self.auth)
            .execute(conn)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sql::audit::{COLUMNS, WIDTH};

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("postgres://bridle:s3cret@db:5432/bridle"), "postgres://bridle:***@db:5432/bridle");
        assert_eq!(redact("postgres://postgres@127.0.0.1/test"), "postgres://postgres@127.0.0.1/test");
        assert_eq!(redact("postgresql://db/bridle"), "postgresql://db/bridle");
    }

    #[test]
    fn insert_names_every_column_once_with_one_array_each() {
        let names: Vec<&str> = COLUMNS.split(", ").collect();
        let insert_cols = INSERT.split_once('(').and_then(|(_, rest)| rest.split_once(')')).map(|(cols, _)| cols);
        let insert_cols: Vec<&str> = insert_cols.unwrap_or_default().split(',').map(str::trim).collect();
        assert_eq!(insert_cols, names);
        assert_eq!(INSERT.matches("[]").count(), WIDTH);
        assert!(INSERT.contains(&format!("${WIDTH}::")));
    }
}
