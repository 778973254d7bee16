-- No query reads audit events by run: every read of the log is by tenant and seq (the primary
-- key). The index cost every append a leaf of its own run's part of the index, so a commit of
-- many callers' events wrote one more page per caller.
DROP INDEX IF EXISTS audit_by_run;
