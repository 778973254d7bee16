//! Operator chat conversations: one `chat_conversations` row each, its messages as JSON.
//!
//! INVARIANT: a turn is stored by compare-and-set on `turns` in the transaction that appends its
//! audit event, so two replicas continuing one conversation at once never both store a turn.

use async_trait::async_trait;
use bridle_core::conversation::{Conversation, ConversationStore};
use bridle_core::ports::{Audit, StoreError, StoreResult};
use time::OffsetDateTime;

use super::audit::append_in;
use super::{Dialect, SqlStore, args};
use crate::store::rows::{Columns, from_json, to_json, to_nanos};

#[async_trait]
impl<D: Dialect> ConversationStore for SqlStore<D> {
    async fn conversation(&self, tenant: &str, conversation_id: &str) -> StoreResult<Option<Conversation>> {
        let mut conn = self.db().read().await?;
        let sql = "SELECT body FROM chat_conversations WHERE tenant = $1 AND conversation_id = $2";
        let row = D::fetch_optional(&mut conn, sql, args![tenant, conversation_id]).await?;
        row.map(|r| from_json(&format!("conversation `{conversation_id}`"), &r.text("body")?)).transpose()
    }

    async fn save_conversation(
        &self,
        c: &Conversation,
        previous_turns: u32,
        keep: u32,
        audit: Audit,
    ) -> StoreResult<bool> {
        let what = format!("conversation `{}`", c.conversation_id);
        let body = to_json(&what, c)?;
        let created = to_nanos(&what, c.created_at)?;
        let updated = to_nanos(&what, c.updated_at)?;
        let mut tx = self.db().begin().await?;
        if previous_turns == 0 {
            let inserted = D::insert(
                &mut tx,
                "INSERT INTO chat_conversations (tenant, conversation_id, subject, created_at, updated_at, turns, body)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
                args![&c.tenant, &c.conversation_id, &c.subject, created, updated, i64::from(c.turns), &body],
                "chat_conversations_pkey",
            )
            .await?;
            if inserted.is_none() {
                return Err(StoreError::Duplicate(what));
            }
            D::execute(
                &mut tx,
                "DELETE FROM chat_conversations WHERE tenant = $1 AND subject = $2 AND conversation_id NOT IN (
                     SELECT conversation_id FROM chat_conversations WHERE tenant = $1 AND subject = $2
                     ORDER BY updated_at DESC, conversation_id DESC LIMIT $3)",
                args![&c.tenant, &c.subject, i64::from(keep.max(1))],
            )
            .await?;
        } else {
            let done = D::execute(
                &mut tx,
                "UPDATE chat_conversations SET updated_at = $1, turns = $2, body = $3
                 WHERE tenant = $4 AND conversation_id = $5 AND turns = $6",
                args![updated, i64::from(c.turns), &body, &c.tenant, &c.conversation_id, i64::from(previous_turns)],
            )
            .await?;
            if done != 1 {
                return Ok(false);
            }
        }
        // INVARIANT: a turn commits with its `chat_turn` event, or not at all.
        append_in::<D>(&mut tx, audit).await?;
        D::commit(tx).await?;
        Ok(true)
    }

    async fn prune_conversations(&self, before: OffsetDateTime) -> StoreResult<u64> {
        let mut conn = self.db().write().await?;
        let sql = "DELETE FROM chat_conversations WHERE updated_at < $1";
        D::execute(&mut conn, sql, args![to_nanos("retention cut-off", before)?]).await
    }
}
