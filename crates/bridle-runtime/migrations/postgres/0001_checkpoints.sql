-- Bridle PostgreSQL schema 1: checkpoints of graph runs and the task writes of unfinished steps.
-- `body` holds the whole serde_json text (a `Checkpoint` or a `TaskWrites`), byte for byte as
-- written; the other columns index it. Applied once by src/store/postgres/migrate.rs.

-- One row per (thread, super-step).
CREATE TABLE checkpoints (
    thread_id  TEXT        NOT NULL,
    step       BIGINT      NOT NULL CHECK (step >= 0),
    graph      TEXT        NOT NULL,
    status     TEXT        NOT NULL,
    body       TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (thread_id, step)
);

-- Orders task writes as stored across every thread; a replaced task's writes take a new value
-- and so move to the end, as the in-memory checkpointer does.
CREATE SEQUENCE checkpoint_writes_seq;

CREATE TABLE checkpoint_writes (
    thread_id TEXT   NOT NULL,
    step      BIGINT NOT NULL CHECK (step >= 0),
    task_id   TEXT   NOT NULL,
    seq       BIGINT NOT NULL DEFAULT nextval('checkpoint_writes_seq'),
    body      TEXT   NOT NULL,
    PRIMARY KEY (thread_id, step, task_id)
);

CREATE INDEX checkpoint_writes_in_order ON checkpoint_writes (thread_id, step, seq);
