//! SQLite store: every port over one database file (WAL) or a throwaway in-memory database.
//!
//! Owns opening the database, the connection pools and the value conversions shared by the
//! port implementations in `sqlite/`; it must not hold any rule of its own: semantics are those
//! of [`super::MemoryStore`], which the contract suite checks both against.
//!
//! Concurrency: every write goes through ONE writer connection (a pool of size 1) inside
//! `BEGIN IMMEDIATE` transactions or single statements, so writers queue in the pool instead of
//! meeting `SQLITE_BUSY` lock upgrades; reads use a separate pool of reader connections, which
//! WAL lets run beside the writer. `sqlite::memory:` uses one connection for both, kept open
//! for the life of the store (the database lives only as long as its connection).

mod approvals;
mod audit;
pub(crate) mod auto_actions;
mod budgets;
mod decisions;
mod feedback;
mod governance;
mod jobs;
pub(crate) mod migrate;
mod runs;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use bridle_core::ports::{StoreError, StoreResult};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, Transaction};
use time::OffsetDateTime;

/// How long a connection waits on a lock held by another process before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Reader connections for a database file.
const READERS: u32 = 4;

/// All ports over SQLite.
#[derive(Debug, Clone)]
pub struct SqliteStore {
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
        let store = if is_in_memory(url) {
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
            Self { writer: pool.clone(), reader: pool }
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
            Self { writer, reader }
        };
        migrate::run(&store.writer).await?;
        Ok(store)
    }

    /// Closes every connection; later calls fail with `Unavailable`.
    pub async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }

    /// A write transaction on the writer connection, holding the write lock from its start.
    async fn write_tx(&self) -> StoreResult<Transaction<'static, Sqlite>> {
        self.writer.begin_with("BEGIN IMMEDIATE").await.map_err(db_err)
    }
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

pub(crate) use super::db_err;

/// Whether a driver error is a UNIQUE/PRIMARY KEY violation.
fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation())
}

/// An instant as unix nanoseconds; instants outside 1677–2262 cannot be stored.
pub(crate) fn to_nanos(what: &str, t: OffsetDateTime) -> StoreResult<i64> {
    i64::try_from(t.unix_timestamp_nanos())
        .map_err(|_| StoreError::Unavailable(format!("{what} `{t}` is outside the storable range")))
}

/// Unix nanoseconds back to an instant (UTC).
pub(crate) fn from_nanos(what: &str, n: i64) -> StoreResult<OffsetDateTime> {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(n))
        .map_err(|e| StoreError::Corrupt(format!("{what} {n} is not a valid instant: {e}")))
}

/// A count for an INTEGER column; values above `i64::MAX` are refused, never wrapped.
pub(crate) fn to_i64(what: &str, v: u64) -> StoreResult<i64> {
    i64::try_from(v).map_err(|_| StoreError::Unavailable(format!("{what} {v} exceeds the largest storable integer")))
}

/// An INTEGER column back to a count.
pub(crate) fn to_u64(what: &str, v: i64) -> StoreResult<u64> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("{what} is negative ({v})")))
}

/// JSON text of a value for a TEXT column.
pub(crate) fn to_json<T: Serialize + ?Sized>(what: &str, value: &T) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Unavailable(format!("cannot encode {what}: {e}")))
}

/// A value from a JSON TEXT column.
pub(crate) fn from_json<T: DeserializeOwned>(what: &str, text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// The stable name of a serde unit-variant enum (`"tool_call"`), for a TEXT column.
pub(crate) fn enum_name<T: Serialize>(what: &str, value: T) -> StoreResult<String> {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        _ => Err(StoreError::Unavailable(format!("{what} has no stable name"))),
    }
}

/// A serde unit-variant enum back from its stable name.
pub(crate) fn parse_enum<T: DeserializeOwned>(what: &str, name: &str) -> StoreResult<T> {
    serde_json::from_value(serde_json::Value::String(name.to_owned()))
        .map_err(|_| StoreError::Corrupt(format!("unknown {what} `{name}`")))
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
    fn instants_round_trip_to_the_nanosecond() -> StoreResult<()> {
        let t = time::macros::datetime!(2026-03-04 05:06:07.123456789 +02:00);
        let back = from_nanos("t", to_nanos("t", t)?)?;
        assert_eq!(back, t);
        assert_eq!(back.offset(), time::UtcOffset::UTC);
        assert!(to_nanos("t", time::macros::datetime!(2300-01-01 00:00 UTC)).is_err());
        Ok(())
    }

    #[test]
    fn counts_never_wrap() {
        assert_eq!(to_i64("n", 5).ok(), Some(5));
        assert!(to_i64("n", u64::MAX).is_err());
        assert!(to_u64("n", -1).is_err());
    }
}
