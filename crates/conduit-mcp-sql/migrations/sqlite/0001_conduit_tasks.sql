-- conduit-mcp-sql schema, version 1 (SQLite).
-- One row per task. `doc` is the whole TaskRecord as JSON; the other columns
-- are derived from it on every write (the lease columns are authoritative:
-- lease renewal updates only them).
CREATE TABLE conduit_tasks (
    task_id          TEXT    NOT NULL PRIMARY KEY,
    owner            TEXT,
    status           TEXT    NOT NULL,
    version          INTEGER NOT NULL,
    created_at_ms    INTEGER NOT NULL,
    expires_at_ms    INTEGER,
    terminal_at_ms   INTEGER,
    lease_node       TEXT,
    lease_expires_ms INTEGER,
    doc              TEXT    NOT NULL
);

-- cleanup: expired tasks, by range.
CREATE INDEX conduit_tasks_expires ON conduit_tasks (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
-- cleanup: terminal tasks with unlimited TTL, by range.
CREATE INDEX conduit_tasks_terminal ON conduit_tasks (terminal_at_ms)
    WHERE expires_at_ms IS NULL AND terminal_at_ms IS NOT NULL;
-- crash recovery: lapsed leases, by range.
CREATE INDEX conduit_tasks_lease_expires ON conduit_tasks (lease_expires_ms) WHERE lease_expires_ms IS NOT NULL;
-- lease renewal and restart recovery: the tasks one node runs.
CREATE INDEX conduit_tasks_lease_node ON conduit_tasks (lease_node) WHERE lease_node IS NOT NULL;

-- The row cap: one counter row, kept by triggers in the same statement as
-- every insert and delete. An insert checks it in its own WHERE clause; SQLite
-- runs a statement under the database's write lock, so the check and the
-- insert are one atomic step.
CREATE TABLE conduit_task_count (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO conduit_task_count (id, n) VALUES (1, 0);
CREATE TRIGGER conduit_tasks_counted AFTER INSERT ON conduit_tasks
BEGIN
    UPDATE conduit_task_count SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER conduit_tasks_uncounted AFTER DELETE ON conduit_tasks
BEGIN
    UPDATE conduit_task_count SET n = n - 1 WHERE id = 1;
END;
