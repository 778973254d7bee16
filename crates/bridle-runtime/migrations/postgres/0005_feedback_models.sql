-- The feedback loop: outcomes per decision (ratings, scores) and the model registry.
-- Each row keeps its record as JSON in `body`; the other columns are keys and order.
CREATE TABLE IF NOT EXISTS feedback (
    n           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    feedback_id TEXT   NOT NULL,
    tenant      TEXT   NOT NULL,
    decision_id TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    body        TEXT   NOT NULL,
    CONSTRAINT feedback_id_key UNIQUE (feedback_id)
);
CREATE INDEX IF NOT EXISTS feedback_recent ON feedback (tenant, created_at DESC, n);
CREATE INDEX IF NOT EXISTS feedback_by_decision ON feedback (tenant, decision_id);

CREATE TABLE IF NOT EXISTS models (
    tenant TEXT NOT NULL,
    name   TEXT NOT NULL,
    stage  TEXT NOT NULL,
    body   TEXT NOT NULL,
    CONSTRAINT models_pkey PRIMARY KEY (tenant, name)
);
