-- Automatic changes per resource, for `[levels] auto_limit`: one row per admitted change.
CREATE TABLE auto_actions (
    tenant   TEXT    NOT NULL,
    resource TEXT    NOT NULL,
    at_ms    INTEGER NOT NULL
) STRICT;
CREATE INDEX auto_actions_window ON auto_actions (tenant, resource, at_ms);
