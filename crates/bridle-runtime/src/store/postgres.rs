//! PostgreSQL: connecting and bringing the schema up to date, shared by every port implemented
//! on PostgreSQL (today the checkpointer; the other stores join it here).
//!
//! Owns the connection pool options and the embedded migrations (`postgres/migrate.rs`); it must
//! not hold any rule of a port: those live with each implementation.

pub(crate) mod migrate;

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
    let pool = PgPoolOptions::new()
        .max_connections(POOL_SIZE)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect(url)
        .await
        .map_err(|e| StoreError::Unavailable(format!("cannot connect to PostgreSQL at `{}`: {e}", redact(url))))?;
    migrate::run(&pool).await?;
    Ok(pool)
}

/// The URL without its password, for error messages.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((userinfo, host)) = rest.rsplit_once('@') else { return url.to_owned() };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

pub(crate) use super::db_err;

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
