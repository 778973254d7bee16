//! Readiness of a SQL store: one read of the migrations table on a reader connection, so a
//! database that answers but lost its schema (dropped, or a search path naming a schema that is
//! gone) is not ready either. It must not write or take any lock.

use async_trait::async_trait;
use bridle_core::ports::{StoreError, StoreHealth, StoreResult};

use super::{Dialect, SqlStore, args};

#[async_trait]
impl<D: Dialect> StoreHealth for SqlStore<D> {
    async fn ping(&self) -> StoreResult<()> {
        let mut conn = self.db().read().await?;
        let sql = "SELECT version FROM schema_migrations ORDER BY version DESC LIMIT 1";
        match D::fetch_optional(&mut conn, sql, args![]).await? {
            Some(_) => Ok(()),
            None => Err(StoreError::Unavailable("the store's schema has no migration recorded".to_owned())),
        }
    }
}
