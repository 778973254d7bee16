//! Embedded PostgreSQL schema migrations: applies each SQL file of `migrations/postgres/` once,
//! in order, recording it in `schema_migrations`.
//!
//! INVARIANT: the whole run is one transaction holding a transaction-level advisory lock, so
//! concurrent openers (several `bridle serve` replicas starting together) apply each migration
//! exactly once and never see a half-applied schema; a database written by a newer build (an
//! unknown version) is refused rather than guessed at.

use bridle_core::ports::{StoreError, StoreResult};
use sqlx::PgPool;

use super::db_err;

/// One migration: version, name, SQL.
pub(crate) struct Migration {
    pub(crate) version: i64,
    pub(crate) name: &'static str,
    pub(crate) sql: &'static str,
}

/// Every migration, oldest first. Never edit a shipped one; append a new file instead.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "checkpoints",
        sql: include_str!("../../../migrations/postgres/0001_checkpoints.sql"),
    },
    Migration { version: 2, name: "stores", sql: include_str!("../../../migrations/postgres/0002_stores.sql") },
    Migration {
        version: 3,
        name: "audit_evidence",
        sql: include_str!("../../../migrations/postgres/0003_audit_evidence.sql"),
    },
    Migration {
        version: 4,
        name: "auto_actions",
        sql: include_str!("../../../migrations/postgres/0004_auto_actions.sql"),
    },
    Migration {
        version: 5,
        name: "feedback_models",
        sql: include_str!("../../../migrations/postgres/0005_feedback_models.sql"),
    },
    Migration { version: 6, name: "governance", sql: include_str!("../../../migrations/postgres/0006_governance.sql") },
    Migration {
        version: 7,
        name: "one_pending_per_plan",
        sql: include_str!("../../../migrations/postgres/0007_one_pending_per_plan.sql"),
    },
    Migration { version: 8, name: "runs", sql: include_str!("../../../migrations/postgres/0008_runs.sql") },
    Migration { version: 9, name: "audit_auth", sql: include_str!("../../../migrations/postgres/0009_audit_auth.sql") },
    Migration {
        version: 10,
        name: "run_events",
        sql: include_str!("../../../migrations/postgres/0010_run_events.sql"),
    },
    Migration {
        version: 11,
        name: "chat_conversations",
        sql: include_str!("../../../migrations/postgres/0011_chat_conversations.sql"),
    },
    Migration {
        version: 12,
        name: "drop_audit_by_run",
        sql: include_str!("../../../migrations/postgres/0012_drop_audit_by_run.sql"),
    },
    Migration {
        version: 13,
        name: "audit_flush",
        sql: include_str!("../../../migrations/postgres/0013_audit_flush.sql"),
    },
];

/// The advisory lock key that serializes migration runs (`bridle` as ASCII, an arbitrary
/// constant every Bridle build shares).
const LOCK_KEY: i64 = 0x6272_6964_6c65;

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    BIGINT      NOT NULL PRIMARY KEY,
    name       TEXT        NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)";

/// Brings the schema up to date with [`MIGRATIONS`].
pub(crate) async fn run(pool: &PgPool) -> StoreResult<()> {
    apply(pool, MIGRATIONS).await
}

/// Applies `migrations` (oldest first) that the database has not recorded yet. A schema already
/// up to date is only read, so a role that may not create or write (an auditor's, a SIEM
/// exporter's) opens the store too.
pub(crate) async fn apply(pool: &PgPool, migrations: &[Migration]) -> StoreResult<()> {
    if current(pool, migrations).await? {
        return Ok(());
    }
    let mut tx = pool.begin().await.map_err(db_err)?;
    // Held until commit or rollback; a second opener waits here, then sees the recorded versions.
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(LOCK_KEY).execute(&mut *tx).await.map_err(db_err)?;
    sqlx::query(CREATE_TABLE).execute(&mut *tx).await.map_err(db_err)?;
    let applied: Vec<i64> = sqlx::query_scalar("SELECT version FROM schema_migrations ORDER BY version")
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err)?;
    let known = migrations.iter().map(|m| m.version).max().unwrap_or(0);
    if let Some(v) = applied.iter().copied().filter(|v| *v > known).max() {
        return Err(StoreError::Unavailable(format!(
            "database schema version {v} is newer than this build knows ({known}); upgrade Bridle"
        )));
    }
    for m in migrations.iter().filter(|m| !applied.contains(&m.version)) {
        sqlx::raw_sql(m.sql)
            .execute(&mut *tx)
            .await
            .map_err(|e| StoreError::Unavailable(format!("migration {} `{}` failed: {e}", m.version, m.name)))?;
        sqlx::query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)")
            .bind(m.version)
            .bind(m.name)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
    }
    tx.commit().await.map_err(db_err)
}

/// Whether every one of `migrations` is recorded (and none newer, which [`apply`] refuses), read
/// without taking the lock: a schema being migrated right now reads as not current.
async fn current(pool: &PgPool, migrations: &[Migration]) -> StoreResult<bool> {
    // Two statements: a query naming a missing table fails when it is parsed.
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('schema_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await
        .map_err(db_err)?;
    if !exists {
        return Ok(false);
    }
    let recorded: Vec<i64> = sqlx::query_scalar("SELECT version FROM schema_migrations ORDER BY version")
        .fetch_all(pool)
        .await
        .map_err(db_err)?;
    let mut wanted: Vec<i64> = migrations.iter().map(|m| m.version).collect();
    wanted.sort_unstable();
    Ok(recorded == wanted)
}
