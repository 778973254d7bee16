//! The chat desk: one operator chat turn in a stored conversation, for `POST /v1/chat` and
//! `bridle chat`.
//!
//! The principal is always the credential's: a conversation is found only in its tenant and
//! only for its subject (anyone else gets `NotFound`, as for an unknown id), and the turn's tool
//! calls go through the gate as that principal, in the conversation's run. The turn itself is
//! [`Chat::turn_streaming`] (guard, gate, masking, canary, deadline, tool-call limit) with the
//! conversation's earlier turns as history; blocked inputs are kept as a placeholder and never
//! sent again. The turn is stored by compare-and-set with one `chat_turn` audit event in the
//! same transaction; opening a conversation first deletes those past [`RETENTION`] and keeps at
//! most [`MAX_PER_OWNER`] per principal.

use std::sync::Arc;

use bridle_core::audit::EventKind;
use bridle_core::conversation::{
    BLOCKED_PLACEHOLDER, ChatMessage, Conversation, MAX_PER_OWNER, MAX_TURNS, RETENTION, Speaker, TurnCall,
    storable_answer,
};
use bridle_core::ports::StoreError;
use bridle_core::{Code, Principal, RunContext};
use tokio::time::Instant;

use super::{Chat, ChatAnswer, ChatError, ChatStatus, OnToolCall};
use crate::llm::{LlmClient, Message};

/// The incident of every chat run.
pub const INCIDENT: &str = "chat";

/// The model client of a conversation: given the tenant and the run id, a client whose token
/// budget is counted for that run.
pub type ModelFor = Arc<dyn Fn(&str, &str) -> Arc<dyn LlmClient> + Send + Sync>;

/// Why a turn could not be taken (never a verdict: a blocked message is an answer).
#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    /// No conversation with that id for this principal.
    #[error("no conversation `{0}`")]
    NotFound(String),
    /// The conversation holds [`MAX_TURNS`] turns.
    #[error("conversation `{0}` holds {MAX_TURNS} turns, as many as one may; open a new one")]
    Full(String),
    /// Another turn of the conversation was stored while this one ran; this one's answer was not kept.
    #[error("another turn of conversation `{0}` was stored first; send the message again")]
    Busy(String),
    /// The turn could not be carried out (a store did not answer).
    #[error(transparent)]
    Chat(#[from] ChatError),
    /// The conversation could not be read or stored.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DeskError {
    /// The stable code of a refusal (`None` for a store or gate failure).
    pub fn code(&self) -> Option<Code> {
        match self {
            Self::NotFound(_) => Some(Code::NotFound),
            Self::Full(_) => Some(Code::ConversationFull),
            Self::Busy(_) => Some(Code::InProgress),
            Self::Chat(_) | Self::Store(_) => None,
        }
    }
}

/// One turn's answer in its conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnReply {
    /// The conversation (new when none was named).
    pub conversation_id: String,
    /// This turn's number in it, from 1.
    pub turn: u32,
    /// The turn.
    pub answer: ChatAnswer,
}

/// Operator chat turns over stored conversations.
pub struct ChatDesk {
    chat: Chat,
    model_for: ModelFor,
}

impl std::fmt::Debug for ChatDesk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatDesk").field("chat", &self.chat).finish_non_exhaustive()
    }
}

impl ChatDesk {
    /// A desk running `chat`, each conversation on the client `model_for` gives for its run.
    pub fn new(chat: Chat, model_for: ModelFor) -> Self {
        Self { chat, model_for }
    }

    /// The conversation `id` if `principal` owns it.
    pub async fn conversation(&self, principal: &Principal, id: &str) -> Result<Conversation, DeskError> {
        let stores = self.chat.gate().stores();
        match stores.conversations.conversation(&principal.tenant, id).await? {
            Some(c) if c.owned_by(&principal.tenant, &principal.subject) => Ok(c),
            _ => Err(DeskError::NotFound(id.to_owned())),
        }
    }

