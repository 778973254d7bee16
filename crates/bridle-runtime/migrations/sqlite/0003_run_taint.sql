-- Bridle SQLite schema 3: runs that have taken in untrusted content (gate step 10 records,
-- step 7 reads). One row per tainted run; `reason` is the first recorded source (which tool's
-- output). Rows are never updated or deleted: taint is not cleared.
CREATE TABLE run_taint (
    tenant TEXT NOT NULL,
    run_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (tenant, run_id)
) STRICT, WITHOUT ROWID;
