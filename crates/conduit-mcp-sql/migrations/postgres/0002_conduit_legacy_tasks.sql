-- conduit-mcp-sql schema, version 2 (PostgreSQL): the legacy (2025-11-25)
-- task store, apart from conduit_tasks. The same columns, plus `list_owner`
-- for tasks/list: '-' for an unauthenticated task, '+' and the principal id
-- otherwise (so NULL and '' owners stay apart and one index serves both).
-- Ids and owners sort bytewise (COLLATE "C"), as every store lists them.
CREATE TABLE conduit_legacy_tasks (
    task_id          TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    owner            TEXT,
    status           TEXT   NOT NULL,
    version          BIGINT NOT NULL,
    created_at_ms    BIGINT NOT NULL,
    expires_at_ms    BIGINT,
    terminal_at_ms   BIGINT,
    lease_node       TEXT,
    lease_expires_ms BIGINT,
    doc              JSON   NOT NULL,
    list_owner       TEXT COLLATE "C" NOT NULL
);

-- tasks/list: one owner's tasks in (created_at_ms, task_id) order, by keyset.
CREATE INDEX conduit_legacy_tasks_list ON conduit_legacy_tasks (list_owner, created_at_ms, task_id);
CREATE INDEX conduit_legacy_tasks_expires ON conduit_legacy_tasks (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
CREATE INDEX conduit_legacy_tasks_terminal ON conduit_legacy_tasks (terminal_at_ms)
    WHERE expires_at_ms IS NULL AND terminal_at_ms IS NOT NULL;
CREATE INDEX conduit_legacy_tasks_lease_expires ON conduit_legacy_tasks (lease_expires_ms)
    WHERE lease_expires_ms IS NOT NULL;
CREATE INDEX conduit_legacy_tasks_lease_node ON conduit_legacy_tasks (lease_node) WHERE lease_node IS NOT NULL;

-- The legacy row cap: one counter row, as conduit_task_count.
CREATE TABLE conduit_legacy_task_count (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    n  BIGINT  NOT NULL CHECK (n >= 0)
);
INSERT INTO conduit_legacy_task_count (id, n) VALUES (1, 0);

-- The secret that seals tasks/list cursors: one per database, so a cursor
-- one node issued is honoured by every other.
CREATE TABLE conduit_legacy_cursor_key (
    id     INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    secret TEXT    NOT NULL
);
INSERT INTO conduit_legacy_cursor_key (id, secret)
    VALUES (1, replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));

-- Legacy sessions (Mcp-Session-Id), shared by every node so any node serves
-- any session's requests. The id is a bearer capability: only its SHA-256 is
-- stored, so the table (or a dump of it) cannot be replayed as sessions.
CREATE TABLE conduit_legacy_sessions (
    id_hash             BYTEA  NOT NULL PRIMARY KEY,
    owner               TEXT,
    protocol_version    TEXT   NOT NULL,
    client_capabilities JSON   NOT NULL,
    client_info         JSON   NOT NULL,
    log_level           TEXT,
    initialized         BOOLEAN NOT NULL,
    created_ms          BIGINT NOT NULL,
    last_seen_ms        BIGINT NOT NULL
);
-- Idle expiry and eviction at the cap (oldest idle first), by range.
CREATE INDEX conduit_legacy_sessions_last_seen ON conduit_legacy_sessions (last_seen_ms);

-- The session cap: one counter row, locked by each create until it commits
-- (so the cap holds across nodes) and lowered by every delete.
CREATE TABLE conduit_legacy_session_count (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    n  BIGINT  NOT NULL CHECK (n >= 0)
);
INSERT INTO conduit_legacy_session_count (id, n) VALUES (1, 0);
