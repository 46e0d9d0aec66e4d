-- conduit-mcp-sql schema, version 37 (SQLite): the secrets the Events
-- extension seals its cursors with, one row per use, made once here from
-- SQLite's randomness (randomblob: its ChaCha20 generator, seeded by the
-- operating system), so every restart seals cursors alike and a cursor given
-- out before a restart is accepted after it (issue 29). Read by the server at
-- open; never logged or returned to a client.
CREATE TABLE conduit_events_keys (
    name TEXT NOT NULL PRIMARY KEY,
    key  BLOB NOT NULL CHECK (length(key) = 32)
);
INSERT INTO conduit_events_keys (name, key) VALUES ('cursor', randomblob(32));
