-- Runs as the server keeps them: each run id is bound, per tenant, to the subject of its first
-- call; the gate counts every call in one conditional upsert (`store/sqlite/runs.rs`).
CREATE TABLE runs (
    tenant       TEXT    NOT NULL,
    run_id       TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    agent        TEXT,
    opened_at    INTEGER NOT NULL,
    last_call_at INTEGER NOT NULL,
    calls        INTEGER NOT NULL CHECK (calls >= 0),
    state        TEXT    NOT NULL,
    PRIMARY KEY (tenant, run_id)
) STRICT, WITHOUT ROWID;

-- Calls in flight under `[limits] run_concurrency`: one lease per call, deleted when the call
-- ends, void after `lapses_at` (a process that died mid-call frees its slot).
CREATE TABLE run_leases (
    tenant  TEXT    NOT NULL,
    run_id  TEXT    NOT NULL,
    call_id TEXT    NOT NULL,
    lapses_at INTEGER NOT NULL,
    PRIMARY KEY (tenant, run_id, call_id)
) STRICT, WITHOUT ROWID;

-- Taint that follows an actor (`agent:NAME` or `subject:SUB`) across runs for `[taint] window`:
-- the latest taint and its reason.
CREATE TABLE actor_taint (
    tenant     TEXT    NOT NULL,
    actor      TEXT    NOT NULL,
    tainted_at INTEGER NOT NULL,
    reason     TEXT    NOT NULL,
    PRIMARY KEY (tenant, actor)
) STRICT, WITHOUT ROWID;

-- Where an event's agent came from: `claim`, `principal` or `request` (NULL before, and for no agent).
ALTER TABLE audit_events ADD COLUMN agent_source TEXT;
