//! The SQL store: every port written once over a [`Dialect`], for SQLite (`sqlite.rs`) and
//! PostgreSQL (`postgres.rs`).
//!
//! The port implementations in `sql/` hold each method's logic and query text once: the same
//! tables and columns on both databases (text, 64-bit integers, JSON as text, instants as unix
//! nanoseconds, rows read through [`super::rows`]), `$n` placeholders (which SQLite reads as
//! "the n-th argument" too), `CAST(… AS …)` rather than `::`, upserts whose `ON CONFLICT`
//! clauses name the table. What differs lives in the two [`Dialect`] implementations, side by
//! side: how a write transaction begins (SQLite's `BEGIN IMMEDIATE` on its one writer connection,
//! a pooled `BEGIN` on PostgreSQL, asynchronous commit for run admissions and audit appends
//! there, and the flush that makes those durable), the locks a transaction takes beside its rows
//! (PostgreSQL's advisory locks; SQLite's write lock already serializes), the batch insert of audit events, how a unique violation is recognised, and a
//! few SQL fragments (JSONB, booleans, byte-order sorting).
//!
//! It must not hold any rule of a port: semantics are those of [`super::MemoryStore`], which the
//! contract suite checks every backend against.

mod approvals;
pub(crate) mod audit;
mod auto_actions;
mod budgets;
mod conversations;
mod decisions;
mod feedback;
mod governance;
mod health;
mod jobs;
mod runs;

use std::future::Future;
use std::ops::DerefMut;

use bridle_core::audit::AuditEvent;
use bridle_core::ports::StoreResult;
use sqlx::query::Query;
use sqlx::{Database, Encode, Type};

use super::rows::Columns;

/// Every store port over one SQL database in the dialect `D`; cheap to clone when `D` is (its
/// connection pools are shared).
#[derive(Debug, Clone)]
pub struct SqlStore<D> {
    db: D,
}

impl<D> SqlStore<D> {
    /// The store over `db`, whose schema is up to date.
    pub(crate) fn new(db: D) -> Self {
        Self { db }
    }

    /// The dialect's connections.
    pub(crate) fn db(&self) -> &D {
        &self.db
    }
}

/// A lock a transaction takes beside the rows it changes, held until it ends.
#[derive(Debug, Clone, Copy)]
pub enum Lock<'a> {
    /// A tenant's audit chain, taken before reading its head (and, on PostgreSQL, last: after
    /// every row the transaction changes).
    Chain(&'a str),
    /// A resource's window of automatic changes, taken before counting it.
    AutoWindow {
        /// The tenant.
        tenant: &'a str,
        /// The resource.
        resource: &'a str,
    },
}

/// A bound argument: the only value types the stores bind.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// Text (TEXT).
    Text(&'a str),
    /// Nullable text.
    OptText(Option<&'a str>),
    /// A 64-bit integer (INTEGER / BIGINT).
    Int(i64),
    /// A nullable 64-bit integer.
    OptInt(Option<i64>),
    /// A boolean (0/1 on SQLite).
    Bool(bool),
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Self::Text(v)
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Self::Text(v)
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Self::OptText(v.as_deref())
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Self::OptText(v)
    }
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Self::OptInt(v)
    }
}

impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

/// `&[Arg]` from values in placeholder order (`$1`, `$2`, …).
macro_rules! args {
    ($($v:expr),* $(,)?) => { &[$($crate::store::sql::Arg::from($v)),*] };
}
pub(crate) use args;

/// How a transaction run by [`Dialect::transact`] begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxKind {
    /// As [`Dialect::begin`].
    Write,
    /// As [`Dialect::begin_async`].
    Async,
    /// As [`Self::Async`], for a job that keeps whatever it wrote: it undoes only having
    /// written nothing (a refusal). A store that groups transactions may run it without a
    /// savepoint of its own, so a failure after one of its writes undoes its whole group.
    AsyncKept,
}

/// What a job of [`Dialect::transact`] decided: its answer, and whether its writes are kept
/// (committed) or undone.
pub struct Done<T> {
    /// The answer.
    pub value: T,
    /// Whether the writes are kept.
    pub keep: bool,
}

impl<T> Done<T> {
    /// An answer whose writes are kept.
    pub fn kept(value: T) -> Self {
        Self { value, keep: true }
    }
}

/// The statements of one transaction, as a job [`Dialect::transact`] runs on a connection.
pub type Job<'c, T> = std::pin::Pin<Box<dyn Future<Output = StoreResult<Done<T>>> + Send + 'c>>;

