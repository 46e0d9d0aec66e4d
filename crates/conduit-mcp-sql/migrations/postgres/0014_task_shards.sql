-- conduit-mcp-sql schema, version 14 (PostgreSQL): the row cap on a sharded
-- counter instead of one row, so batches of creates (of one node and of many)
-- commit side by side instead of one after another.
--
-- Each shard row counts the tasks credited to it (`n`) and holds part of the
-- room left under the cap (`free`, reserved for the cap value `cap`; every
-- shard has the same `cap`, NULL while no room is handed out). A batch of
-- creates takes room from one shard; when no shard has enough, it locks every
-- shard (in id order), counts, and hands the room out again. Each task row
-- records the shard it was counted on (`shard`), so a delete lowers that one.
-- Rows from before this migration are counted on shard 0.
LOCK TABLE conduit_tasks IN SHARE MODE;
ALTER TABLE conduit_tasks ADD COLUMN shard SMALLINT NOT NULL DEFAULT 0;
CREATE TABLE conduit_task_shards (
    id   SMALLINT NOT NULL PRIMARY KEY,
    n    BIGINT   NOT NULL CHECK (n >= 0),
    free BIGINT   NOT NULL DEFAULT 0 CHECK (free >= 0),
    cap  BIGINT
);
INSERT INTO conduit_task_shards (id, n)
    SELECT g, CASE WHEN g = 0 THEN (SELECT count(*) FROM conduit_tasks) ELSE 0 END FROM generate_series(0, 15) AS g;
DROP TABLE conduit_task_count;
