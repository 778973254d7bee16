//! Operator chat conversations in memory, under the store's one lock (a turn's compare-and-set
//! and its audit event are one step, as on the SQL stores).

use async_trait::async_trait;
use bridle_core::conversation::{Conversation, ConversationStore};
use bridle_core::ports::{Audit, StoreError, StoreResult};
use time::OffsetDateTime;

use super::{MemoryStore, key};

#[async_trait]
impl ConversationStore for MemoryStore {
    async fn conversation(&self, tenant: &str, conversation_id: &str) -> StoreResult<Option<Conversation>> {
        Ok(self.lock()?.conversations.get(&key(tenant, conversation_id)).cloned())
    }

    async fn save_conversation(
        &self,
        c: &Conversation,
        previous_turns: u32,
        keep: u32,
        audit: Audit,
    ) -> StoreResult<bool> {
        let mut inner = self.lock()?;
        let k = key(&c.tenant, &c.conversation_id);
        match (previous_turns, inner.conversations.get(&k)) {
            (0, Some(_)) => return Err(StoreError::Duplicate(format!("conversation `{}`", c.conversation_id))),
            (0, None) => {}
            (_, Some(stored)) if stored.turns == previous_turns => {}
            (_, _) => return Ok(false),
        }
        inner.append(audit)?;
        inner.conversations.insert(k, c.clone());
        if previous_turns == 0 {
            let mut owned: Vec<(OffsetDateTime, String)> = inner
                .conversations
                .values()
                .filter(|o| o.owned_by(&c.tenant, &c.subject))
                .map(|o| (o.updated_at, o.conversation_id.clone()))
                .collect();
            owned.sort_by(|a, b| b.cmp(a));
            for (_, id) in owned.into_iter().skip(usize::try_from(keep.max(1)).unwrap_or(usize::MAX)) {
                inner.conversations.remove(&key(&c.tenant, &id));
            }
        }
        Ok(true)
    }

    async fn prune_conversations(&self, before: OffsetDateTime) -> StoreResult<u64> {
        let mut inner = self.lock()?;
        let len = inner.conversations.len();
        inner.conversations.retain(|_, c| c.updated_at >= before);
        Ok(u64::try_from(len.saturating_sub(inner.conversations.len())).unwrap_or(u64::MAX))
    }
}
