//! The SQLite driver under the store: rusqlite connections whose statements run in the calling
//! task, prepared once per connection, and the writer's and readers' connections that the
//! [`super::SqliteDb`] dialect hands out.
//!
//! Why in the calling task: a statement on a WAL database takes a few microseconds, less than
//! handing it to a driver thread and back (sqlx's model, which cost every call several thread
//! wake-ups). Nothing here waits on the disk inside a task except a `synchronous=NORMAL` commit
//! (a WAL append without fsync); `synchronous=FULL` commits go to the blocking pool. A statement
//! that meets another writer's lock (the checkpointer's connection, another process) is retried
//! after an asynchronous pause, never by blocking the task in SQLite's busy handler.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bridle_core::ports::{StoreError, StoreResult};
use rusqlite::types::Value;
use rusqlite::{Connection, ErrorCode, OpenFlags, Statement};
use tokio::sync::{OwnedMutexGuard, OwnedSemaphorePermit, Semaphore};

use crate::store::rows::Columns;
use crate::store::sql::Arg;

/// How long a statement keeps retrying while another connection holds SQLite's write lock.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Pause between attempts while the lock is held elsewhere.
const BUSY_PAUSE: Duration = Duration::from_millis(1);
/// Prepared statements kept per connection (the stores use a few dozen distinct statements).
const STATEMENT_CACHE: usize = 128;

/// Column names of the statements a connection ran, by the address and length of their text
/// (checked against the text itself): a row's names are shared, not allocated per query.
type Names = HashMap<(usize, usize), (Box<str>, Arc<[String]>)>;

/// The head (seq, hash) of each tenant's audit chain, or `None` for an empty chain, as read or
/// written inside the group transaction open on the writer.
type Heads = HashMap<String, Option<(u64, String)>>;

/// One connection of the store; `None` once the store is closed.
pub struct SqliteConn {
    conn: Option<Connection>,
    kept: Box<Kept>,
}

/// What a connection keeps beside its prepared statements.
#[derive(Default)]
struct Kept {
    names: RefCell<Names>,
    heads: RefCell<Heads>,
}

impl std::fmt::Debug for SqliteConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteConn").field("open", &self.conn.is_some()).finish()
    }
}

impl SqliteConn {
    /// Wraps an open connection: statements cached, lock waits reported at once (see
    /// [`retrying`]).
    pub(crate) fn new(conn: Connection) -> StoreResult<Self> {
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        conn.busy_timeout(Duration::ZERO).map_err(|e| sql_err(&e))?;
        Ok(Self { conn: Some(conn), kept: Box::default() })
    }

    /// A connection that is closed: every statement on it fails.
    pub(crate) fn closed() -> Self {
        Self { conn: None, kept: Box::default() }
    }

    /// The connection, unless the store was closed.
    pub(crate) fn get(&self) -> StoreResult<&Connection> {
        self.conn.as_ref().ok_or_else(|| StoreError::Unavailable("the SQLite store is closed".to_owned()))
    }

    /// Closes the connection; later statements fail with `Unavailable`.
    pub(crate) fn close(&mut self) {
        if let Some(c) = self.conn.take() {
            let _ = c.close();
        }
    }

    /// Runs one transaction-control statement (`BEGIN`, `SAVEPOINT`, `COMMIT`, …), prepared once:
    /// the group writer runs several per job.
    pub(crate) fn control(&self, sql: &str) -> rusqlite::Result<()> {
        let conn = self.conn.as_ref().ok_or(rusqlite::Error::InvalidQuery)?;
        conn.prepare_cached(sql)?.raw_execute().map(drop)
    }

