//! SQLite: opening the database, its connection pools, and the SQLite [`Dialect`] of the SQL
//! store (`sql.rs`), which holds every port; nothing here is a rule of a port.
//!
//! Concurrency: every write goes through ONE writer connection (a pool of size 1) inside
//! `BEGIN IMMEDIATE` transactions or single statements, so writers queue in the pool instead of
//! meeting `SQLITE_BUSY` lock upgrades, and a write transaction excludes every other writer (the
//! dialect's [`Lock`]s need nothing more); reads use a separate pool of reader connections,
//! which WAL lets run beside the writer. `sqlite::memory:` uses one connection for both, kept
//! open for the life of the store (the database lives only as long as its connection).

pub(crate) mod migrate;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use bridle_core::audit::AuditEvent;
use bridle_core::ports::{StoreError, StoreResult};
use sqlx::pool::PoolConnection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{Sqlite, SqliteConnection, Transaction};

use super::db_err;
use super::sql::audit::{COLUMNS, Stored, WIDTH};
use super::sql::{Dialect, Lock, SqlStore, sqlx_statements};

/// How long a connection waits on a lock held by another process before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Reader connections for a database file.
const READERS: u32 = 4;
/// Rows per audit INSERT statement, largest first: a batch is cut into these sizes so only a
/// few distinct statements are ever prepared (30 × 100 parameters stays far below SQLite's limit).
const CHUNKS: [usize; 3] = [100, 10, 1];

/// All ports over SQLite.
pub type SqliteStore = SqlStore<SqliteDb>;

/// The connections of an SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteDb {
    /// The only connection that writes.
    writer: SqlitePool,
    /// Connections that only read (the writer itself for `sqlite::memory:`).
    reader: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if missing) the database a `sqlite://PATH` or `sqlite::memory:` URL
    /// names and brings its schema up to date. `?synchronous=full` (Bridle's parameter, not
    /// sqlx's) fsyncs the WAL at every commit; the default is `normal`.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let (sqlx_url, synchronous) = split_synchronous(url)?;
        let base = SqliteConnectOptions::from_str(&sqlx_url)
            .map_err(|e| StoreError::Unavailable(format!("bad SQLite URL `{url}`: {e}")))?
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let db = if is_in_memory(url) {
            // INVARIANT: one connection that never closes, or the database vanishes with it.
            let pool = SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .test_before_acquire(false)
                .connect_with(base)
                .await
                .map_err(|e| StoreError::Unavailable(format!("cannot open `{url}`: {e}")))?;
            SqliteDb { writer: pool.clone(), reader: pool }
        } else {
            create_parent_dir(base.get_filename())?;
            let writer_options =
                base.clone().create_if_missing(true).journal_mode(SqliteJournalMode::Wal).synchronous(synchronous);
            let writer = SqlitePoolOptions::new()
                .max_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
                .test_before_acquire(false)
                .connect_with(writer_options)
                .await
                .map_err(|e| StoreError::Unavailable(format!("cannot open `{url}`: {e}")))?;
            // Readers connect lazily, after the writer created the file and switched it to WAL;
            // `query_only` makes a write through them fail instead of contending for the lock.
            let reader_options = base.synchronous(SqliteSynchronous::Normal).pragma("query_only", "ON");
            let reader = SqlitePoolOptions::new()
                .max_connections(READERS)
                .test_before_acquire(false)
                .connect_lazy_with(reader_options);
            SqliteDb { writer, reader }
        };
        migrate::run(&db.writer).await?;
        Ok(Self::new(db))
    }

    /// Closes every connection; later calls fail with `Unavailable`.
    pub async fn close(&self) {
        self.db().reader.close().await;
        self.db().writer.close().await;
    }
}

impl Dialect for SqliteDb {
    type Conn = SqliteConnection;
    type Tx = Transaction<'static, Sqlite>;
    type Pooled = PoolConnection<Sqlite>;
    type Row = SqliteRow;

    /// A write transaction on the writer connection, holding the write lock from its start.
    async fn begin(&self) -> StoreResult<Self::Tx> {
        self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db_err)
    }

    /// As any write: durable as `synchronous` says.
    async fn begin_admission(&self) -> StoreResult<Self::Tx> {
        self.begin().await
    }

    async fn read(&self) -> StoreResult<Self::Pooled> {
        self.reader.acquire().await.map_err(db_err)
    }

    async fn write(&self) -> StoreResult<Self::Pooled> {
        self.writer.acquire().await.map_err(db_err)
    }

    async fn commit(tx: Self::Tx) -> StoreResult<()> {
        tx.commit().await.map_err(db_err)
    }

    async fn rollback(tx: Self::Tx) -> StoreResult<()> {
        tx.rollback().await.map_err(db_err)
    }

    sqlx_statements!(Sqlite, violates);

    /// Nothing: `BEGIN IMMEDIATE` on the one writer already excludes every other writer.
    async fn lock<'a>(_conn: &'a mut Self::Conn, _lock: Lock<'a>) -> StoreResult<()> {
        Ok(())
    }

    /// Multi-row `INSERT … VALUES`, in chunks of [`CHUNKS`] rows.
    async fn insert_events<'a>(conn: &'a mut Self::Conn, events: &'a [AuditEvent]) -> StoreResult<()> {
        let stored = events.iter().map(Stored::new).collect::<StoreResult<Vec<_>>>()?;
        let mut rest = stored.as_slice();
        for size in CHUNKS {
            while rest.len() >= size {
                let (chunk, tail) = rest.split_at(size);
                insert_chunk(conn, chunk).await?;
                rest = tail;
            }
        }
        Ok(())
    }

    const GRANTS: &'static str = "grants";
    const JSONB: &'static str = "";
    const APPEND_GRANT: &'static str = "json_insert(grants, '$[#]', json($1))";
    const NOT_LAPSED: &'static str = "lapsed = 0";
    const BYTE_ORDER: &'static str = "";
}

