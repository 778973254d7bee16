//! Embedded schema migrations: applies each SQL file of `migrations/sqlite/` once, in order.
//!
//! Applied versions are recorded in `schema_migrations`, so reopening a database is a no-op;
//! a database written by a newer build (an unknown version) is refused rather than guessed at.

use bridle_core::ports::{StoreError, StoreResult};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::driver::sql_err;

/// One migration: version, name, SQL.
struct Migration {
    version: i64,
    name: &'static str,
    sql: &'static str,
}

/// Every migration, oldest first. Never edit a shipped one; append a new file instead.
const MIGRATIONS: &[Migration] = &[
    Migration { version: 1, name: "init", sql: include_str!("../../../migrations/sqlite/0001_init.sql") },
    Migration { version: 2, name: "checkpoints", sql: include_str!("../../../migrations/sqlite/0002_checkpoints.sql") },
    Migration { version: 3, name: "run_taint", sql: include_str!("../../../migrations/sqlite/0003_run_taint.sql") },
    Migration {
        version: 4,
        name: "audit_evidence",
        sql: include_str!("../../../migrations/sqlite/0004_audit_evidence.sql"),
    },
    Migration {
        version: 5,
        name: "auto_actions",
        sql: include_str!("../../../migrations/sqlite/0005_auto_actions.sql"),
    },
    Migration {
        version: 6,
        name: "feedback_models",
        sql: include_str!("../../../migrations/sqlite/0006_feedback_models.sql"),
    },
    Migration { version: 7, name: "governance", sql: include_str!("../../../migrations/sqlite/0007_governance.sql") },
    Migration {
        version: 8,
        name: "one_pending_per_plan",
        sql: include_str!("../../../migrations/sqlite/0008_one_pending_per_plan.sql"),
    },
    Migration { version: 9, name: "runs", sql: include_str!("../../../migrations/sqlite/0009_runs.sql") },
    Migration { version: 10, name: "audit_auth", sql: include_str!("../../../migrations/sqlite/0010_audit_auth.sql") },
    Migration { version: 11, name: "run_events", sql: include_str!("../../../migrations/sqlite/0011_run_events.sql") },
    Migration {
        version: 12,
        name: "chat_conversations",
        sql: include_str!("../../../migrations/sqlite/0012_chat_conversations.sql"),
    },
    Migration {
        version: 13,
        name: "drop_audit_by_run",
        sql: include_str!("../../../migrations/sqlite/0013_drop_audit_by_run.sql"),
    },
];

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    applied_at TEXT    NOT NULL
) STRICT";

/// Brings the schema of `conn`'s database up to date (blocking: it waits for a concurrent
/// opener's migration up to the connection's busy timeout).
pub(crate) fn run(conn: &Connection) -> StoreResult<()> {
    conn.execute_batch(CREATE_TABLE).map_err(|e| sql_err(&e))?;
    let newest: Option<i64> =
        conn.query_row("SELECT MAX(version) FROM schema_migrations", [], |r| r.get(0)).map_err(|e| sql_err(&e))?;
    let known = MIGRATIONS.iter().map(|m| m.version).max().unwrap_or(0);
    if let Some(v) = newest.filter(|v| *v > known) {
        return Err(StoreError::Unavailable(format!(
            "database schema version {v} is newer than this build knows ({known}); upgrade Bridle"
        )));
    }
    for m in MIGRATIONS {
        // Each migration and its record commit together; a concurrent opener that applied it
        // first is seen under the write lock and skipped.
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate).map_err(|e| sql_err(&e))?;
        let done: Option<i64> = tx
            .query_row("SELECT version FROM schema_migrations WHERE version = ?1", [m.version], |r| r.get(0))
            .optional()
            .map_err(|e| sql_err(&e))?;
        if done.is_none() {
            tx.execute_batch(m.sql)
                .map_err(|e| StoreError::Unavailable(format!("migration {} `{}` failed: {e}", m.version, m.name)))?;
            tx.execute(
                "INSERT INTO schema_migrations (version, name, applied_at)
                 VALUES (?1, ?2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                rusqlite::params![m.version, m.name],
            )
            .map_err(|e| sql_err(&e))?;
        }
        tx.commit().map_err(|e| sql_err(&e))?;
    }
    Ok(())
}
