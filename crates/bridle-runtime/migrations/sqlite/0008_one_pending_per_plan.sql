-- One pending approval request per plan: concurrent identical calls share one request.
-- `lapsed` = 1 takes a pending request out of its plan's one pending slot: an expired one
-- (moved out of the way by the next request for the plan), or a duplicate created before this
-- migration (every pending request of a plan but its oldest). A lapsed request keeps its
-- status and can still be decided; it just no longer blocks a new one.
ALTER TABLE approvals ADD COLUMN lapsed INTEGER NOT NULL DEFAULT 0 CHECK (lapsed IN (0, 1));

UPDATE approvals SET lapsed = 1
WHERE status = 'pending' AND EXISTS (
    SELECT 1 FROM approvals AS older
    WHERE older.tenant = approvals.tenant AND older.plan_hash = approvals.plan_hash
        AND older.status = 'pending'
        AND (older.created_at < approvals.created_at
             OR (older.created_at = approvals.created_at AND older.id < approvals.id))
);

CREATE UNIQUE INDEX approvals_one_pending ON approvals (tenant, plan_hash) WHERE status = 'pending' AND lapsed = 0;
