-- One pending approval request per plan: concurrent identical calls, from any replica, share
-- one request. `lapsed` takes a pending request out of its plan's one pending slot: an expired
-- one (moved out of the way by the next request for the plan), or a duplicate created before
-- this migration (every pending request of a plan but its oldest). A lapsed request keeps its
-- status and can still be decided; it just no longer blocks a new one.
ALTER TABLE approvals ADD COLUMN lapsed BOOLEAN NOT NULL DEFAULT FALSE;

UPDATE approvals SET lapsed = TRUE
WHERE status = 'pending' AND EXISTS (
    SELECT 1 FROM approvals AS older
    WHERE older.tenant = approvals.tenant AND older.plan_hash = approvals.plan_hash
        AND older.status = 'pending'
        AND (older.created_at < approvals.created_at
             OR (older.created_at = approvals.created_at AND older.id < approvals.id))
);

CREATE UNIQUE INDEX approvals_one_pending ON approvals (tenant, plan_hash) WHERE status = 'pending' AND NOT lapsed;
