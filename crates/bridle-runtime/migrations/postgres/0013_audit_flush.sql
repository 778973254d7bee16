-- An audit append commits without waiting for the WAL flush, so the chain's lock is not held
-- across the disk write; before anyone is answered, the writer runs `SELECT setval('audit_flush',
-- 1)` in a synchronous commit. `setval` writes a WAL record under a transaction id, so that commit
-- waits for the flush of the WAL up to its own record, which lies after the append's commit. A
-- sequence rather than a row: concurrent flushes never wait for each other's lock.
CREATE SEQUENCE IF NOT EXISTS audit_flush;
