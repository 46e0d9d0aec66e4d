-- conduit-mcp-sql schema, version 34 (SQLite): terminal tasks stay until their
-- TTL without holding a live slot (issue 34), in both task tables.
--
-- `doc_bytes` is a row's document size (the record as JSON): what a terminal
-- row counts for under its owner's byte bound. The per-principal cap counts an
-- owner's live rows (`terminal_at_ms IS NULL`) by `*_owner_live`; a
-- principal's terminal rows are trimmed oldest first, summing `doc_bytes` from
-- `*_owner_ended`, which also finds the oldest terminal row of a principal
-- whose create takes its place at the row cap.
ALTER TABLE conduit_tasks ADD COLUMN doc_bytes INTEGER GENERATED ALWAYS AS (length(CAST(doc AS BLOB))) VIRTUAL;
ALTER TABLE conduit_legacy_tasks ADD COLUMN doc_bytes INTEGER GENERATED ALWAYS AS (length(CAST(doc AS BLOB))) VIRTUAL;

DROP INDEX conduit_tasks_owner;
CREATE INDEX conduit_tasks_owner_live ON conduit_tasks (owner) WHERE owner IS NOT NULL AND terminal_at_ms IS NULL;
CREATE INDEX conduit_legacy_tasks_owner_live ON conduit_legacy_tasks (owner)
    WHERE owner IS NOT NULL AND terminal_at_ms IS NULL;

CREATE INDEX conduit_tasks_owner_ended ON conduit_tasks (owner, terminal_at_ms, task_id, doc_bytes)
    WHERE owner IS NOT NULL AND terminal_at_ms IS NOT NULL;
CREATE INDEX conduit_legacy_tasks_owner_ended ON conduit_legacy_tasks (owner, terminal_at_ms, task_id, doc_bytes)
    WHERE owner IS NOT NULL AND terminal_at_ms IS NOT NULL;
