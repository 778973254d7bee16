-- How the operator of an approval grant or rejection authenticated (`token` or `as`); NULL on
-- every other event and on events written before. The hash covers it only when present.
ALTER TABLE audit_events ADD COLUMN auth TEXT;
