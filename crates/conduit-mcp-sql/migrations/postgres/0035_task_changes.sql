-- conduit-mcp-sql schema, version 35 (PostgreSQL): the task change log that
-- the Events extension's `task.status_changed` reads (issue 29).
--
-- A trigger writes a change row in the same transaction as every insert of a
-- task and every write of its document that changes its status or status
-- message, in both task tables. Positions (`seq`) are handed out before
-- commit, so concurrent transactions may commit them out of order: each row
-- keeps its transaction id (`xid`), and a reader serves only rows of
-- transactions older than every one still running, in (`xid`, `seq`) order.
-- The trigger records nothing until a reader turns the log on (`enabled`). A
-- task's changes go with its row, so they are kept as long as the task is.
--
-- Not attached yet: the triggers come with this engine's reader (the next
-- migration), so until then a task write here costs nothing more.
CREATE TABLE conduit_task_change_log (
    id      SMALLINT NOT NULL PRIMARY KEY CHECK (id = 1),
    enabled BOOLEAN  NOT NULL,
    -- Names this log: a cursor of another database is not one of its positions.
    epoch   BIGINT   NOT NULL
);
INSERT INTO conduit_task_change_log (id, enabled, epoch)
    VALUES (1, false, floor(random() * 9007199254740991)::bigint);

CREATE TABLE conduit_task_changes (
    seq            BIGSERIAL NOT NULL PRIMARY KEY,
    xid            xid8      NOT NULL DEFAULT pg_current_xact_id(),
    task_id        TEXT      NOT NULL,
    owner          TEXT,
    status         TEXT      NOT NULL,
    status_message TEXT,
    updated_at_ms  BIGINT    NOT NULL
);
CREATE INDEX conduit_task_changes_owner ON conduit_task_changes (owner, xid, seq) WHERE owner IS NOT NULL;
CREATE INDEX conduit_task_changes_task ON conduit_task_changes (task_id);

CREATE FUNCTION conduit_task_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM conduit_task_changes WHERE task_id = OLD.task_id;
        RETURN NULL;
    END IF;
    IF NOT (SELECT enabled FROM conduit_task_change_log WHERE id = 1) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.status IS NOT DISTINCT FROM NEW.status
        AND (OLD.doc::jsonb ->> 'status_message') IS NOT DISTINCT FROM (NEW.doc::jsonb ->> 'status_message') THEN
        RETURN NULL;
    END IF;
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms)
        VALUES (NEW.task_id, NEW.owner, NEW.status, NEW.doc::jsonb ->> 'status_message',
                (NEW.doc::jsonb ->> 'last_updated_at_ms')::bigint);
    RETURN NULL;
END;
$$;