/// Whether a driver error is a unique violation (SQLite names no constraint: any of them).
fn violates(e: &sqlx::Error, _unique: &str) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation())
}

fn insert_sql(rows: usize) -> String {
    let one = format!("({})", vec!["?"; WIDTH].join(", "));
    format!("INSERT INTO audit_events ({COLUMNS}) VALUES {}", vec![one; rows].join(", "))
}

async fn insert_chunk(conn: &mut SqliteConnection, rows: &[Stored<'_>]) -> StoreResult<()> {
    let sql = insert_sql(rows.len());
    let mut q = sqlx::query(&sql);
    for s in rows {
        let (e, r) = (s.event, &s.event.record);
        q = q
            .bind(&r.tenant)
            .bind(s.seq)
            .bind(s.kind)
            .bind(&r.call_id)
            .bind(s.at)
            .bind(s.at_offset)
            .bind(&r.subject)
            .bind(&r.run_id)
            .bind(&r.incident)
            .bind(&r.tool)
            .bind(&r.policy_version)
            .bind(&r.plan_hash)
            .bind(&r.executor_identity)
            .bind(&r.approval_id)
            .bind(&r.approver)
            .bind(&s.decision)
            .bind(&r.code)
            .bind(&r.reason)
            .bind(s.total_us)
            .bind(s.policy_us)
            .bind(s.adapter_us)
            .bind(&e.prev_hash)
            .bind(&e.hash)
            .bind(&e.evidence_digest)
            .bind(&r.versions.agent_id)
            .bind(&r.versions.model)
            .bind(&r.versions.prompt_hash)
            .bind(&r.versions.tool_schema_hash)
            .bind(s.agent_source)
            .bind(s.auth);
    }
    q.execute(conn).await.map_err(db_err)?;
    Ok(())
}

/// Takes Bridle's `synchronous=normal|full` parameter off a SQLite URL (sqlx refuses parameters
/// it does not know): the URL for sqlx and the writer's `synchronous` pragma.
pub(crate) fn split_synchronous(url: &str) -> StoreResult<(String, SqliteSynchronous)> {
    let Some((base, query)) = url.split_once('?') else { return Ok((url.to_owned(), SqliteSynchronous::Normal)) };
    let mut synchronous = SqliteSynchronous::Normal;
    let mut rest = Vec::new();
    for param in query.split('&') {
        match param.split_once('=') {
            Some(("synchronous", "normal" | "NORMAL")) => synchronous = SqliteSynchronous::Normal,
            Some(("synchronous", "full" | "FULL")) => synchronous = SqliteSynchronous::Full,
            Some(("synchronous", other)) => {
                return Err(StoreError::Unavailable(format!(
                    "SQLite `synchronous={other}` is not supported (use `normal` or `full`)"
                )));
            }
            _ => rest.push(param),
        }
    }
    let url = if rest.is_empty() { base.to_owned() } else { format!("{base}?{}", rest.join("&")) };
    Ok((url, synchronous))
}

/// The database file a `sqlite:` URL names (as sqlx reads it), or `None` for an in-memory
/// database or a URL sqlx would refuse.
pub(crate) fn database_file(url: &str) -> Option<std::path::PathBuf> {
    if is_in_memory(url) {
        return None;
    }
    let (sqlx_url, _) = split_synchronous(url).ok()?;
    let options = SqliteConnectOptions::from_str(&sqlx_url).ok()?;
    Some(options.get_filename().to_path_buf())
}

/// Whether a URL names an in-memory database (as sqlx parses it).
pub(crate) fn is_in_memory(url: &str) -> bool {
    let rest = url.trim_start_matches("sqlite://").trim_start_matches("sqlite:");
    let (database, params) = rest.split_once('?').unwrap_or((rest, ""));
    database == ":memory:" || params.split('&').any(|p| p == "mode=memory")
}

pub(crate) fn create_parent_dir(file: &Path) -> StoreResult<()> {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir)
            .map_err(|e| StoreError::Unavailable(format!("cannot create `{}`: {e}", dir.display()))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_memory_urls() {
        assert!(is_in_memory("sqlite::memory:"));
        assert!(is_in_memory("sqlite://:memory:"));
        assert!(is_in_memory("sqlite://?mode=memory&cache=shared"));
        assert!(!is_in_memory("sqlite://./bridle-data/bridle.db"));
        assert!(!is_in_memory("sqlite:///tmp/memory.db"));
    }

    #[test]
    fn insert_statement_has_one_placeholder_per_column() {
        let sql = insert_sql(3);
        assert_eq!(sql.matches('?').count(), 3 * WIDTH);
    }
}