    /// Runs a statement to its end; the rows it changed.
    pub(crate) fn execute_once(&self, sql: &str, args: &[Arg<'_>]) -> rusqlite::Result<u64> {
        let conn = self.conn.as_ref().ok_or(rusqlite::Error::InvalidQuery)?;
        let mut stmt = conn.prepare_cached(sql)?;
        bind(&mut stmt, args)?;
        let mut rows = stmt.raw_query();
        while rows.next()?.is_some() {}
        drop(rows);
        Ok(conn.changes())
    }

    /// Runs a query; at most `limit` rows.
    pub(crate) fn query_once(&self, sql: &str, args: &[Arg<'_>], limit: usize) -> rusqlite::Result<Vec<SqliteRow>> {
        let conn = self.conn.as_ref().ok_or(rusqlite::Error::InvalidQuery)?;
        let mut stmt = conn.prepare_cached(sql)?;
        bind(&mut stmt, args)?;
        let names = self.column_names(sql, &stmt);
        let mut rows = stmt.raw_query();
        let mut out = Vec::new();
        while out.len() < limit {
            let Some(row) = rows.next()? else { break };
            let values = (0..names.len()).map(|i| row.get_ref(i).map(Value::from)).collect::<rusqlite::Result<_>>()?;
            out.push(SqliteRow { names: names.clone(), values });
        }
        Ok(out)
    }

    /// The head of `tenant`'s audit chain as last read or written in the open group
    /// transaction, if it was.
    pub(crate) fn known_head(&self, tenant: &str) -> Option<Option<(u64, String)>> {
        if self.autocommit() {
            return None;
        }
        self.kept.heads.borrow().get(tenant).cloned()
    }

    /// Notes the head of `tenant`'s audit chain, read or written in the open group transaction.
    pub(crate) fn note_head(&self, tenant: &str, head: Option<(u64, &str)>) {
        if self.autocommit() {
            return;
        }
        let head = head.map(|(seq, hash)| (seq, hash.to_owned()));
        self.kept.heads.borrow_mut().insert(tenant.to_owned(), head);
    }

    /// Forgets every noted head: at the start of a group (another connection may have appended
    /// since the last one) and whenever writes are undone.
    pub(crate) fn forget_heads(&self) {
        self.kept.heads.borrow_mut().clear();
    }

    /// The column names of `stmt`, prepared from `sql`.
    fn column_names(&self, sql: &str, stmt: &Statement<'_>) -> Arc<[String]> {
        let key = (sql.as_ptr() as usize, sql.len());
        let mut names = self.kept.names.borrow_mut();
        if let Some((text, known)) = names.get(&key)
            && **text == *sql
        {
            return known.clone();
        }
        if names.len() >= STATEMENT_CACHE {
            names.clear();
        }
        let known: Arc<[String]> = stmt.column_names().into_iter().map(str::to_owned).collect();
        names.insert(key, (sql.into(), known.clone()));
        known
    }

    /// Whether no transaction is open on the connection.
    fn autocommit(&self) -> bool {
        self.conn.as_ref().is_none_or(Connection::is_autocommit)
    }
}

/// Binds `args` to `stmt`: `$n` / `?n` placeholders take the n-th argument (as sqlx reads them),
/// bare `?` the next one in order.
fn bind(stmt: &mut Statement<'_>, args: &[Arg<'_>]) -> rusqlite::Result<()> {
    let mut next = 0;
    for index in 1..=stmt.parameter_count() {
        let arg = match stmt.parameter_name(index) {
            None => {
                next += 1;
                args.get(next - 1)
            }
            Some(name) => name
                .get(1..)
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| n.checked_sub(1))
                .and_then(|n| args.get(n)),
        };
        let Some(arg) = arg else { return Err(rusqlite::Error::InvalidParameterCount(index, args.len())) };
        match *arg {
            Arg::Text(v) => stmt.raw_bind_parameter(index, v)?,
            Arg::OptText(v) => stmt.raw_bind_parameter(index, v)?,
            Arg::Int(v) => stmt.raw_bind_parameter(index, v)?,
            Arg::OptInt(v) => stmt.raw_bind_parameter(index, v)?,
            Arg::Bool(v) => stmt.raw_bind_parameter(index, i64::from(v))?,
        }
    }
    Ok(())
}

/// Runs `attempt` on `conn`; while another connection holds the write lock and `conn` is outside
/// a transaction (so nothing it did is lost by trying again), pauses and retries, up to
/// [`BUSY_TIMEOUT`].
pub(crate) async fn retrying<T>(
    conn: &mut SqliteConn,
    mut attempt: impl FnMut(&SqliteConn) -> rusqlite::Result<T>,
) -> StoreResult<T> {
    // The clock is read only once a lock is met: most statements never meet one.
    let mut started = None;
    loop {
        match attempt(conn) {
            // Off the runtime (the committer thread) there is no timer to pause on: the error stands.
            Err(e)
                if is_busy(&e)
                    && conn.autocommit()
                    && started.get_or_insert_with(Instant::now).elapsed() < BUSY_TIMEOUT
                    && tokio::runtime::Handle::try_current().is_ok() =>
            {
                tokio::time::sleep(BUSY_PAUSE).await;
            }
            Err(rusqlite::Error::InvalidQuery) if conn.conn.is_none() => {
                return Err(StoreError::Unavailable("the SQLite store is closed".to_owned()));
            }
            other => return other.map_err(|e| sql_err(&e)),
        }
    }
}

/// Whether a statement failed on a lock held by another connection.
pub(crate) fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// Whether a statement broke a unique or primary-key constraint (SQLite names none: any).
pub(crate) fn is_unique_violation(e: &rusqlite::Error) -> bool {
    const UNIQUE: i32 = 2067;
    const PRIMARY_KEY: i32 = 1555;
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.extended_code == UNIQUE || f.extended_code == PRIMARY_KEY)
}

