//! The kill switch and the action history.
//!
//! Kill switches are one row per exact scope (`''` = every tenant / agent): setting is an upsert,
//! lifting a delete, and the gate's per-call check one indexed read of the covering rows, so a
//! switch set through any replica holds on every other one at its next call. Actions are one
//! row per job, rated in place.

use std::sync::LazyLock;

use async_trait::async_trait;
use bridle_core::history::{ActionRecord, Rating};
use bridle_core::kill::{KillScope, KillSwitch};
use bridle_core::ports::{ActionHistory, Audit, KillSwitches, StoreResult};
use time::OffsetDateTime;

use super::audit::append_in;
use super::{Dialect, SqlStore, args};
use crate::store::rows::{ACTION_COLUMNS, action, kill_switch, scope_columns, to_nanos};

const KILL_COLUMNS: &str = "scope_tenant, scope_agent, reason, set_by, set_at";

#[async_trait]
impl<D: Dialect> KillSwitches for SqlStore<D> {
    async fn set_kill(&self, switch: &KillSwitch, audit: Audit) -> StoreResult<bool> {
        let (tenant, agent) = scope_columns(&switch.scope);
        let at = to_nanos("kill switch set_at", switch.set_at)?;
        let mut tx = self.db().begin().await?;
        // Whether it was on before: read first (a concurrent set of the same scope may both
        // report `true`; the switch is on either way).
        let sql = "SELECT reason FROM kill_switches WHERE scope_tenant = $1 AND scope_agent = $2";
        let existed = D::fetch_optional(&mut tx, sql, args![tenant, agent]).await?;
        D::execute(
            &mut tx,
            "INSERT INTO kill_switches (scope_tenant, scope_agent, reason, set_by, set_at)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (scope_tenant, scope_agent)
             DO UPDATE SET reason = EXCLUDED.reason, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at",
            args![tenant, agent, &switch.reason, &switch.set_by, at],
        )
        .await?;
        // INVARIANT: a switch is set with its audit records (audit locks last), or not at all.
        append_in::<D>(&mut tx, audit).await?;
        D::commit(tx).await?;
        Ok(existed.is_none())
    }

    async fn lift_kill(&self, scope: &KillScope, audit: Audit) -> StoreResult<Option<KillSwitch>> {
        let (tenant, agent) = scope_columns(scope);
        let sql =
            format!("DELETE FROM kill_switches WHERE scope_tenant = $1 AND scope_agent = $2 RETURNING {KILL_COLUMNS}");
        let mut tx = self.db().begin().await?;
        let row = D::fetch_optional(&mut tx, &sql, args![tenant, agent]).await?;
        let lifted = row.as_ref().map(kill_switch).transpose()?;
        if lifted.is_some() {
            append_in::<D>(&mut tx, audit).await?;
        }
        D::commit(tx).await?;
        Ok(lifted)
    }

    async fn active_kills(&self) -> StoreResult<Vec<KillSwitch>> {
        let sql = format!("SELECT {KILL_COLUMNS} FROM kill_switches ORDER BY set_at, scope_tenant, scope_agent");
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(&mut conn, &sql, &[]).await?;
        rows.iter().map(kill_switch).collect()
    }

    async fn kill_covering(&self, tenant: &str, agent: Option<&str>) -> StoreResult<Option<KillSwitch>> {
        let mut conn = self.db().read().await?;
        covering_in::<D>(&mut conn, tenant, agent).await
    }
}

/// `columns` of the switches that can cover a call of the tenant bound as `tenant` on behalf of
/// the agent bound as `agent` (`''`: on no agent's behalf): each scope a primary-key probe.
pub(super) fn covering_probes(columns: &str, tenant: &str, agent: &str) -> String {
    [("''", "''"), ("''", agent), (tenant, "''"), (tenant, agent)]
        .map(|(t, a)| format!("SELECT {columns} FROM kill_switches WHERE scope_tenant = {t} AND scope_agent = {a}"))
        .join(" UNION ALL ")
}

/// The earliest switch covering a call of `tenant` on behalf of `agent`, read through `conn`
/// (a reader, or the run admission's transaction). The (at most four) scopes that can cover the
/// call are each a primary-key probe; the earliest is picked here: `IN (…)` lists and `ORDER BY`
/// would build SQLite temporary B-trees on every call. A call on no agent's behalf is covered
/// only by switches for every agent ('').
pub(super) async fn covering_in<D: Dialect>(
    conn: &mut D::Conn,
    tenant: &str,
    agent: Option<&str>,
) -> StoreResult<Option<KillSwitch>> {
    static SQL: LazyLock<String> = LazyLock::new(|| covering_probes(KILL_COLUMNS, "$1", "$2"));
    let rows = D::fetch_all(conn, &SQL, args![tenant, agent.unwrap_or("")]).await?;
    let switches = rows.iter().map(kill_switch).collect::<StoreResult<Vec<_>>>()?;
    Ok(bridle_core::kill::covering_earliest(&switches, tenant, agent).cloned())
}

#[async_trait]
impl<D: Dialect> ActionHistory for SqlStore<D> {
    async fn record_action(&self, a: &ActionRecord) -> StoreResult<()> {
        let mut conn = self.db().write().await?;
        D::execute(
            &mut conn,
            "INSERT INTO action_history (tenant, job_id, tool, diagnosis, equipment_class, equipment, executed_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (tenant, job_id) DO NOTHING",
            args![
                &a.tenant,
                &a.job_id,
                &a.tool,
                &a.diagnosis,
                &a.equipment_class,
                &a.equipment,
                to_nanos("action executed_at", a.executed_at)?,
            ],
        )
        .await?;
        Ok(())
    }

    async fn rate_action(
        &self,
        tenant: &str,
        job_id: &str,
        r: &Rating,
        audit: &(dyn for<'a> Fn(&'a ActionRecord) -> Audit + Send + Sync),
    ) -> StoreResult<Option<ActionRecord>> {
        let sql = format!(
            "UPDATE action_history SET outcome = $1, outcome_source = $2, rated_by = $3, note = $4,
                 rated_at = $5
             WHERE tenant = $6 AND job_id = $7 RETURNING {ACTION_COLUMNS}"
        );
        let rated_at = to_nanos("action rated_at", r.rated_at)?;
        let mut tx = self.db().begin().await?;
        let args = args![r.outcome.as_str(), r.source.as_str(), &r.rated_by, &r.note, rated_at, tenant, job_id];
        let row = D::fetch_optional(&mut tx, &sql, args).await?;
        let rated = row.as_ref().map(action).transpose()?;
        if let Some(a) = &rated {
            // INVARIANT: the rating commits with its `action_outcome` event, or not at all.
            append_in::<D>(&mut tx, audit(a)).await?;
        }
        D::commit(tx).await?;
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
             WHERE tenant = $1 AND tool = $2 AND diagnosis = $3 AND equipment_class = $4
                 AND executed_at >= $5
             ORDER BY executed_at DESC, job_id LIMIT 1000"
        );
        // Before the storable range means "everything".
        let since = to_nanos("history since", since).unwrap_or(i64::MIN);
        let mut conn = self.db().read().await?;
        let rows = D::fetch_all(&mut conn, &sql, args![tenant, tool, diagnosis, equipment_class, since]).await?;
        rows.iter().map(action).collect()
    }
}
