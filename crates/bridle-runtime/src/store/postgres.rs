//! PostgreSQL: connecting and bringing the schema up to date, shared by every port implemented
//! on PostgreSQL (the checkpointer and [`PostgresStore`]), for several `bridle serve` replicas
//! sharing one database.
//!
//! Owns the connection pool options, the embedded migrations (`postgres/migrate.rs`) and the
//! value conversions of the port implementations in `postgres/`; it must not hold any rule of a
//! port: semantics are those of [`super::MemoryStore`], which the contract suite checks every
//! backend against.
//!
//! Concurrency across replicas rests on PostgreSQL alone, never on a lock in this process:
//! - approval consumption and job reservation (`jobs.rs`): one transaction whose job INSERT
//!   claims the id and idempotency key (`ON CONFLICT DO NOTHING` waits for a concurrent claimer
//!   to commit or roll back) and whose `UPDATE … WHERE status = 'granted' … RETURNING`
//!   consumes the approval; a second consumer blocks on the row lock and, once the winner
//!   commits, re-checks the condition against the committed row and matches nothing;
//! - budget debits (`budgets.rs`): one `INSERT … ON CONFLICT DO UPDATE … WHERE used <= headroom
//!   RETURNING used`, likewise re-checked under the row lock;
//! - grants and rejections (`approvals.rs`): one conditional UPDATE each (compare-and-set on
//!   `status` and `grant_count`);
//! - the audit chains (`audit.rs`): each append transaction takes a transaction-level advisory
//!   lock per tenant it touches (in sorted order) before reading the chain's head, so appends
//!   of one tenant queue while other tenants proceed; the `(tenant, seq)` primary key refuses a
//!   fork even if that were bypassed.

mod approvals;
mod audit;
mod auto_actions;
mod budgets;
mod decisions;
mod feedback;
mod governance;
mod jobs;
pub(crate) mod migrate;
mod runs;

use std::time::Duration;

use bridle_core::ports::StoreError;
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

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
pub(crate) use super::sqlite::{enum_name, to_i64, to_json, to_nanos, to_u64};

/// Every store port over PostgreSQL; cheap to clone (the pool is shared).
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database a `postgres://…` / `postgresql://…` URL names and brings its
    /// schema up to date.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Ok(Self { pool: connect(url).await? })
    }

    /// [`Self::open`] with a pool of at most `max_connections` connections.
    pub async fn open_with_connections(url: &str, max_connections: u32) -> Result<Self, StoreError> {
        Ok(Self { pool: connect_with(url, max_connections).await? })
    }

    /// Closes every connection; later calls fail with `Unavailable`.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Whether a driver error is a violation of the unique constraint or index `name`.
fn violates(e: &sqlx::Error, name: &str) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_unique_violation() && d.constraint() == Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("postgres://bridle:s3cret@db:5432/bridle"), "postgres://bridle:***@db:5432/bridle");
        assert_eq!(redact("postgres://postgres@127.0.0.1/test"), "postgres://postgres@127.0.0.1/test");
        assert_eq!(redact("postgresql://db/bridle"), "postgresql://db/bridle");
    }
}
