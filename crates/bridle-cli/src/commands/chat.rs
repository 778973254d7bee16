//! `bridle chat`: the operator chat in a terminal, on the store and the configured model, as the
//! operator of `--token` / BRIDLE_TOKEN (verified as `bridle serve` verifies tokens) or `--as P`
//! on a sqlite:// or memory store, exactly as `bridle approvals` authenticates. Argument handling
//! and printing only: each turn is the runtime's chat desk (`Runtime::chat_desk`), the same as
//! `POST /v1/chat`, so the guard, the gate, the masking and the limits are the route's.
//!
//! `--message M` takes one turn and exits; without it, every line read from stdin is a turn
//! (`/new` starts a new conversation, `/quit` or end of input ends). Tool calls are printed as
//! the gate decides them. `--json` prints one JSON line per tool call and per answer.

use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use bridle_core::Principal;
use bridle_runtime::chat::ToolCallSummary;
use bridle_runtime::chat::desk::{ChatDesk, TurnReply};
use bridle_runtime::runtime::RuntimeBuilder;
use serde_json::json;

use super::approvals::{Credential, Refusal, authenticate};
use super::out;

/// The scope the chat needs, as over the API.
const SCOPE: &str = "chat:use";

/// `bridle chat`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    who: Credential,
    /// Take this one message as a turn and exit (default: read a message per line from stdin).
    #[arg(long)]
    message: Option<String>,
    /// Continue this conversation (as a previous answer named it).
    #[arg(long)]
    conversation: Option<String>,
}

/// Runs the chat.
pub async fn run(args: &Args, config: Option<&Path>, db: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let config = Arc::new(super::config(config)?);
    let url = super::store_url(&config, db);
    let principal = match authenticate(&config, &url, &args.who, "bridle chat").await? {
        Ok((principal, _)) if principal.has_scope(SCOPE) => principal,
        Ok((principal, _)) => {
            let message = format!("`{}` does not hold `{SCOPE}`", principal.subject);
            return refuse(json, &Refusal { code: "forbidden", message });
        }
        Err(refusal) => return refuse(json, &refusal),
    };
    if let Some(id) = &args.conversation {
        bridle_core::bounds::require("--conversation", id)
            .and_then(|()| bridle_core::bounds::check_id("--conversation", id))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let runtime = RuntimeBuilder::new(config).tools(super::tools()).store_url(&url).build();
    let runtime = runtime.await.context("building the runtime")?;
    super::track(&runtime.stores);
    let desk = runtime.chat_desk().context("building the operator chat")?;
    let mut session = Session { desk: &desk, principal: &principal, json, conversation: args.conversation.clone() };
    let code = match &args.message {
        Some(message) => session.turn(message).await?,
        None => session.repl().await?,
    };
    runtime.shutdown().await;
    Ok(code)
}

/// One terminal's conversation.
struct Session<'a> {
    desk: &'a ChatDesk,
    principal: &'a Principal,
    json: bool,
    conversation: Option<String>,
}

impl Session<'_> {
    /// Lines from stdin until `/quit` or its end; exit 1 if a turn was refused.
    async fn repl(&mut self) -> anyhow::Result<ExitCode> {
        if !self.json {
            eprintln!(
                "bridle chat as `{}` of `{}`: /new starts a new conversation, /quit ends",
                self.principal.subject, self.principal.tenant
            );
        }
        let mut code = ExitCode::SUCCESS;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<String>>(1);
        // Reading stdin blocks: on a thread of its own, a line at a time.
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        while let Some(line) = rx.recv().await {
            let line = line.context("reading stdin")?;
            match line.trim() {
                "" => {}
                "/quit" | "/exit" => break,
                "/new" => {
                    self.conversation = None;
                    if !self.json {
                        out::line("(a new conversation starts with the next message)")?;
                    }
                }
                _ => {
                    if self.turn(&line).await? != ExitCode::SUCCESS {
                        code = ExitCode::FAILURE;
                    }
                }
            }
        }
        Ok(code)
    }

    /// One turn, printed; exit 1 when it was refused (no conversation, a full one).
    async fn turn(&mut self, message: &str) -> anyhow::Result<ExitCode> {
        let chars = message.chars().count();
        if message.is_empty() || chars > bridle_core::conversation::MESSAGE_MAX {
            let message =
                format!("a message has 1 to {} characters, not {chars}", bridle_core::conversation::MESSAGE_MAX);
            return refuse(self.json, &Refusal { code: "bad_request", message });
        }
        let json = self.json;
        let on_call = move |c: &ToolCallSummary| {
            let line = if json {
                json!({"event": "tool_call", "tool": c.tool, "verdict": c.verdict, "code": c.code,
                    "call_id": c.call_id, "approval_id": c.approval_id})
                .to_string()
            } else {
                let code = c.code.map(|c| format!(" ({c})")).unwrap_or_default();
                let approval = c.approval_id.as_ref().map(|a| format!(" approval {a}")).unwrap_or_default();
                format!("  tool {}: {}{code}{approval}", c.tool, c.verdict.replace('_', " "))
            };
            // A closed stdout is no reason to stop the turn.
            let _ = out::line(&line);
        };
        match self.desk.turn(self.principal, self.conversation.as_deref(), message, &on_call).await {
            Ok(reply) => {
                self.conversation = Some(reply.conversation_id.clone());
                print_reply(&reply, self.json)?;
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => match e.code() {
                Some(code) => refuse(self.json, &Refusal { code: code.as_str(), message: e.to_string() }),
                None => Err(anyhow::anyhow!("{e}")),
            },
        }
    }
}

fn print_reply(reply: &TurnReply, json: bool) -> anyhow::Result<()> {
    let a = &reply.answer;
    if json {
        let line = json!({"event": "answer", "conversation_id": reply.conversation_id, "turn": reply.turn,
            "status": a.status, "code": a.code, "text": a.text, "tool_calls": a.tool_calls,
            "model_calls": a.model_calls, "turn_id": a.turn_id});
        return out::line(&line.to_string());
    }
    let status = match (a.status, a.code) {
        (bridle_runtime::chat::ChatStatus::Answered, _) => String::new(),
        (s, Some(code)) => format!(
            "[{} {code}] ",
            serde_json::to_value(s).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
        ),
        (_, None) => String::new(),
    };
    out::line(&format!("{status}{}", a.text))?;
    out::line(&format!("  (conversation {} turn {})", reply.conversation_id, reply.turn))
}

fn refuse(json: bool, r: &Refusal) -> anyhow::Result<ExitCode> {
    if json {
        out::line(&json!({"status": "refused", "code": r.code, "message": r.message}).to_string())?;
    } else {
        eprintln!("refused: {}: {}", r.code, r.message);
    }
    Ok(ExitCode::FAILURE)
}
