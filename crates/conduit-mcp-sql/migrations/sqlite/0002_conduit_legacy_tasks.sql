-- conduit-mcp-sql schema, version 2 (SQLite): the legacy (2025-11-25) task
-- store, apart from conduit_tasks. The same columns, plus `list_owner` for
-- tasks/list: '-' for an unauthenticated task, '+' and the principal id
-- otherwise (so NULL and '' owners stay apart and one index serves both).
CREATE TABLE conduit_legacy_tasks (
    task_id          TEXT    NOT NULL PRIMARY KEY,
    owner            TEXT,
    status           TEXT    NOT NULL,
    version          INTEGER NOT NULL,
    created_at_ms    INTEGER NOT NULL,
    expires_at_ms    INTEGER,
    terminal_at_ms   INTEGER,
    lease_node       TEXT,
    lease_expires_ms INTEGER,
    doc              TEXT    NOT NULL,
    list_owner       TEXT    NOT NULL
);

-- tasks/list: one owner's tasks in (created_at_ms, task_id) order, by keyset.
CREATE INDEX conduit_legacy_tasks_list ON conduit_legacy_tasks (list_owner, created_at_ms, task_id);
CREATE INDEX conduit_legacy_tasks_expires ON conduit_legacy_tasks (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
CREATE INDEX conduit_legacy_tasks_terminal ON conduit_legacy_tasks (terminal_at_ms)
    WHERE expires_at_ms IS NULL AND terminal_at_ms IS NOT NULL;
CREATE INDEX conduit_legacy_tasks_lease_expires ON conduit_legacy_tasks (lease_expires_ms)
    WHERE lease_expires_ms IS NOT NULL;
CREATE INDEX conduit_legacy_tasks_lease_node ON conduit_legacy_tasks (lease_node) WHERE lease_node IS NOT NULL;

-- The legacy row cap, kept by triggers as conduit_task_count is.
CREATE TABLE conduit_legacy_task_count (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO conduit_legacy_task_count (id, n) VALUES (1, 0);
CREATE TRIGGER conduit_legacy_tasks_counted AFTER INSERT ON conduit_legacy_tasks
BEGIN
    UPDATE conduit_legacy_task_count SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER conduit_legacy_tasks_uncounted AFTER DELETE ON conduit_legacy_tasks
BEGIN
    UPDATE conduit_legacy_task_count SET n = n - 1 WHERE id = 1;
END;

-- The secret that seals tasks/list cursors: one per database, so a cursor
-- one connection issued is honoured by every other.
CREATE TABLE conduit_legacy_cursor_key (
    id     INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    secret TEXT    NOT NULL
);
INSERT INTO conduit_legacy_cursor_key (id, secret) VALUES (1, lower(hex(randomblob(32))));

-- Legacy sessions (Mcp-Session-Id). The id is a bearer capability: only its
-- SHA-256 is stored, so the file (or a copy of it) cannot be replayed as sessions.
CREATE TABLE conduit_legacy_sessions (
    id_hash             BLOB    NOT NULL PRIMARY KEY,
    owner               TEXT,
    protocol_version    TEXT    NOT NULL,
    client_capabilities TEXT    NOT NULL,
    client_info         TEXT    NOT NULL,
    log_level           TEXT,
    initialized         INTEGER NOT NULL,
    created_ms          INTEGER NOT NULL,
    last_seen_ms        INTEGER NOT NULL
);
-- Idle expiry and eviction at the cap (oldest idle first), by range.
CREATE INDEX conduit_legacy_sessions_last_seen ON conduit_legacy_sessions (last_seen_ms);

-- The session cap's counter, kept by triggers in the same statement as every
-- insert and delete.
CREATE TABLE conduit_legacy_session_count (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO conduit_legacy_session_count (id, n) VALUES (1, 0);
CREATE TRIGGER conduit_legacy_sessions_counted AFTER INSERT ON conduit_legacy_sessions
BEGIN
    UPDATE conduit_legacy_session_count SET n = n + 1 WHERE id = 1;
END;
CREATE TRIGGER conduit_legacy_sessions_uncounted AFTER DELETE ON conduit_legacy_sessions
BEGIN
    UPDATE conduit_legacy_session_count SET n = n - 1 WHERE id = 1;
END;