/// `f` as a job of [`Dialect::transact`] (a closure written in place gets its signature from here).
pub(crate) fn job<D: Dialect, T, F>(f: F) -> F
where
    F: for<'c> FnOnce(&'c mut D::Conn) -> Job<'c, T>,
{
    f
}

/// What one SQL database does its own way; the ports in `sql/` are written against it.
///
/// Statements run on a [`Self::Conn`]: inside a transaction ([`Self::Tx`], begun for writing
/// with [`Self::begin`]) or on a pooled connection ([`Self::read`] for reads, [`Self::write`]
/// for a single write statement).
pub trait Dialect: Send + Sync + 'static {
    /// A connection statements run on.
    type Conn: Send;
    /// A write transaction; dropped without [`Self::commit`], it rolls back.
    type Tx: DerefMut<Target = Self::Conn> + Send;
    /// A connection borrowed from a pool.
    type Pooled: DerefMut<Target = Self::Conn> + Send;
    /// A result row.
    type Row: Columns + Send;

    /// A write transaction.
    fn begin(&self) -> impl Future<Output = StoreResult<Self::Tx>> + Send;
    /// A write transaction whose commit may return before its writes are durable (PostgreSQL's
    /// asynchronous commit; SQLite: as [`Self::begin`]). They are durable once a later
    /// synchronous commit, or [`Self::flush`], returns: the WAL is flushed in order.
    fn begin_async(&self) -> impl Future<Output = StoreResult<Self::Tx>> + Send;
    /// Returns once every transaction committed before the call is durable (at the durability
    /// the store's URL sets); nothing to do where every commit already is.
    fn flush(&self) -> impl Future<Output = StoreResult<()>> + Send;
    /// A connection for reads.
    fn read(&self) -> impl Future<Output = StoreResult<Self::Pooled>> + Send;
    /// A connection for writes outside a transaction (one statement, or a read of what it
    /// just wrote).
    fn write(&self) -> impl Future<Output = StoreResult<Self::Pooled>> + Send;
    /// Commits a transaction.
    fn commit(tx: Self::Tx) -> impl Future<Output = StoreResult<()>> + Send;
    /// Rolls a transaction back.
    fn rollback(tx: Self::Tx) -> impl Future<Output = StoreResult<()>> + Send;

    /// Runs `job` in a write transaction of `kind` and commits it (or rolls it back when the job
    /// fails or asks to); the job's answer once its writes are durable. A dialect may run many
    /// callers' jobs in one transaction (SQLite's group writer); by default each job has its own.
    fn transact<T, F>(&self, kind: TxKind, job: F) -> impl Future<Output = StoreResult<T>> + Send
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Self::Conn) -> Job<'c, T> + Send + 'static,
    {
        async move {
            let mut tx = match kind {
                TxKind::Write => self.begin().await?,
                TxKind::Async | TxKind::AsyncKept => self.begin_async().await?,
            };
            let done = job(&mut tx).await?;
            if done.keep {
                Self::commit(tx).await?;
            } else {
                Self::rollback(tx).await?;
            }
            Ok(done.value)
        }
    }

    /// Runs a statement; the rows it changed.
    fn execute<'a>(
        conn: &'a mut Self::Conn,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> impl Future<Output = StoreResult<u64>> + Send + 'a;
    /// Runs an INSERT: the rows it inserted, or `None` (nothing inserted) if a row breaks the
    /// unique constraint or index `unique` (SQLite names no constraint: there, any unique
    /// violation).
    fn insert<'a>(
        conn: &'a mut Self::Conn,
        sql: &'a str,
        args: &'a [Arg<'a>],
        unique: &'a str,
    ) -> impl Future<Output = StoreResult<Option<u64>>> + Send + 'a;
    /// The first row of a query, if any.
    fn fetch_optional<'a>(
        conn: &'a mut Self::Conn,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> impl Future<Output = StoreResult<Option<Self::Row>>> + Send + 'a;
    /// Every row of a query.
    fn fetch_all<'a>(
        conn: &'a mut Self::Conn,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> impl Future<Output = StoreResult<Vec<Self::Row>>> + Send + 'a;

    /// Takes `lock` until the transaction on `conn` ends (nothing where the write transaction
    /// already excludes every other writer).
    fn lock<'a>(conn: &'a mut Self::Conn, lock: Lock<'a>) -> impl Future<Output = StoreResult<()>> + Send + 'a;
    /// Inserts chained audit events into `audit_events` (columns as [`audit::COLUMNS`]).
    fn insert_events<'a>(
        conn: &'a mut Self::Conn,
        events: &'a [AuditEvent],
    ) -> impl Future<Output = StoreResult<()>> + Send + 'a;

    /// The approvals' `grants` column as JSON text, in a SELECT list.
    const GRANTS: &'static str;
    /// The placeholder `$n` of a JSON text argument stored into a JSONB column (its suffix).
    const JSONB: &'static str;
    /// Appends the grant bound as `$1` (JSON text) to `grants`, in an UPDATE's SET.
    const APPEND_GRANT: &'static str;
    /// An approval request that holds its plan's one pending slot, as in the
    /// `approvals_one_pending` index (so the index is used).
    const NOT_LAPSED: &'static str;
    /// Sorts text by bytes (as the memory store's maps), after a text column in ORDER BY.
    const BYTE_ORDER: &'static str;
    /// The head of `tenant`'s audit chain as the write transaction on `conn` last read or wrote
    /// it, where the dialect keeps it (SQLite's writer, for the length of its group
    /// transaction, which excludes every other writer); `None`: read it.
    fn known_head(_conn: &Self::Conn, _tenant: &str) -> Option<Option<(u64, String)>> {
        None
    }

    /// Notes the head of `tenant`'s audit chain, read or written in the write transaction on
    /// `conn`, for [`Self::known_head`].
    fn note_head(_conn: &Self::Conn, _tenant: &str, _head: Option<(u64, &str)>) {}

    /// Whether a statement with `RETURNING` costs more than the same statement and a key probe
    /// after it: SQLite buffers the returned rows in a temporary B-tree built and dropped per
    /// statement; on PostgreSQL `RETURNING` saves a round trip.
    const RETURNING_BUFFERS: bool;
}

