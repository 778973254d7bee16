-- Automatic changes per resource, for `[levels] auto_limit`: one row per admitted change.
CREATE TABLE IF NOT EXISTS auto_actions (
    tenant   TEXT   NOT NULL,
    resource TEXT   NOT NULL,
    at_ms    BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS auto_actions_window ON auto_actions (tenant, resource, at_ms);
