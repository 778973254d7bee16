//! SQLite: opening the database, its connection pools, and the SQLite [`Dialect`] of the SQL
//! store (`sql.rs`), which holds every port; nothing here is a rule of a port.
//!
//! Concurrency: every write goes through ONE writer connection: write transactions join the
//! group transaction of `group.rs` as savepoints and are committed together, single statements
//! run in autocommit mode between groups; so writers queue for the writer instead of meeting
//! `SQLITE_BUSY` lock upgrades, and a write transaction excludes every other writer (the
//! dialect's [`Lock`]s need nothing more). Reads use separate reader connections, which WAL
//! lets run beside the writer. `sqlite::memory:` uses one connection for both, kept open for the
//! life of the store (the database lives only as long as its connection). Statements run in the
//! calling task through rusqlite (`driver.rs`); the schema comes from `migrate.rs`.

pub(crate) mod driver;
mod group;
mod migrate;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use bridle_core::audit::AuditEvent;
use bridle_core::ports::{StoreError, StoreResult};
use rusqlite::{Connection, OpenFlags};
use sqlx::sqlite::{SqliteConnectOptions, SqliteSynchronous};

use super::sql::audit::{COLUMNS, Stored, WIDTH};
use super::sql::{Arg, Dialect, Job, Lock, SqlStore, TxKind};
use driver::{BUSY_TIMEOUT, Pooled, Readers, SqliteConn, SqliteRow, is_unique_violation, retrying, sql_err};
use group::{GroupWriter, Member};

/// Reader connections for a database file.
const READERS: usize = 4;

/// All ports over SQLite.
pub type SqliteStore = SqlStore<SqliteDb>;

/// The connections of an SQLite store.
#[derive(Debug, Clone)]
pub struct SqliteDb {
    /// The only connection that writes, committing its transactions in groups.
    writer: Arc<GroupWriter>,
    /// Connections that only read (`None` for `sqlite::memory:`: the writer reads too).
    readers: Option<Arc<Readers>>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database a `sqlite://PATH` or `sqlite::memory:` URL
    /// names and brings its schema up to date. `?synchronous=full` (Bridle's parameter) fsyncs
    /// the WAL at every commit; the default is `normal`.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let (sqlx_url, synchronous) = split_synchronous(url)?;
        let full = matches!(synchronous, SqliteSynchronous::Full);
        let owned = url.to_owned();
        let opened = tokio::task::spawn_blocking(move || -> StoreResult<Connection> {
            let conn = open_migrated(&owned)?;
            conn.pragma_update(None, "synchronous", if full { "FULL" } else { "NORMAL" }).map_err(|e| sql_err(&e))?;
            Ok(conn)
        })
        .await
        .map_err(|e| StoreError::Unavailable(format!("cannot open `{url}`: {e}")))??;
        let readers = match is_in_memory(url) {
            true => None,
            false => Some(Arc::new(Readers::new(options(url, &sqlx_url)?.get_filename(), READERS))),
        };
        let writer = GroupWriter::start(SqliteConn::new(opened)?)?;
        Ok(Self::new(SqliteDb { writer, readers }))
    }

    /// Closes every connection; later calls fail with `Unavailable`.
    pub async fn close(&self) {
        if let Some(readers) = &self.db().readers {
            readers.close();
        }
        self.db().writer.close().await;
    }
}

impl Dialect for SqliteDb {
    type Conn = SqliteConn;
    type Tx = Member;
    type Pooled = Pooled;
    type Row = SqliteRow;

    /// A savepoint in the writer's group transaction (see `group.rs`), holding the writer until
    /// its commit.
    async fn begin(&self) -> StoreResult<Self::Tx> {
        self.writer.begin().await
    }

    /// As any write: group-committed, durable as `synchronous` says.
    async fn begin_async(&self) -> StoreResult<Self::Tx> {
        self.writer.begin().await
    }

    /// Every commit is already as durable as `synchronous` says.
    async fn flush(&self) -> StoreResult<()> {
        Ok(())
    }

    async fn read(&self) -> StoreResult<Self::Pooled> {
        match &self.readers {
            Some(readers) => Ok(Pooled::Read(readers.acquire().await?)),
            None => Ok(Pooled::Write(self.writer.exclusive().await?)),
        }
    }

    async fn write(&self) -> StoreResult<Self::Pooled> {
        Ok(Pooled::Write(self.writer.exclusive().await?))
    }

    /// Returns once the group commit that holds the transaction's writes is done.
    async fn commit(tx: Self::Tx) -> StoreResult<()> {
        tx.commit().await
    }

    async fn rollback(tx: Self::Tx) -> StoreResult<()> {
        tx.rollback();
        Ok(())
    }

    /// Queued for the group writer, which runs it in its next group (see `group.rs`): the
    /// caller never takes the writer itself.
    async fn transact<T, F>(&self, kind: TxKind, job: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Self::Conn) -> Job<'c, T> + Send + 'static,
    {
        let savepoint = kind != TxKind::AsyncKept;
        self.writer.submit(savepoint, move |conn| group::now(job(conn)).map(|done| (done.value, done.keep))).await
    }

    async fn execute<'a>(conn: &'a mut Self::Conn, sql: &'a str, args: &'a [Arg<'a>]) -> StoreResult<u64> {
        retrying(conn, |c| c.execute_once(sql, args)).await
    }

