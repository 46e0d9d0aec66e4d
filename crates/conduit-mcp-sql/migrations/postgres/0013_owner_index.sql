-- conduit-mcp-sql schema, version 13 (PostgreSQL): the per-principal cap counts
-- a principal's tasks by this index (numbered apart from other migrations
-- developed at the same time; versions only need to increase).
CREATE INDEX conduit_tasks_owner ON conduit_tasks (owner) WHERE owner IS NOT NULL;
