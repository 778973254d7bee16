-- Bridle SQLite schema 1: approvals, jobs, budget counters, the audit chain, decision records.
-- Instants are unix nanoseconds (UTC) in INTEGER columns; JSON columns hold serde_json text.
-- Applied once by src/store/sqlite/migrate.rs, which records it in `schema_migrations`.

-- Approval requests; ids are unique across tenants. `grants` is a JSON array whose length is
-- kept in `grant_count`, so adding a grant is one conditional UPDATE on the count.
CREATE TABLE approvals (
    id               TEXT    NOT NULL PRIMARY KEY,
    tenant           TEXT    NOT NULL,
    plan             TEXT    NOT NULL,
    plan_hash        TEXT    NOT NULL,
    requester        TEXT    NOT NULL,
    level            TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    grants           TEXT    NOT NULL,
    grant_count      INTEGER NOT NULL CHECK (grant_count >= 0),
    rejection_reason TEXT,
    rejected_by      TEXT,
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    consumed_by      TEXT
) STRICT;

CREATE INDEX approvals_by_plan ON approvals (tenant, plan_hash, status, created_at, id);
CREATE INDEX approvals_by_status ON approvals (tenant, status, created_at, id);

-- Jobs; an idempotency key is unique per tenant and subject.
CREATE TABLE jobs (
    id              TEXT    NOT NULL PRIMARY KEY,
    tenant          TEXT    NOT NULL,
    subject         TEXT    NOT NULL,
    idempotency_key TEXT,
    plan            TEXT    NOT NULL,
    plan_hash       TEXT    NOT NULL,
    executor        TEXT    NOT NULL,
    approval_id     TEXT,
    status          TEXT    NOT NULL,
    outcome         TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX jobs_by_key ON jobs (tenant, subject, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_unsettled ON jobs (created_at, id)
    WHERE status NOT IN ('succeeded', 'failed');

-- Budget counters per tenant, run and kind.
CREATE TABLE budgets (
    tenant TEXT    NOT NULL,
    run_id TEXT    NOT NULL,
    kind   TEXT    NOT NULL,
    used   INTEGER NOT NULL CHECK (used >= 0),
    PRIMARY KEY (tenant, run_id, kind)
) STRICT, WITHOUT ROWID;

-- The audit log: one hash chain per tenant. Every field of the hashed record is a column, so
-- an edit to any of them breaks the chain at that row. `at` keeps its UTC offset in seconds
-- (`at_offset`) because the hash covers the RFC 3339 text with that offset.
CREATE TABLE audit_events (
    tenant            TEXT    NOT NULL,
    seq               INTEGER NOT NULL CHECK (seq >= 1),
    kind              TEXT    NOT NULL,
    call_id           TEXT    NOT NULL,
    at                INTEGER NOT NULL,
    at_offset         INTEGER NOT NULL,
    subject           TEXT    NOT NULL,
    run_id            TEXT    NOT NULL,
    incident          TEXT    NOT NULL,
    tool              TEXT    NOT NULL,
    policy_version    TEXT    NOT NULL,
    plan_hash         TEXT,
    executor_identity TEXT,
    approval_id       TEXT,
    approver          TEXT,
    decision          TEXT,
    code              TEXT,
    reason            TEXT,
    total_us          INTEGER NOT NULL,
    policy_us         INTEGER NOT NULL,
    adapter_us        INTEGER NOT NULL,
    prev_hash         TEXT    NOT NULL,
    hash              TEXT    NOT NULL,
    PRIMARY KEY (tenant, seq)
) STRICT, WITHOUT ROWID;

CREATE INDEX audit_by_run ON audit_events (tenant, run_id, seq);

-- Decision records; `n` keeps insertion order for ties on `created_at`.
CREATE TABLE decisions (
    n                 INTEGER PRIMARY KEY,
    decision_id       TEXT    NOT NULL UNIQUE,
    pipeline_run_id   TEXT    NOT NULL,
    tenant            TEXT    NOT NULL,
    agent             TEXT    NOT NULL,
    model             TEXT    NOT NULL,
    input             TEXT    NOT NULL,
    output            TEXT    NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_ms        INTEGER NOT NULL,
    harness_checks    TEXT    NOT NULL,
    final_verdict     TEXT    NOT NULL,
    created_at        INTEGER NOT NULL
) STRICT;

CREATE INDEX decisions_recent ON decisions (tenant, created_at DESC, n);
CREATE INDEX decisions_by_run ON decisions (pipeline_run_id);