    async fn insert<'a>(
        conn: &'a mut Self::Conn,
        sql: &'a str,
        args: &'a [Arg<'a>],
        _unique: &'a str,
    ) -> StoreResult<Option<u64>> {
        retrying(conn, |c| match c.execute_once(sql, args) {
            Ok(n) => Ok(Some(n)),
            Err(e) if is_unique_violation(&e) => Ok(None),
            Err(e) => Err(e),
        })
        .await
    }

    async fn fetch_optional<'a>(
        conn: &'a mut Self::Conn,
        sql: &'a str,
        args: &'a [Arg<'a>],
    ) -> StoreResult<Option<Self::Row>> {
        Ok(retrying(conn, |c| c.query_once(sql, args, 1)).await?.pop())
    }

    async fn fetch_all<'a>(conn: &'a mut Self::Conn, sql: &'a str, args: &'a [Arg<'a>]) -> StoreResult<Vec<Self::Row>> {
        retrying(conn, |c| c.query_once(sql, args, usize::MAX)).await
    }

    /// Nothing: `BEGIN IMMEDIATE` on the one writer already excludes every other writer.
    async fn lock<'a>(_conn: &'a mut Self::Conn, _lock: Lock<'a>) -> StoreResult<()> {
        Ok(())
    }

    fn known_head(conn: &SqliteConn, tenant: &str) -> Option<Option<(u64, String)>> {
        conn.known_head(tenant)
    }

    fn note_head(conn: &SqliteConn, tenant: &str, head: Option<(u64, &str)>) {
        conn.note_head(tenant, head);
    }

    /// One prepared single-row `INSERT` per event, in the transaction.
    async fn insert_events<'a>(conn: &'a mut Self::Conn, events: &'a [AuditEvent]) -> StoreResult<()> {
        let sql = insert_sql();
        for event in events {
            let s = Stored::new(event)?;
            let (e, r) = (s.event, &s.event.record);
            let decision = s.decision.as_deref();
            let args = [
                Arg::Text(&r.tenant),
                Arg::Int(s.seq),
                Arg::Text(s.kind),
                Arg::Text(&r.call_id),
                Arg::Int(s.at),
                Arg::Int(s.at_offset),
                Arg::Text(&r.subject),
                Arg::Text(&r.run_id),
                Arg::Text(&r.incident),
                Arg::Text(&r.tool),
                Arg::Text(&r.policy_version),
                Arg::OptText(r.plan_hash.as_deref()),
                Arg::OptText(r.executor_identity.as_deref()),
                Arg::OptText(r.approval_id.as_deref()),
                Arg::OptText(r.approver.as_deref()),
                Arg::OptText(decision),
                Arg::OptText(r.code.as_deref()),
                Arg::OptText(r.reason.as_deref()),
                Arg::Int(s.total_us),
                Arg::Int(s.policy_us),
                Arg::Int(s.adapter_us),
                Arg::Text(&e.prev_hash),
                Arg::Text(&e.hash),
                Arg::OptText(e.evidence_digest.as_deref()),
                Arg::OptText(r.versions.agent_id.as_deref()),
                Arg::OptText(r.versions.model.as_deref()),
                Arg::OptText(r.versions.prompt_hash.as_deref()),
                Arg::OptText(r.versions.tool_schema_hash.as_deref()),
                Arg::OptText(s.agent_source),
                Arg::OptText(s.auth),
            ];
            conn.execute_once(sql, &args).map_err(|e| sql_err(&e))?;
        }
        Ok(())
    }

    const GRANTS: &'static str = "grants";
    const JSONB: &'static str = "";
    const APPEND_GRANT: &'static str = "json_insert(grants, '$[#]', json($1))";
    const NOT_LAPSED: &'static str = "lapsed = 0";
    const BYTE_ORDER: &'static str = "";
    const RETURNING_BUFFERS: bool = true;
}

/// The one audit INSERT, built once; its placeholders are bare `?`s, bound in order without a
/// name lookup per argument.
fn insert_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        let placeholders = vec!["?"; WIDTH].join(", ");
        format!("INSERT INTO audit_events ({COLUMNS}) VALUES ({placeholders})")
    })
}

/// sqlx's reading of a `sqlite:` URL (without Bridle's `synchronous=`), for its file name.
fn options(url: &str, sqlx_url: &str) -> StoreResult<SqliteConnectOptions> {
    SqliteConnectOptions::from_str(sqlx_url)
        .map_err(|e| StoreError::Unavailable(format!("bad SQLite URL `{url}`: {e}")))
}

/// Opens (creating if missing) the database a `sqlite://PATH` or `sqlite::memory:` URL names,
/// a file in WAL mode, and brings its schema up to date: the store's writer and the checkpointer
/// both open through here. Blocking: it waits up to [`BUSY_TIMEOUT`] for another opener's
/// migration, and leaves that busy timeout set.
pub(crate) fn open_migrated(url: &str) -> StoreResult<Connection> {
    let (sqlx_url, _) = split_synchronous(url)?;
    let cannot = |e: &dyn std::fmt::Display| StoreError::Unavailable(format!("cannot open `{url}`: {e}"));
    let conn = if is_in_memory(url) {
        Connection::open_in_memory().map_err(|e| cannot(&e))?
    } else {
        let options = options(url, &sqlx_url)?;
        let path = options.get_filename();
        create_parent_dir(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| cannot(&e))?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(|e| cannot(&e))?;
        conn
    };
    conn.pragma_update(None, "foreign_keys", "ON").map_err(|e| cannot(&e))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| cannot(&e))?;
    migrate::run(&conn)?;
    Ok(conn)
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

fn create_parent_dir(file: &Path) -> StoreResult<()> {
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
        assert_eq!(insert_sql().matches('?').count(), WIDTH);
    }
}
