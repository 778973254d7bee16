-- Bridle PostgreSQL schema 3: audit evidence apart from the chained metadata.
-- `evidence_digest` is the SHA-256 of an event's evidence (its `reason`); the event's hash covers
-- the digest instead of the text, so retention can set `reason` to NULL and the chain still
-- verifies. Rows written before this migration keep a NULL digest and hash their whole body.
-- The partial index finds what retention may still prune without scanning the whole log.
ALTER TABLE audit_events ADD COLUMN evidence_digest TEXT;
CREATE INDEX audit_evidence_at ON audit_events (at) WHERE reason IS NOT NULL AND evidence_digest IS NOT NULL;
