//! `POST /v1/chat`: one operator chat turn (seed 000's chat) in a conversation the server keeps,
//! as the credential's own principal, through the runtime's chat desk (`bridle-runtime`'s
//! `chat/desk.rs`): the guard before any model call, every tool call through the gate, the
//! answer masked or withheld. JSON by default; with `Accept: text/event-stream`, Server-Sent
//! Events: `tool_call` as each call is decided, then `answer`, then `done` (or `error`). A
//! message the guard blocks is an answer (200, `status: "blocked"`), not an HTTP error.
//!
//! The turn runs on a task of its own, so a client that hangs up never cuts it in half: its
//! tool calls finish, are audited, and the turn is stored.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bridle_core::Code;
use bridle_core::conversation::MESSAGE_MAX;
use bridle_runtime::chat::desk::{ChatDesk, DeskError, TurnReply};
use bridle_runtime::chat::{ChatStatus, ToolCallSummary};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::mpsc;
use utoipa::ToSchema;

use super::Caller;
use crate::AppState;
use crate::error::ApiError;
use crate::limits::JsonBody;

/// Scope for the operator chat.
pub const SCOPE_CHAT_USE: &str = "chat:use";

/// Body of `POST /v1/chat`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatBody {
    /// The operator's message (at most 16 000 characters here; the guard's chat limit, 2 000 by
    /// default, answers `input_too_long` inside that).
    #[schema(min_length = 1, max_length = 16000)]
    pub message: String,
    /// The conversation to continue (as a previous answer named it); a new one when absent.
    #[schema(min_length = 1, max_length = 128, pattern = r"^[A-Za-z0-9_.:/@-]+$")]
    pub conversation_id: Option<String>,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model answered; `text` is its masked answer.
    Answered,
    /// The guard blocked the message (before any model call) or withheld the answer.
    Blocked,
    /// A limit (tool calls, deadline, budget) or a model failure ended the turn.
    Stopped,
}

/// What the gate decided of a tool call, in words.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallVerdict {
    /// It ran; its masked result went back to the model.
    Executed,
    /// A change waits for an operator's approval (`approval_id`).
    WaitingForApproval,
    /// The gate refused it (`code`).
    Refused,
    /// Dry run: nothing executed.
    DryRun,
}

/// One tool call of a turn.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatToolCall {
    /// The tool the model named.
    pub tool: String,
    /// What the gate decided.
    pub verdict: CallVerdict,
    /// The reject code; null when it executed.
    pub code: Option<String>,
    /// The gate's call id (its audit event's).
    pub call_id: String,
    /// The approval request a change waits for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
}

/// Tokens of a turn's model calls.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatUsage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
}

/// `POST /v1/chat`: one turn.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ChatTurn {
    /// The conversation (send it back to continue).
    pub conversation_id: String,
    /// This turn's number in the conversation, from 1.
    pub turn: u32,
    /// How it ended.
    pub status: TurnStatus,
    /// Why it was blocked or stopped (`injection_detected`, `input_too_long`, `output_blocked`,
    /// `too_many_tool_calls`, `deadline_exceeded`, `llm_unavailable`, …); null when answered.
    pub code: Option<String>,
    /// What may be shown: the masked answer, or the fixed blocked, withheld or stopped text.
    pub text: String,
    /// The turn's tool calls, in order.
    pub tool_calls: Vec<ChatToolCall>,
    /// Tokens over the turn's model calls.
    pub usage: ChatUsage,
    /// Model calls made (0 when the message was blocked).
    pub model_calls: u32,
    /// The turn's id (its `chat_turn` audit event's call id).
    pub turn_id: String,
}

/// One Server-Sent Event of a streamed turn.
#[derive(Debug, ToSchema)]
pub struct ChatFrame {
    /// `tool_call` (data: a ChatToolCall), `answer` (data: the ChatTurn), `done` (data:
    /// `{conversation_id, turn}`), or `error` (data: the error shape).
    pub event: String,
    /// The frame's JSON text.
    pub data: String,
}

fn tool_call(c: &ToolCallSummary) -> ChatToolCall {
    let verdict = match c.verdict.as_str() {
        "executed" => CallVerdict::Executed,
        "waiting_for_approval" => CallVerdict::WaitingForApproval,
        "dry_run" => CallVerdict::DryRun,
        _ => CallVerdict::Refused,
    };
    ChatToolCall {
        tool: c.tool.clone(),
        verdict,
        code: c.code.map(|c| c.as_str().to_owned()),
        call_id: c.call_id.clone(),
        approval_id: c.approval_id.clone(),
    }
}

