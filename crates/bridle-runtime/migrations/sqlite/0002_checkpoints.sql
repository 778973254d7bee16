-- Bridle SQLite schema 2: checkpoints of graph runs and the task writes of unfinished steps.
-- `body` holds the whole serde_json text (a `Checkpoint` or a `TaskWrites`); the other columns
-- index it. Retention is done by triggers so that storing a checkpoint is ONE statement.
-- WITHOUT ROWID: the key is the only b-tree a checkpoint write touches (measured ~25% faster
-- per `put` than a rowid table plus its primary-key index; large bodies spill to overflow
-- pages either way).

-- One row per (thread, super-step). `keep` is the retention the writer asked for with this
-- checkpoint: after it is stored, only steps > step - keep of the thread remain.
CREATE TABLE checkpoints (
    thread_id  TEXT    NOT NULL,
    step       INTEGER NOT NULL CHECK (step >= 0),
    graph      TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    keep       INTEGER NOT NULL CHECK (keep >= 1),
    body       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, step)
) STRICT, WITHOUT ROWID;

-- The writes of finished tasks of a step; `seq` orders them as stored (a replaced task's
-- writes move to the end, as a new store would put them).
CREATE TABLE checkpoint_writes (
    thread_id TEXT    NOT NULL,
    step      INTEGER NOT NULL CHECK (step >= 0),
    task_id   TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    body      TEXT    NOT NULL,
    PRIMARY KEY (thread_id, step, task_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX checkpoint_writes_in_order ON checkpoint_writes (thread_id, step, seq);

-- INVARIANT: storing checkpoint `step` with `keep` leaves the thread's checkpoints of steps
-- > step - keep and its task writes of steps >= step (the in-memory checkpointer's rule).
-- An upsert fires INSERT or UPDATE triggers depending on the path it takes, so both exist.
CREATE TRIGGER checkpoints_retain_after_insert AFTER INSERT ON checkpoints
BEGIN
    DELETE FROM checkpoints WHERE thread_id = NEW.thread_id AND step <= NEW.step - NEW.keep;
    DELETE FROM checkpoint_writes WHERE thread_id = NEW.thread_id AND step < NEW.step;
END;

CREATE TRIGGER checkpoints_retain_after_update AFTER UPDATE ON checkpoints
BEGIN
    DELETE FROM checkpoints WHERE thread_id = NEW.thread_id AND step <= NEW.step - NEW.keep;
    DELETE FROM checkpoint_writes WHERE thread_id = NEW.thread_id AND step < NEW.step;
END;