/// Maps a driver error: undecodable values are corrupt data, everything else an unavailable
/// store.
pub(crate) fn sql_err(e: &rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::InvalidColumnName(_) => StoreError::Corrupt(e.to_string()),
        other => StoreError::Unavailable(other.to_string()),
    }
}

/// A row read into owned values.
#[derive(Debug)]
pub struct SqliteRow {
    names: Arc<[String]>,
    values: Vec<Value>,
}

impl SqliteRow {
    fn value(&self, column: &str) -> StoreResult<&Value> {
        self.names
            .iter()
            .position(|n| n == column)
            .and_then(|i| self.values.get(i))
            .ok_or_else(|| StoreError::Corrupt(format!("no column `{column}` in the row")))
    }
}

fn mismatch(column: &str, want: &str, got: &Value) -> StoreError {
    StoreError::Corrupt(format!("column `{column}` holds {:?}, not {want}", got.data_type()))
}

impl Columns for SqliteRow {
    fn text(&self, column: &str) -> StoreResult<String> {
        self.opt_text(column)?.ok_or_else(|| StoreError::Corrupt(format!("column `{column}` is NULL")))
    }

    fn opt_text(&self, column: &str) -> StoreResult<Option<String>> {
        match self.value(column)? {
            Value::Text(s) => Ok(Some(s.clone())),
            Value::Null => Ok(None),
            other => Err(mismatch(column, "text", other)),
        }
    }

    fn int(&self, column: &str) -> StoreResult<i64> {
        self.opt_int(column)?.ok_or_else(|| StoreError::Corrupt(format!("column `{column}` is NULL")))
    }

    fn opt_int(&self, column: &str) -> StoreResult<Option<i64>> {
        match self.value(column)? {
            Value::Integer(n) => Ok(Some(*n)),
            Value::Null => Ok(None),
            other => Err(mismatch(column, "an integer", other)),
        }
    }
}

/// Reader connections of a database file, opened as needed up to a bound.
#[derive(Debug)]
pub(crate) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<SqliteConn>>,
    permits: Arc<Semaphore>,
}

impl Readers {
    pub(crate) fn new(path: &Path, max: usize) -> Self {
        Self { path: path.to_path_buf(), idle: Mutex::new(Vec::new()), permits: Arc::new(Semaphore::new(max)) }
    }

    /// A reader connection, waiting while all `max` are in use.
    pub(crate) async fn acquire(self: &Arc<Self>) -> StoreResult<ReadGuard> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Unavailable("the SQLite store is closed".to_owned()))?;
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let conn = match idle {
            Some(c) => c,
            None => open_reader(&self.path)?,
        };
        Ok(ReadGuard { conn: Some(conn), pool: self.clone(), _permit: permit })
    }

    /// Closes every idle reader and refuses new ones.
    pub(crate) fn close(&self) {
        self.permits.close();
        for mut c in self.idle.lock().unwrap_or_else(PoisonError::into_inner).drain(..) {
            c.close();
        }
    }
}

fn open_reader(path: &Path) -> StoreResult<SqliteConn> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::Unavailable(format!("cannot open `{}`: {e}", path.display())))?;
    // A write through a reader fails instead of contending for the writer's lock.
    conn.execute_batch("PRAGMA query_only = ON; PRAGMA foreign_keys = ON;").map_err(|e| sql_err(&e))?;
    SqliteConn::new(conn)
}

/// A reader borrowed from [`Readers`]; returned when dropped.
pub struct ReadGuard {
    conn: Option<SqliteConn>,
    pool: Arc<Readers>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for ReadGuard {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take()
            && !self.pool.permits.is_closed()
        {
            self.pool.idle.lock().unwrap_or_else(PoisonError::into_inner).push(c);
        }
    }
}

/// A connection lent for statements outside a write transaction: a reader, or the writer.
pub enum Pooled {
    /// A reader connection.
    Read(ReadGuard),
    /// The writer connection with no group open (single statements; the only connection of
    /// `sqlite::memory:`).
    Write(OwnedMutexGuard<super::group::Writer>),
}

impl Deref for Pooled {
    type Target = SqliteConn;
    fn deref(&self) -> &SqliteConn {
        match self {
            Self::Read(r) => r.conn.as_ref().unwrap_or_else(|| unreachable!("a lent reader holds its connection")),
            Self::Write(w) => &w.conn,
        }
    }
}

impl DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut SqliteConn {
        match self {
            Self::Read(r) => r.conn.as_mut().unwrap_or_else(|| unreachable!("a lent reader holds its connection")),
            Self::Write(w) => &mut w.conn,
        }
    }
}
