-- The feedback loop: outcomes per decision (ratings, scores) and the model registry.
-- Each row keeps its record as JSON in `body`; the other columns are keys and order.
CREATE TABLE feedback (
    n           INTEGER PRIMARY KEY,
    feedback_id TEXT    NOT NULL UNIQUE,
    tenant      TEXT    NOT NULL,
    decision_id TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    body        TEXT    NOT NULL
) STRICT;
CREATE INDEX feedback_recent ON feedback (tenant, created_at DESC, n);
CREATE INDEX feedback_by_decision ON feedback (tenant, decision_id);

CREATE TABLE models (
    tenant TEXT NOT NULL,
    name   TEXT NOT NULL,
    stage  TEXT NOT NULL,
    body   TEXT NOT NULL,
    PRIMARY KEY (tenant, name)
) STRICT;
