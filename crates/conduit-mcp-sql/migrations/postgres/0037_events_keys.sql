-- conduit-mcp-sql schema, version 37 (PostgreSQL): the secrets the Events
-- extension seals its cursors with, one row per use, made once here from the
-- server's strong random source (gen_random_uuid, twice: 244 random bits), so
-- every node that opens this database seals cursors alike and a cursor from one
-- node is accepted by another (issue 29). Read by the server at open; never
-- logged or returned to a client.
CREATE TABLE conduit_events_keys (
    name TEXT  NOT NULL PRIMARY KEY,
    key  BYTEA NOT NULL CHECK (octet_length(key) = 32)
);
INSERT INTO conduit_events_keys (name, key)
    VALUES ('cursor', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
