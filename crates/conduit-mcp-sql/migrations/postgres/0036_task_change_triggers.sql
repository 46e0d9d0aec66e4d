-- conduit-mcp-sql schema, version 36 (PostgreSQL): the task change log's
-- triggers and its positions (issue 29).
--
-- Statement triggers with transition tables write the change rows of a whole
-- statement at once (a batch of creates is one statement), in its
-- transaction, once a reader turned the log on; a task's changes go with it.
--
-- `seq` is handed out before commit, so concurrent transactions commit it out
-- of order. Readers therefore read `pos`, given after commit by
-- `conduit_task_changes_sequence()`: under an advisory lock, it numbers the
-- rows of every transaction older than all still running (`xid` below the
-- snapshot's xmin), in (`xid`, `seq`) order, after the last number given. A
-- transaction still running when a reader looks is numbered later, after it;
-- so positions only grow, in commit order, and are the same on every node.
ALTER TABLE conduit_task_change_log ADD COLUMN last_pos BIGINT NOT NULL DEFAULT 0;
ALTER TABLE conduit_task_changes ADD COLUMN pos BIGINT;
DROP INDEX conduit_task_changes_owner;
CREATE UNIQUE INDEX conduit_task_changes_pos ON conduit_task_changes (pos) WHERE pos IS NOT NULL;
CREATE INDEX conduit_task_changes_owner ON conduit_task_changes (owner, pos) WHERE owner IS NOT NULL AND pos IS NOT NULL;
CREATE INDEX conduit_task_changes_pending ON conduit_task_changes (xid, seq) WHERE pos IS NULL;
DROP FUNCTION conduit_task_change();

CREATE FUNCTION conduit_task_changes_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM conduit_task_changes c USING old_rows o WHERE c.task_id = o.task_id;
        RETURN NULL;
    END IF;
    IF NOT (SELECT enabled FROM conduit_task_change_log WHERE id = 1) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms)
            SELECT n.task_id, n.owner, n.status, n.doc::jsonb ->> 'status_message',
                   (n.doc::jsonb ->> 'last_updated_at_ms')::bigint
            FROM new_rows n;
    ELSE
        INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms)
            SELECT n.task_id, n.owner, n.status, n.doc::jsonb ->> 'status_message',
                   (n.doc::jsonb ->> 'last_updated_at_ms')::bigint
            FROM new_rows n JOIN old_rows o ON o.task_id = n.task_id
            WHERE o.status IS DISTINCT FROM n.status
               OR (o.doc::jsonb ->> 'status_message') IS DISTINCT FROM (n.doc::jsonb ->> 'status_message');
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER conduit_tasks_change_inserted AFTER INSERT ON conduit_tasks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION conduit_task_changes_written();
CREATE TRIGGER conduit_tasks_change_updated AFTER UPDATE ON conduit_tasks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION conduit_task_changes_written();
CREATE TRIGGER conduit_tasks_change_deleted AFTER DELETE ON conduit_tasks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION conduit_task_changes_written();
CREATE TRIGGER conduit_legacy_tasks_change_inserted AFTER INSERT ON conduit_legacy_tasks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION conduit_task_changes_written();
CREATE TRIGGER conduit_legacy_tasks_change_updated AFTER UPDATE ON conduit_legacy_tasks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION conduit_task_changes_written();
CREATE TRIGGER conduit_legacy_tasks_change_deleted AFTER DELETE ON conduit_legacy_tasks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION conduit_task_changes_written();

CREATE FUNCTION conduit_task_changes_sequence() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    numbered bigint;
    last bigint;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM conduit_task_changes WHERE pos IS NULL) THEN
        RETURN (SELECT last_pos FROM conduit_task_change_log WHERE id = 1);
    END IF;
    -- One numbering at a time; each statement below sees what the one before committed.
    PERFORM pg_advisory_xact_lock(7165249548263748643);
    WITH due AS (
        SELECT seq, row_number() OVER (ORDER BY xid, seq) AS rn FROM conduit_task_changes
        WHERE pos IS NULL AND xid < pg_snapshot_xmin(pg_current_snapshot())
    ), base AS (SELECT last_pos FROM conduit_task_change_log WHERE id = 1)
    UPDATE conduit_task_changes c SET pos = base.last_pos + due.rn FROM due, base WHERE c.seq = due.seq;
    GET DIAGNOSTICS numbered = ROW_COUNT;
    UPDATE conduit_task_change_log SET last_pos = last_pos + numbered WHERE id = 1 RETURNING last_pos INTO last;
    RETURN last;
END;
$$;
