-- conduit-mcp-sql schema, version 35 (SQLite): the task change log that the
-- Events extension's `task.status_changed` reads (issue 29).
--
-- Triggers write a change row in the same statement, so in the same
-- transaction, as every insert of a task and every write of its document that
-- changes its status or status message, in both task tables. SQLite has one
-- writer, so positions (`seq`, never reused) follow commit order. The triggers
-- record nothing until a reader turns the log on (`enabled`), so a database
-- whose tasks nobody follows as events pays one lookup per write. A task's
-- changes go with its row, so they are kept as long as the task is.
CREATE TABLE conduit_task_change_log (
    id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    enabled INTEGER NOT NULL,
    -- Names this log: a cursor of another database is not one of its positions.
    epoch   INTEGER NOT NULL
);
INSERT INTO conduit_task_change_log (id, enabled, epoch) VALUES (1, 0, abs(random() % 9007199254740991));

CREATE TABLE conduit_task_changes (
    seq            INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id        TEXT    NOT NULL,
    owner          TEXT,
    status         TEXT    NOT NULL,
    status_message TEXT,
    updated_at_ms  INTEGER NOT NULL
);
-- A principal's changes after a position.
CREATE INDEX conduit_task_changes_owner ON conduit_task_changes (owner, seq) WHERE owner IS NOT NULL;
-- A task's changes, removed with it.
CREATE INDEX conduit_task_changes_task ON conduit_task_changes (task_id);

CREATE TRIGGER conduit_tasks_change_inserted AFTER INSERT ON conduit_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, json_extract(NEW.doc, '$.status_message'),
            json_extract(NEW.doc, '$.last_updated_at_ms'));
END;
CREATE TRIGGER conduit_tasks_change_updated AFTER UPDATE OF doc ON conduit_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
    AND (OLD.status IS NOT NEW.status
         OR json_extract(OLD.doc, '$.status_message') IS NOT json_extract(NEW.doc, '$.status_message'))
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, json_extract(NEW.doc, '$.status_message'),
            json_extract(NEW.doc, '$.last_updated_at_ms'));
END;
CREATE TRIGGER conduit_tasks_change_deleted AFTER DELETE ON conduit_tasks
BEGIN
    DELETE FROM conduit_task_changes WHERE task_id = OLD.task_id;
END;

CREATE TRIGGER conduit_legacy_tasks_change_inserted AFTER INSERT ON conduit_legacy_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, json_extract(NEW.doc, '$.status_message'),
            json_extract(NEW.doc, '$.last_updated_at_ms'));
END;
CREATE TRIGGER conduit_legacy_tasks_change_updated AFTER UPDATE OF doc ON conduit_legacy_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
    AND (OLD.status IS NOT NEW.status
         OR json_extract(OLD.doc, '$.status_message') IS NOT json_extract(NEW.doc, '$.status_message'))
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, json_extract(NEW.doc, '$.status_message'),
            json_extract(NEW.doc, '$.last_updated_at_ms'));
END;
CREATE TRIGGER conduit_legacy_tasks_change_deleted AFTER DELETE ON conduit_legacy_tasks
BEGIN
    DELETE FROM conduit_task_changes WHERE task_id = OLD.task_id;
END;
