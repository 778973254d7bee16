-- Governance: the versions every audit event and decision record carries, the kill switch,
-- and the outcomes of executed actions (action history).

-- What produced an event: the agent, its model and prompt versions, the tool-schema version
-- (the policy version has its own column since 0001). NULL on events written before.
ALTER TABLE audit_events ADD COLUMN agent_id TEXT;
ALTER TABLE audit_events ADD COLUMN model TEXT;
ALTER TABLE audit_events ADD COLUMN prompt_hash TEXT;
ALTER TABLE audit_events ADD COLUMN tool_schema_hash TEXT;

ALTER TABLE decisions ADD COLUMN prompt_hash TEXT;
ALTER TABLE decisions ADD COLUMN tool_schema_hash TEXT;
ALTER TABLE decisions ADD COLUMN policy_version TEXT;

-- What the approver is shown beside the plan (JSON; today the action's history).
ALTER TABLE approvals ADD COLUMN context TEXT;

-- Kill switches that are on: one row per exact scope; '' means "every tenant" / "every agent".
-- Lifting deletes the row (the audit log keeps the history).
CREATE TABLE kill_switches (
    scope_tenant TEXT    NOT NULL,
    scope_agent  TEXT    NOT NULL,
    reason       TEXT    NOT NULL,
    set_by       TEXT    NOT NULL,
    set_at       INTEGER NOT NULL,
    PRIMARY KEY (scope_tenant, scope_agent)
) STRICT;

-- Executed actions and their outcomes, keyed by job: recorded when the action is executed
-- (outcome NULL), rated later by an operator or an observation.
CREATE TABLE action_history (
    tenant          TEXT    NOT NULL,
    job_id          TEXT    NOT NULL,
    tool            TEXT    NOT NULL,
    diagnosis       TEXT    NOT NULL,
    equipment_class TEXT    NOT NULL,
    equipment       TEXT    NOT NULL,
    executed_at     INTEGER NOT NULL,
    outcome         TEXT,
    outcome_source  TEXT,
    rated_by        TEXT,
    note            TEXT,
    rated_at        INTEGER,
    PRIMARY KEY (tenant, job_id)
) STRICT;
CREATE INDEX action_history_lookup ON action_history (tenant, tool, diagnosis, equipment_class, executed_at);
