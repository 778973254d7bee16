-- Bridle PostgreSQL schema 2: approvals, jobs, budget counters, the audit chains, decision
-- records and run taint (the ports of src/store/postgres/). Instants are unix nanoseconds (UTC)
-- in BIGINT columns, as in SQLite, because TIMESTAMPTZ keeps only microseconds. JSON columns
-- hold serde_json text, except `approvals.grants`, a JSONB array a grant is appended to in one
-- conditional UPDATE. Keys that listings sort by use COLLATE "C" (byte order, as the memory
-- store's BTreeMap), whatever the database's default collation is.
-- Applied once by src/store/postgres/migrate.rs.

-- Approval requests; ids are unique across tenants.
CREATE TABLE approvals (
    id               TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant           TEXT COLLATE "C" NOT NULL,
    plan             TEXT    NOT NULL,
    plan_hash        TEXT    NOT NULL,
    requester        TEXT    NOT NULL,
    level            TEXT    NOT NULL,
    status           TEXT    NOT NULL,
    grants           JSONB   NOT NULL CHECK (jsonb_typeof(grants) = 'array'),
    grant_count      BIGINT  NOT NULL CHECK (grant_count >= 0),
    rejection_reason TEXT,
    rejected_by      TEXT,
    created_at       BIGINT  NOT NULL,
    expires_at       BIGINT  NOT NULL,
    consumed_by      TEXT
);

CREATE INDEX approvals_by_plan ON approvals (tenant, plan_hash, status, created_at, id);
CREATE INDEX approvals_by_status ON approvals (tenant, status, created_at, id);

-- Jobs; an idempotency key is unique per tenant and subject.
CREATE TABLE jobs (
    id              TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    tenant          TEXT   NOT NULL,
    subject         TEXT   NOT NULL,
    idempotency_key TEXT,
    plan            TEXT   NOT NULL,
    plan_hash       TEXT   NOT NULL,
    executor        TEXT   NOT NULL,
    approval_id     TEXT,
    status          TEXT   NOT NULL,
    outcome         TEXT,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);

CREATE UNIQUE INDEX jobs_by_key ON jobs (tenant, subject, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_unsettled ON jobs (created_at, id)
    WHERE status NOT IN ('succeeded', 'failed');

-- Budget counters per tenant, run and kind.
CREATE TABLE budgets (
    tenant TEXT   NOT NULL,
    run_id TEXT   NOT NULL,
    kind   TEXT   NOT NULL,
    used   BIGINT NOT NULL CHECK (used >= 0),
    PRIMARY KEY (tenant, run_id, kind)
);

-- The audit log: one hash chain per tenant. Every field of the hashed record is a column, so
-- an edit to any of them breaks the chain at that row. `at` keeps its UTC offset in seconds
-- (`at_offset`) because the hash covers the RFC 3339 text with that offset. The primary key
-- is the last line of defence against a forked chain: two appends of the same seq cannot
-- both commit.
CREATE TABLE audit_events (
    tenant            TEXT COLLATE "C" NOT NULL,
    seq               BIGINT NOT NULL CHECK (seq >= 1),
    kind              TEXT   NOT NULL,
    call_id           TEXT   NOT NULL,
    at                BIGINT NOT NULL,
    at_offset         BIGINT NOT NULL,
    subject           TEXT   NOT NULL,
    run_id            TEXT   NOT NULL,
    incident          TEXT   NOT NULL,
    tool              TEXT   NOT NULL,
    policy_version    TEXT   NOT NULL,
    plan_hash         TEXT,
    executor_identity TEXT,
    approval_id       TEXT,
    approver          TEXT,
    decision          TEXT,
    code              TEXT,
    reason            TEXT,
    total_us          BIGINT NOT NULL,
    policy_us         BIGINT NOT NULL,
    adapter_us        BIGINT NOT NULL,
    prev_hash         TEXT   NOT NULL,
    hash              TEXT   NOT NULL,
    PRIMARY KEY (tenant, seq)
);

CREATE INDEX audit_by_run ON audit_events (tenant, run_id, seq);

-- Decision records; `n` keeps insertion order for ties on `created_at`.
CREATE TABLE decisions (
    n                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    decision_id       TEXT   NOT NULL UNIQUE,
    pipeline_run_id   TEXT   NOT NULL,
    tenant            TEXT   NOT NULL,
    agent             TEXT   NOT NULL,
    model             TEXT   NOT NULL,
    input             TEXT   NOT NULL,
    output            TEXT   NOT NULL,
    prompt_tokens     BIGINT NOT NULL,
    completion_tokens BIGINT NOT NULL,
    latency_ms        BIGINT NOT NULL,
    harness_checks    TEXT   NOT NULL,
    final_verdict     TEXT   NOT NULL,
    created_at        BIGINT NOT NULL
);

CREATE INDEX decisions_recent ON decisions (tenant, created_at DESC, n);
CREATE INDEX decisions_by_run ON decisions (pipeline_run_id);

-- Runs that have taken in untrusted content; written once, never updated or deleted.
CREATE TABLE run_taint (
    tenant TEXT NOT NULL,
    run_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (tenant, run_id)
);
