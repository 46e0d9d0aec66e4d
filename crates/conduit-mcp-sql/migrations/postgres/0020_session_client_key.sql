-- conduit-mcp-sql schema, version 20: the per-client session cap counts a
-- client's live sessions (its principal, or without authentication its
-- address) by this column and index (numbered apart from other migrations
-- developed at the same time; versions only need to increase).
ALTER TABLE conduit_legacy_sessions ADD COLUMN client_key TEXT NOT NULL DEFAULT '';
CREATE INDEX conduit_legacy_sessions_client ON conduit_legacy_sessions (client_key, last_seen_ms);
