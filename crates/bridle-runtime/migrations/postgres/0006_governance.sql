-- Governance: the versions every audit event and decision record carries, the kill switch,
-- and the outcomes of executed actions (action history).

-- What produced an event: the agent, its model and prompt versions, the tool-schema version
-- (the policy version has its own column since 0002). NULL on events written before.
ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS agent_id TEXT;
ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS model TEXT;
ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS prompt_hash TEXT;
ALTER TABLE audit_events ADD COLUMN IF NOT EXISTS tool_schema_hash TEXT;

ALTER TABLE decisions ADD COLUMN IF NOT EXISTS prompt_hash TEXT;
ALTER TABLE decisions ADD COLUMN IF NOT EXISTS tool_schema_hash TEXT;
ALTER TABLE decisions ADD COLUMN IF NOT EXISTS policy_version TEXT;

-- What the approver is shown beside the plan (JSON; today the action's history).
ALTER TABLE approvals ADD COLUMN IF NOT EXISTS context TEXT;

-- Kill switches that are on: one row per exact scope; '' means "every tenant" / "every agent".
-- Lifting deletes the row (the audit log keeps the history).
CREATE TABLE IF NOT EXISTS kill_switches (
    scope_tenant TEXT   NOT NULL,
    scope_agent  TEXT   NOT NULL,
    reason       TEXT   NOT NULL,
    set_by       TEXT   NOT NULL,
    set_at       BIGINT NOT NULL,
    PRIMARY KEY (scope_tenant, scope_agent)
);

-- Executed actions and their outcomes, keyed by job: recorded when the action is executed
-- (outcome NULL), rated later by an operator or an observation.
CREATE TABLE IF NOT EXISTS action_history (
    tenant          TEXT   NOT NULL,
    job_id          TEXT   NOT NULL,
    tool            TEXT   NOT NULL,
    diagnosis       TEXT   NOT NULL,
    equipment_class TEXT   NOT NULL,
    equipment       TEXT   NOT NULL,
    executed_at     BIGINT NOT NULL,
    outcome         TEXT,
    outcome_source  TEXT,
    rated_by        TEXT,
    note            TEXT,
    rated_at        BIGINT,
    PRIMARY KEY (tenant, job_id)
);
CREATE INDEX IF NOT EXISTS action_history_lookup
    ON action_history (tenant, tool, diagnosis, equipment_class, executed_at);
