//! The kill switch and the action history over SQLite.
//!
//! Kill switches are one row per exact scope (`''` = every tenant / agent): setting is an upsert,
//! lifting a delete, and the gate's per-call check one indexed read of the covering rows, so a
//! switch set through any replica holds on every other one at its next call. Actions are one
//! row per job, rated in place.

use async_trait::async_trait;
use bridle_core::history::{ActionRecord, Rating};
use bridle_core::kill::{KillScope, KillSwitch};
use bridle_core::ports::{ActionHistory, Audit, KillSwitches, StoreResult};
use time::OffsetDateTime;

use super::audit::append_in;
use super::{SqliteStore, db_err, to_nanos};
use crate::store::rows::{ACTION_COLUMNS, action, kill_switch, scope_columns};

const KILL_COLUMNS: &str = "scope_tenant, scope_agent, reason, set_by, set_at";

#[async_trait]
impl KillSwitches for SqliteStore {
    async fn set_kill(&self, switch: &KillSwitch, audit: Audit) -> StoreResult<bool> {
        let (tenant, agent) = scope_columns(&switch.scope);
        let at = to_nanos("kill switch set_at", switch.set_at)?;
        let mut tx = self.write_tx().await?;
        // Whether it was on before: read first (a concurrent set of the same scope may both
        // report `true`; the switch is on either way).
        let existed: Option<String> =
            sqlx::query_scalar("SELECT reason FROM kill_switches WHERE scope_tenant = ? AND scope_agent = ?")
                .bind(tenant)
                .bind(agent)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
        sqlx::query(
            "INSERT INTO kill_switches (scope_tenant, scope_agent, reason, set_by, set_at)
             VALUES (?, ?, ?, ?, ?)
             ON CONFLICT (scope_tenant, scope_agent)
             DO UPDATE SET reason = excluded.reason, set_by = excluded.set_by, set_at = excluded.set_at",
        )
        .bind(tenant)
        .bind(agent)
        .bind(&switch.reason)
        .bind(&switch.set_by)
        .bind(at)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        // INVARIANT: a switch is set with its audit records, or not at all.
        append_in(&mut tx, audit).await?;
        tx.commit().await.map_err(db_err)?;
        Ok(existed.is_none())
    }

    async fn lift_kill(&self, scope: &KillScope, audit: Audit) -> StoreResult<Option<KillSwitch>> {
        let (tenant, agent) = scope_columns(scope);
        let sql =
            format!("DELETE FROM kill_switches WHERE scope_tenant = ? AND scope_agent = ? RETURNING {KILL_COLUMNS}");
        let mut tx = self.write_tx().await?;
        let row = sqlx::query(&sql).bind(tenant).bind(agent).fetch_optional(&mut *tx).await.map_err(db_err)?;
        let lifted = row.as_ref().map(kill_switch).transpose()?;
        if lifted.is_some() {
            append_in(&mut tx, audit).await?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(lifted)
    }

    async fn active_kills(&self) -> StoreResult<Vec<KillSwitch>> {
        let sql = format!("SELECT {KILL_COLUMNS} FROM kill_switches ORDER BY set_at, scope_tenant, scope_agent");
        let rows = sqlx::query(&sql).fetch_all(&self.reader).await.map_err(db_err)?;
        rows.iter().map(kill_switch).collect()
    }

    async fn kill_covering(&self, tenant: &str, agent: Option<&str>) -> StoreResult<Option<KillSwitch>> {
        // A call on no agent's behalf is covered only by switches for every agent ('').
        let sql = format!(
            "SELECT {KILL_COLUMNS} FROM kill_switches
             WHERE scope_tenant IN ('', ?) AND scope_agent IN ('', ?)
             ORDER BY set_at, scope_tenant, scope_agent LIMIT 1"
        );
        let row = sqlx::query(&sql)
            .bind(tenant)
            .bind(agent.unwrap_or(""))
            .fetch_optional(&self.reader)
            .await
            .map_err(db_err)?;
        row.as_ref().map(kill_switch).transpose()
    }
}

#[async_trait]
impl ActionHistory for SqliteStore {
    async fn record_action(&self, a: &ActionRecord) -> StoreResult<()> {
        sqlx::query(
            "INSERT INTO action_history (tenant, job_id, tool, diagnosis, equipment_class, equipment, executed_at)
             VALUES (?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT (tenant, job_id) DO NOTHING",
        )
        .bind(&a.tenant)
        .bind(&a.job_id)
        .bind(&a.tool)
        .bind(&a.diagnosis)
        .bind(&a.equipment_class)
        .bind(&a.equipment)
        .bind(to_nanos("action executed_at", a.executed_at)?)
        .execute(&self.writer)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn rate_action(
        &self,
        tenant: &str,
        job_id: &str,
        r: &Rating,
        audit: &(dyn for<'a> Fn(&'a ActionRecord) -> Audit + Send + Sync),
    ) -> StoreResult<Option<ActionRecord>> {
        let mut tx = self.write_tx().await?;
        let sql = format!(
            "UPDATE action_history SET outcome = ?, outcome_source = ?, rated_by = ?, note = ?,
                 rated_at = ?
             WHERE tenant = ? AND job_id = ? RETURNING {ACTION_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(r.outcome.as_str())
            .bind(r.source.as_str())
            .bind(&r.rated_by)
            .bind(&r.note)
            .bind(to_nanos("action rated_at", r.rated_at)?)
            .bind(tenant)
            .bind(job_id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
        let rated = row.as_ref().map(action).transpose()?;
        if let Some(a) = &rated {
            // INVARIANT: the rating commits with its `action_outcome` event, or not at all.
            append_in(&mut tx, audit(a)).await?;
        }
        tx.commit().await.map_err(db_err)?;
        Ok(rated)
    }

    async fn action_history(
        &self,
        tenant: &str,
        tool: &str,
        diagnosis: &str,
        equipment_class: &str,
        since: OffsetDateTime,
    ) -> StoreResult<Vec<ActionRecord>> {
        let sql = format!(
            "SELECT {ACTION_COLUMNS} FROM action_history
             WHERE tenant = ? AND tool = ? AND diagnosis = ? AND equipment_class = ?
                 AND executed_at >= ?
             ORDER BY executed_at DESC, job_id LIMIT 1000"
        );
        // Before the storable range means "everything".
        let since = to_nanos("history since", since).unwrap_or(i64::MIN);
        let rows = sqlx::query(&sql)
            .bind(tenant)
            .bind(tool)
            .bind(diagnosis)
            .bind(equipment_class)
            .bind(since)
            .fetch_all(&self.reader)
            .await
            .map_err(db_err)?;
        rows.iter().map(action).collect()
    }
}
