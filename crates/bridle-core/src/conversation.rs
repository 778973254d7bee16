//! Operator chat conversations: the server's record of one principal's chat (its turns, bounded
//! in number and length), who may continue it, and the port that stores it.
//!
//! A conversation belongs to the tenant and subject of the credential that opened it; another
//! subject, or another tenant, gets the same answer as for an id that does not exist. Its tool
//! calls run in its own run (`chat-{conversation_id}`), so idempotency keys, budgets and taint
//! are the conversation's. A turn whose input the guard blocked is kept as a placeholder: the
//! blocked text is never stored and never goes back to a model.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::ports::{Audit, StoreResult};

/// Longest operator message taken at the edge, in characters (the guard's chat limit, lower,
/// answers `input_too_long` inside it).
pub const MESSAGE_MAX: usize = 16_000;
/// Most turns in one conversation; the next one is refused with `conversation_full`.
pub const MAX_TURNS: u32 = 50;
/// Most conversations one principal keeps; opening another drops the least recently used.
pub const MAX_PER_OWNER: u32 = 50;
/// Longest stored answer, in characters (a longer one is cut, with a note).
pub const STORED_ANSWER_MAX: usize = 16_000;
/// Conversations untouched for this long are deleted (checked when a conversation is opened).
pub const RETENTION: time::Duration = time::Duration::days(30);
/// What stands in a conversation for a message the input guard blocked.
pub const BLOCKED_PLACEHOLDER: &str = "[message blocked by the input guard]";

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// The operator.
    User,
    /// The assistant (the model's masked answer, or a fixed refusal or stop text).
    Assistant,
}

/// One tool call of a turn, as the gate decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnCall {
    /// The tool the model named.
    pub tool: String,
    /// `executed`, `waiting_for_approval`, `refused` or `dry_run`.
    pub verdict: String,
    /// The reject code; `None` when it executed.
    pub code: Option<String>,
    /// The gate's call id (its audit event's).
    pub call_id: String,
    /// The pending approval request a refused change created or found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: Speaker,
    /// What may be shown (for a blocked input, [`BLOCKED_PLACEHOLDER`]).
    pub content: String,
    /// When it was stored.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// `answered`, `blocked` or `stopped` (assistant messages), `blocked` (a blocked input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Why a turn was blocked or stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The tool calls of the turn this answer ends.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<TurnCall>,
}

impl ChatMessage {
    /// Whether the message stands for a blocked input (never sent to a model).
    pub fn is_blocked_input(&self) -> bool {
        self.role == Speaker::User && self.status.as_deref() == Some("blocked")
    }
}

/// A conversation: its owner, its run and its messages, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conversation {
    /// Server-minted id.
    pub conversation_id: String,
    /// Owner's tenant.
    pub tenant: String,
    /// Owner's subject.
    pub subject: String,
    /// The run its tool calls belong to.
    pub run_id: String,
    /// Opened.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last turn.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// Turns taken (each adds one user and one assistant message).
    pub turns: u32,
    /// The messages, oldest first.
    pub messages: Vec<ChatMessage>,
}

impl Conversation {
    /// A new, empty conversation of `tenant`/`subject`.
    pub fn open(conversation_id: &str, tenant: &str, subject: &str, now: OffsetDateTime) -> Self {
        Self {
            conversation_id: conversation_id.to_owned(),
            tenant: tenant.to_owned(),
            subject: subject.to_owned(),
            run_id: format!("chat-{conversation_id}"),
            created_at: now,
            updated_at: now,
            turns: 0,
            messages: Vec::new(),
        }
    }

    /// Whether `tenant`/`subject` owns it (anyone else is told it does not exist).
    pub fn owned_by(&self, tenant: &str, subject: &str) -> bool {
        self.tenant == tenant && self.subject == subject
    }

    /// Whether another turn fits.
    pub fn is_full(&self) -> bool {
        self.turns >= MAX_TURNS
    }
}

/// Cuts an answer to [`STORED_ANSWER_MAX`] characters, saying so.
pub fn storable_answer(text: &str) -> String {
    if text.chars().count() <= STORED_ANSWER_MAX {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(STORED_ANSWER_MAX).collect();
    cut.push_str(" […]");
    cut
}

/// Where conversations are kept (shared by every replica).
#[async_trait]
pub trait ConversationStore: Send + Sync {
    /// The conversation `conversation_id` of `tenant`, whoever owns it.
    async fn conversation(&self, tenant: &str, conversation_id: &str) -> StoreResult<Option<Conversation>>;

    /// Stores `conversation` and appends `audit` in one transaction. With `previous_turns == 0`
    /// it is created (`Duplicate` if the id exists), and its owner's conversations beyond the
    /// `keep` most recently updated are deleted; otherwise it replaces the stored one only if
    /// that still has `previous_turns` turns. `false`: another turn was stored first; nothing
    /// was written.
    async fn save_conversation(
        &self,
        conversation: &Conversation,
        previous_turns: u32,
        keep: u32,
        audit: Audit,
    ) -> StoreResult<bool>;

    /// Deletes the conversations last updated before `before`; how many.
    async fn prune_conversations(&self, before: OffsetDateTime) -> StoreResult<u64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_needs_tenant_and_subject() {
        let c = Conversation::open("c1", "t", "alice", OffsetDateTime::UNIX_EPOCH);
        assert!(c.owned_by("t", "alice"));
        assert!(!c.owned_by("t", "bob"));
        assert!(!c.owned_by("u", "alice"));
        assert_eq!(c.run_id, "chat-c1");
    }

    #[test]
    fn long_answers_are_cut_with_a_note() {
        let long = "가".repeat(STORED_ANSWER_MAX + 10);
        let cut = storable_answer(&long);
        assert!(cut.ends_with(" […]"));
        assert_eq!(cut.chars().count(), STORED_ANSWER_MAX + 4);
        assert_eq!(storable_answer("short"), "short");
    }
}
