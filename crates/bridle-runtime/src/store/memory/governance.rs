//! The kill switch and the action history in memory.

use async_trait::async_trait;
use bridle_core::history::{ActionRecord, Rating};
use bridle_core::kill::{KillScope, KillSwitch};
use bridle_core::ports::{ActionHistory, Audit, KillSwitches, StoreResult};
use time::OffsetDateTime;

use super::MemoryStore;

#[async_trait]
impl KillSwitches for MemoryStore {
    async fn set_kill(&self, switch: &KillSwitch, audit: Audit) -> StoreResult<bool> {
        let mut inner = self.lock()?;
        // INVARIANT: appended first, under the one lock; set only if that succeeded.
        inner.append(audit)?;
        let fresh = inner.kills.insert(switch.scope.clone(), switch.clone()).is_none();
        Ok(fresh)
    }

    async fn lift_kill(&self, scope: &KillScope, audit: Audit) -> StoreResult<Option<KillSwitch>> {
        let mut inner = self.lock()?;
        if !inner.kills.contains_key(scope) {
            return Ok(None);
        }
        inner.append(audit)?;
        Ok(inner.kills.remove(scope))
    }

    async fn active_kills(&self) -> StoreResult<Vec<KillSwitch>> {
        let mut all: Vec<KillSwitch> = self.lock()?.kills.values().cloned().collect();
        all.sort_by(|a, b| a.set_at.cmp(&b.set_at).then_with(|| a.scope.cmp(&b.scope)));
        Ok(all)
    }

    async fn kill_covering(&self, tenant: &str, agent: Option<&str>) -> StoreResult<Option<KillSwitch>> {
        Ok(bridle_core::kill::covering_earliest(self.lock()?.kills.values(), tenant, agent).cloned())
    }
}

#[async_trait]
impl ActionHistory for MemoryStore {
    async fn record_action(&self, action: &ActionRecord) -> StoreResult<()> {
        let mut inner = self.lock()?;
        inner.actions.entry((action.tenant.clone(), action.job_id.clone())).or_insert_with(|| action.clone());
        Ok(())
    }

    async fn rate_action(
        &self,
        tenant: &str,
        job_id: &str,
        rating: &Rating,
        audit: &(dyn for<'a> Fn(&'a ActionRecord) -> Audit + Send + Sync),
    ) -> StoreResult<Option<ActionRecord>> {
        let mut inner = self.lock()?;
        let k = (tenant.to_owned(), job_id.to_owned());
        let Some(current) = inner.actions.get(&k) else { return Ok(None) };
        let rated = ActionRecord { rating: Some(rating.clone()), ..current.clone() };
        inner.append(audit(&rated))?;
        inner.actions.insert(k, rated.clone());
        Ok(Some(rated))
    }

    async fn action_history(
        &self,
        tenant: &str,
        tool: &str,
        diagnosis: &str,
        equipment_class: &str,
        since: OffsetDateTime,
    ) -> StoreResult<Vec<ActionRecord>> {
        let inner = self.lock()?;
        let mut out: Vec<ActionRecord> = inner
            .actions
            .values()
            .filter(|a| {
                a.tenant == tenant
                    && a.tool == tool
                    && a.diagnosis == diagnosis
                    && a.equipment_class == equipment_class
                    && a.executed_at >= since
            })
            .cloned()
            .collect();
        out.sort_by_key(|a| std::cmp::Reverse(a.executed_at));
        Ok(out)
    }
}