fn rendered(reply: &TurnReply) -> ChatTurn {
    let a = &reply.answer;
    ChatTurn {
        conversation_id: reply.conversation_id.clone(),
        turn: reply.turn,
        status: match a.status {
            ChatStatus::Answered => TurnStatus::Answered,
            ChatStatus::Blocked => TurnStatus::Blocked,
            ChatStatus::Stopped => TurnStatus::Stopped,
        },
        code: a.code.map(|c| c.as_str().to_owned()),
        text: a.text.clone(),
        tool_calls: a.tool_calls.iter().map(tool_call).collect(),
        usage: ChatUsage { prompt_tokens: a.usage.prompt_tokens, completion_tokens: a.usage.completion_tokens },
        model_calls: a.model_calls,
        turn_id: a.turn_id.clone(),
    }
}

impl From<DeskError> for ApiError {
    fn from(e: DeskError) -> Self {
        match e.code() {
            Some(Code::NotFound) => ApiError::not_found(e.to_string()),
            Some(code) => ApiError::new(StatusCode::CONFLICT, code, e.to_string()),
            None => ApiError::internal(&e),
        }
    }
}

/// One operator chat turn.
#[utoipa::path(
    post, path = "/v1/chat", operation_id = "chatTurn", tag = "chat",
    request_body = ChatBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the turn, answered, blocked or stopped (a blocked message is a 200 with `status: \"blocked\"` and `code: \"injection_detected\"`); with `Accept: text/event-stream`, Server-Sent Events `tool_call`, `answer`, `done` (or `error`)",
            content((ChatTurn = "application/json"), (ChatFrame = "text/event-stream"))),
        (status = 400, description = "an empty or over-long `message`, a malformed `conversation_id`, or a malformed body (`bad_request`)", body = crate::openapi::ErrorBody),
        (status = 403, description = "needs `chat:use` (`forbidden`)", body = crate::openapi::ErrorBody),
        (status = 404, description = "no such conversation of the caller's (`not_found`; another principal's is unknown too)", body = crate::openapi::ErrorBody),
        (status = 409, description = "the conversation holds 50 turns (`conversation_full`), or another turn of it was stored first (`in_progress`)", body = crate::openapi::ErrorBody),
    )
)]
pub async fn turn(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ChatBody>,
) -> Result<Response, ApiError> {
    caller.require_any(&[SCOPE_CHAT_USE])?;
    if body.message.is_empty() {
        return Err(ApiError::bad_request("`message` must not be empty"));
    }
    let chars = body.message.chars().count();
    if chars > MESSAGE_MAX {
        return Err(ApiError::bad_request(format!("`message` has {chars} characters, more than {MESSAGE_MAX}")));
    }
    if let Some(id) = &body.conversation_id {
        bridle_core::bounds::require("conversation_id", id)
            .and_then(|()| bridle_core::bounds::check_id("conversation_id", id))
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
    }
    let desk = state.chat.clone().ok_or_else(|| ApiError::not_found("the operator chat is not served here"))?;
    let streaming = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("text/event-stream"));
    if streaming {
        return Ok(stream(desk, caller, body).into_response());
    }
    let task =
        tokio::spawn(
            async move { desk.turn(&caller.0, body.conversation_id.as_deref(), &body.message, &|_| {}).await },
        );
    let reply = task.await??;
    Ok(Json(rendered(&reply)).into_response())
}

/// The turn as Server-Sent Events, run on its own task.
fn stream(
    desk: Arc<ChatDesk>,
    caller: Caller,
    body: ChatBody,
) -> Sse<impl futures_util::Stream<Item = Result<SseEvent, Infallible>>> {
    let (tx, rx) = mpsc::unbounded_channel::<SseEvent>();
    tokio::spawn(async move {
        let calls = tx.clone();
        let on_call = move |c: &ToolCallSummary| {
            let data = serde_json::to_string(&tool_call(c)).unwrap_or_default();
            // A client that left is no reason to stop: the turn goes on and is stored.
            let _ = calls.send(SseEvent::default().event("tool_call").data(data));
        };
        let frames = match desk.turn(&caller.0, body.conversation_id.as_deref(), &body.message, &on_call).await {
            Ok(reply) => {
                let answer = serde_json::to_string(&rendered(&reply)).unwrap_or_default();
                let done = json!({"conversation_id": reply.conversation_id, "turn": reply.turn}).to_string();
                vec![SseEvent::default().event("answer").data(answer), SseEvent::default().event("done").data(done)]
            }
            Err(e) => {
                let e = ApiError::from(e);
                let body = json!({"error": {"code": e.code.as_str(), "message": e.message}});
                vec![SseEvent::default().event("error").data(body.to_string())]
            }
        };
        for frame in frames {
            let _ = tx.send(frame);
        }
    });
    let frames = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|f| (Ok(f), rx)) });
    Sse::new(frames).keep_alive(KeepAlive::default())
}
