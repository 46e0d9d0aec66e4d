-- conduit-mcp-sql schema, version 1 (PostgreSQL).
-- One row per task. `doc` is the whole TaskRecord as JSON; the other columns
-- are derived from it on every write (the lease columns are authoritative:
-- lease renewal updates only them). `doc` is `json`, not `jsonb`: it is
-- stored and returned verbatim, with no conversion on every read and write;
-- cast it (`doc::jsonb`) for ad-hoc queries.
CREATE TABLE conduit_tasks (
    task_id          TEXT   NOT NULL PRIMARY KEY,
    owner            TEXT,
    status           TEXT   NOT NULL,
    version          BIGINT NOT NULL,
    created_at_ms    BIGINT NOT NULL,
    expires_at_ms    BIGINT,
    terminal_at_ms   BIGINT,
    lease_node       TEXT,
    lease_expires_ms BIGINT,
    doc              JSON   NOT NULL
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

-- The row cap: one counter row, bumped under the cap in the same statement
-- as each insert (its row lock serialises concurrent creates) and lowered by
-- each delete.
CREATE TABLE conduit_task_count (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    n  BIGINT  NOT NULL CHECK (n >= 0)
);
INSERT INTO conduit_task_count (id, n) VALUES (1, 0);