    /// One turn: `message` from `principal` in conversation `id` (a new one when `None`).
    /// Bounds on `message` and `id` are the caller's to check first.
    pub async fn turn(
        &self,
        principal: &Principal,
        id: Option<&str>,
        message: &str,
        on_call: OnToolCall<'_>,
    ) -> Result<TurnReply, DeskError> {
        let started = Instant::now();
        let gate = self.chat.gate();
        let now = gate.now();
        let mut conversation = match id {
            Some(id) => self.conversation(principal, id).await?,
            None => {
                let pruned = gate.stores().conversations.prune_conversations(now - RETENTION).await?;
                if pruned > 0 {
                    tracing::info!(pruned, "chat conversations past their retention deleted");
                }
                let id = uuid::Uuid::now_v7().to_string();
                Conversation::open(&id, &principal.tenant, &principal.subject, now)
            }
        };
        if conversation.is_full() {
            return Err(DeskError::Full(conversation.conversation_id));
        }
        let run = RunContext::new(&conversation.run_id, INCIDENT);
        let history = history(&conversation.messages);
        let chat = self.chat.with_client((self.model_for)(&principal.tenant, &run.run_id));
        let answer = chat.turn_streaming(principal, &run, &history, message, on_call).await?;
        let blocked_input = answer.model_calls == 0
            && matches!(answer.code, Some(Code::InjectionDetected | Code::InputTooLong))
            && answer.status == ChatStatus::Blocked;
        let at = gate.now();
        let previous = conversation.turns;
        conversation.turns = previous.saturating_add(1);
        conversation.updated_at = at;
        conversation.messages.push(ChatMessage {
            role: Speaker::User,
            content: if blocked_input { BLOCKED_PLACEHOLDER.to_owned() } else { message.to_owned() },
            at,
            status: blocked_input.then(|| "blocked".to_owned()),
            code: if blocked_input { answer.code.map(|c| c.as_str().to_owned()) } else { None },
            tool_calls: Vec::new(),
        });
        conversation.messages.push(ChatMessage {
            role: Speaker::Assistant,
            content: storable_answer(&answer.text),
            at,
            status: Some(status_name(answer.status).to_owned()),
            code: answer.code.map(|c| c.as_str().to_owned()),
            tool_calls: answer.tool_calls.iter().map(turn_call).collect(),
        });
        let mut record = chat.record_of(EventKind::ChatTurn, principal, &run, &answer.turn_id, started);
        record.code = answer.code.map(|c| c.as_str().to_owned());
        record.reason = Some(format!(
            "turn {} of conversation {}: {}, {} tool calls, {} model calls",
            conversation.turns,
            conversation.conversation_id,
            status_name(answer.status),
            answer.tool_calls.len(),
            answer.model_calls
        ));
        let stored =
            gate.stores().conversations.save_conversation(&conversation, previous, MAX_PER_OWNER, vec![record]);
        if !stored.await? {
            return Err(DeskError::Busy(conversation.conversation_id));
        }
        Ok(TurnReply { conversation_id: conversation.conversation_id, turn: conversation.turns, answer })
    }
}

/// The model's view of earlier turns: user and assistant messages, without blocked inputs and
/// the refusals that answered them.
fn history(messages: &[ChatMessage]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut skip_answer = false;
    for m in messages {
        match m.role {
            Speaker::User if m.is_blocked_input() => skip_answer = true,
            Speaker::User => {
                skip_answer = false;
                out.push(Message::user(m.content.clone()));
            }
            Speaker::Assistant if skip_answer => skip_answer = false,
            Speaker::Assistant => out.push(Message::assistant(m.content.clone())),
        }
    }
    out
}

fn status_name(status: ChatStatus) -> &'static str {
    match status {
        ChatStatus::Answered => "answered",
        ChatStatus::Blocked => "blocked",
        ChatStatus::Stopped => "stopped",
    }
}

fn turn_call(c: &super::ToolCallSummary) -> TurnCall {
    TurnCall {
        tool: c.tool.clone(),
        verdict: c.verdict.clone(),
        code: c.code.map(|c| c.as_str().to_owned()),
        call_id: c.call_id.clone(),
        approval_id: c.approval_id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: Speaker, content: &str, status: Option<&str>) -> ChatMessage {
        ChatMessage {
            role,
            content: content.to_owned(),
            at: time::OffsetDateTime::UNIX_EPOCH,
            status: status.map(str::to_owned),
            code: None,
            tool_calls: Vec::new(),
        }
    }

    #[test]
    fn blocked_turns_never_return_to_the_model() {
        let messages = [
            msg(Speaker::User, "hello", None),
            msg(Speaker::Assistant, "hi", Some("answered")),
            msg(Speaker::User, BLOCKED_PLACEHOLDER, Some("blocked")),
            msg(Speaker::Assistant, "refused", Some("blocked")),
            msg(Speaker::User, "status?", None),
            msg(Speaker::Assistant, "fine", Some("answered")),
        ];
        let seen: Vec<String> = history(&messages).into_iter().map(|m| m.content).collect();
        assert_eq!(seen, ["hello", "hi", "status?", "fine"]);
    }
}
