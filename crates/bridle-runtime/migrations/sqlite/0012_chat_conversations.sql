-- Operator chat conversations (`POST /v1/chat`): one row per conversation, owned by a tenant and
-- subject, its messages as JSON in `body`; `turns` is the compare-and-set column a turn moves.
CREATE TABLE chat_conversations (
    tenant          TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    subject         TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    turns           INTEGER NOT NULL,
    body            TEXT    NOT NULL,
    PRIMARY KEY (tenant, conversation_id)
) STRICT;
CREATE INDEX chat_conversations_owner ON chat_conversations (tenant, subject, updated_at DESC);
CREATE INDEX chat_conversations_updated ON chat_conversations (updated_at);
