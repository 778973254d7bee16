-- Operator chat conversations (`POST /v1/chat`): one row per conversation, owned by a tenant and
-- subject, its messages as JSON in `body`; `turns` is the compare-and-set column a turn moves.
CREATE TABLE IF NOT EXISTS chat_conversations (
    tenant          TEXT   NOT NULL,
    conversation_id TEXT   NOT NULL,
    subject         TEXT   NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    turns           BIGINT NOT NULL,
    body            TEXT   NOT NULL,
    CONSTRAINT chat_conversations_pkey PRIMARY KEY (tenant, conversation_id)
);
CREATE INDEX IF NOT EXISTS chat_conversations_owner ON chat_conversations (tenant, subject, updated_at DESC);
CREATE INDEX IF NOT EXISTS chat_conversations_updated ON chat_conversations (updated_at);
