//! Operator chat conversations: stored with their audit event, found in their tenant only,
//! continued by compare-and-set (of two racing turns exactly one is stored), at most `keep` per
//! owner (the least recently used dropped), and deleted past their retention.

use anyhow::ensure;
use bridle_core::audit::EventKind;
use bridle_core::conversation::{ChatMessage, Conversation, Speaker, TurnCall};
use bridle_core::ports::StoreError;
use bridle_runtime::store::Stores;
use time::OffsetDateTime;

use super::{record, secs};

fn opened(id: &str, subject: &str, at: OffsetDateTime) -> Conversation {
    let mut c = Conversation::open(id, "tenant-a", subject, at);
    c.turns = 1;
    c.messages = vec![
        ChatMessage {
            role: Speaker::User,
            content: "설비 상태는? / how is etch-01?".into(),
            at,
            status: None,
            code: None,
            tool_calls: Vec::new(),
        },
        ChatMessage {
            role: Speaker::Assistant,
            content: "etch-01 runs.".into(),
            at,
            status: Some("answered".into()),
            code: None,
            tool_calls: vec![TurnCall {
                tool: "get_service_snapshot".into(),
                verdict: "executed".into(),
                code: None,
                call_id: "call-1".into(),
                approval_id: None,
            }],
        },
    ];
    c
}

fn turn_event(id: &str) -> Vec<bridle_core::audit::AuditRecord> {
    let mut r = record("tenant-a", 1);
    r.kind = EventKind::ChatTurn;
    r.call_id = format!("turn-{id}");
    vec![r]
}

pub async fn conversations_are_owned_continued_by_compare_and_set_bounded_and_pruned(s: Stores) -> anyhow::Result<()> {
    let c = &s.conversations;
    let first = opened("c-1", "requester-1", secs(1));
    ensure!(c.save_conversation(&first, 0, 2, turn_event("1")).await?, "created");
    ensure!(c.conversation("tenant-a", "c-1").await?.as_ref() == Some(&first), "round trip");
    ensure!(c.conversation("tenant-b", "c-1").await?.is_none(), "another tenant's is unknown");
    let again = c.save_conversation(&first, 0, 2, Vec::new()).await;
    ensure!(matches!(again, Err(StoreError::Duplicate(_))), "{again:?}");
    // Two turns continuing turn 1: the first stored wins, the second writes nothing.
    let mut second = first.clone();
    second.turns = 2;
    second.updated_at = secs(5);
    ensure!(c.save_conversation(&second, 1, 2, turn_event("2")).await?, "turn 2 stored");
    let mut racing = first.clone();
    racing.turns = 2;
    racing.messages.clear();
    ensure!(!c.save_conversation(&racing, 1, 2, turn_event("2b")).await?, "a stale turn is refused");
    ensure!(c.conversation("tenant-a", "c-1").await?.as_ref() == Some(&second), "the winner stays");
    let events = s.audit.events("tenant-a", 0, 100).await?;
    let turns: Vec<&str> = events.iter().map(|e| e.record.call_id.as_str()).collect();
    ensure!(turns == ["turn-1", "turn-2"], "one event per stored turn: {turns:?}");
    // At most two per owner: opening a third drops the least recently used (c-2, not c-1).
    c.save_conversation(&opened("c-2", "requester-1", secs(2)), 0, 2, Vec::new()).await?;
    c.save_conversation(&opened("c-9", "operator-2", secs(2)), 0, 2, Vec::new()).await?;
    c.save_conversation(&opened("c-3", "requester-1", secs(3)), 0, 2, Vec::new()).await?;
    ensure!(c.conversation("tenant-a", "c-2").await?.is_none(), "c-2 dropped");
    ensure!(c.conversation("tenant-a", "c-1").await?.is_some(), "c-1 kept");
    ensure!(c.conversation("tenant-a", "c-9").await?.is_some(), "another owner's kept");
    // Retention: untouched since before secs(4) → deleted.
    let pruned = c.prune_conversations(secs(4)).await?;
    ensure!(pruned == 2, "pruned {pruned}");
    ensure!(c.conversation("tenant-a", "c-1").await?.is_some(), "updated at secs(5): kept");
    Ok(())
}
