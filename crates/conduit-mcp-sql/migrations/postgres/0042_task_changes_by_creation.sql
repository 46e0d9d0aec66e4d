-- conduit-mcp-sql schema, version 42 (PostgreSQL): the task change log finds
-- a task's changes by (`task_created_ms`, `task_id`) instead of by `task_id`
-- alone, and its trigger reads the document as stored (issue 29).
--
-- Task ids are random, so every change row put an entry at a random place in
-- the `task_id` index, a page to dirty (and log in full after each
-- checkpoint) per change. A new task's creation time is now, so its change
-- goes at the end of this index, beside those of the tasks created with it. A
-- task's creation time never changes (the store keeps it on every write), so
-- its changes are found, and removed with it, by the pair.
--
-- The trigger read `status_message` and `last_updated_at_ms` by converting the
-- whole document to `jsonb`, twice per row; `json_to_record` reads both from
-- the stored `json` in one pass, without building a `jsonb` value. Positions
-- (`pos`, `seq`) and every change kept are unchanged.
ALTER TABLE conduit_task_changes ADD COLUMN task_created_ms BIGINT;
UPDATE conduit_task_changes c SET task_created_ms = t.created_at_ms FROM conduit_tasks t WHERE t.task_id = c.task_id;
UPDATE conduit_task_changes c SET task_created_ms = t.created_at_ms
    FROM conduit_legacy_tasks t WHERE t.task_id = c.task_id AND c.task_created_ms IS NULL;
-- A change whose task is gone was removed with it already; none is left to find.
DELETE FROM conduit_task_changes WHERE task_created_ms IS NULL;
DROP INDEX conduit_task_changes_task;
CREATE INDEX conduit_task_changes_task ON conduit_task_changes (task_created_ms, task_id);

CREATE OR REPLACE FUNCTION conduit_task_changes_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM conduit_task_changes c USING old_rows o
            WHERE c.task_created_ms = o.created_at_ms AND c.task_id = o.task_id;
        RETURN NULL;
    END IF;
    IF NOT (SELECT enabled FROM conduit_task_change_log WHERE id = 1) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
            SELECT n.task_id, n.owner, n.status, d.status_message, d.last_updated_at_ms, n.created_at_ms
            FROM new_rows n, json_to_record(n.doc) AS d(status_message text, last_updated_at_ms bigint);
    ELSE
        INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
            SELECT n.task_id, n.owner, n.status, d.status_message, d.last_updated_at_ms, n.created_at_ms
            FROM new_rows n JOIN old_rows o ON o.task_id = n.task_id,
                 json_to_record(n.doc) AS d(status_message text, last_updated_at_ms bigint)
            WHERE o.status IS DISTINCT FROM n.status
               OR (o.doc ->> 'status_message') IS DISTINCT FROM d.status_message;
    END IF;
    RETURN NULL;
END;
$$;
