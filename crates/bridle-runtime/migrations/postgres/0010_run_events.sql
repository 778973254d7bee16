-- Bridle PostgreSQL schema 10: the kept history of graph runs (what the console's run view
-- shows for running, paused and finished runs). `body` is the event's JSON text; `seq` orders a
-- run's events from 1; `at_ms` (milliseconds since the Unix epoch) is what retention compares.
-- The runtime keeps each run's first event and its newest ones (a per-run bound), and drops the
-- history of runs idle past the retention period.
CREATE TABLE run_events (
    thread_id TEXT   NOT NULL,
    seq       BIGINT NOT NULL CHECK (seq >= 1),
    at_ms     BIGINT NOT NULL,
    body      TEXT   NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