/// `sql` with `args` bound, for a dialect's statements.
pub(crate) fn query<'a, DB: Database>(sql: &'a str, args: &'a [Arg<'a>]) -> Query<'a, DB, DB::Arguments<'a>>
where
    &'a str: Encode<'a, DB> + Type<DB>,
    Option<&'a str>: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
    Option<i64>: Encode<'a, DB> + Type<DB>,
    bool: Encode<'a, DB> + Type<DB>,
{
    args.iter().fold(sqlx::query(sql), |q, arg| match *arg {
        Arg::Text(v) => q.bind(v),
        Arg::OptText(v) => q.bind(v),
        Arg::Int(v) => q.bind(v),
        Arg::OptInt(v) => q.bind(v),
        Arg::Bool(v) => q.bind(v),
    })
}

/// Implements the statement methods of [`Dialect`] for an sqlx driver (they differ only in the
/// driver's types, and in `$violates`, which tells a violation of the named unique constraint).
macro_rules! sqlx_statements {
    ($db:ty, $violates:expr) => {
        async fn execute<'a>(
            conn: &'a mut Self::Conn,
            sql: &'a str,
            args: &'a [$crate::store::sql::Arg<'a>],
        ) -> bridle_core::ports::StoreResult<u64> {
            let done = $crate::store::sql::query::<$db>(sql, args).execute(conn).await;
            done.map(|d| d.rows_affected()).map_err($crate::store::db_err)
        }

        async fn insert<'a>(
            conn: &'a mut Self::Conn,
            sql: &'a str,
            args: &'a [$crate::store::sql::Arg<'a>],
            unique: &'a str,
        ) -> bridle_core::ports::StoreResult<Option<u64>> {
            match $crate::store::sql::query::<$db>(sql, args).execute(conn).await {
                Ok(done) => Ok(Some(done.rows_affected())),
                Err(e) if $violates(&e, unique) => Ok(None),
                Err(e) => Err($crate::store::db_err(e)),
            }
        }

        async fn fetch_optional<'a>(
            conn: &'a mut Self::Conn,
            sql: &'a str,
            args: &'a [$crate::store::sql::Arg<'a>],
        ) -> bridle_core::ports::StoreResult<Option<Self::Row>> {
            $crate::store::sql::query::<$db>(sql, args).fetch_optional(conn).await.map_err($crate::store::db_err)
        }

        async fn fetch_all<'a>(
            conn: &'a mut Self::Conn,
            sql: &'a str,
            args: &'a [$crate::store::sql::Arg<'a>],
        ) -> bridle_core::ports::StoreResult<Vec<Self::Row>> {
            $crate::store::sql::query::<$db>(sql, args).fetch_all(conn).await.map_err($crate::store::db_err)
        }
    };
}
pub(crate) use sqlx_statements;
