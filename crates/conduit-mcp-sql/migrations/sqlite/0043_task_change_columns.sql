-- conduit-mcp-sql schema, version 43 (SQLite): a task's status message and
-- last update time are columns of the task tables, written with the document,
-- so the change log's triggers read no JSON (issue 29).
--
-- The triggers took both from the document with json_extract: every create
-- parsed its document, and every write of a document (a progress message, a
-- lease, an answer) parsed the old one and the new one to compare the status
-- messages, about two thirds of what the change log added to a create.
-- Existing rows get both values from their documents here.
ALTER TABLE conduit_tasks ADD COLUMN status_message TEXT;
ALTER TABLE conduit_tasks ADD COLUMN updated_at_ms INTEGER;
UPDATE conduit_tasks SET status_message = json_extract(doc, '$.status_message'),
    updated_at_ms = json_extract(doc, '$.last_updated_at_ms');
ALTER TABLE conduit_legacy_tasks ADD COLUMN status_message TEXT;
ALTER TABLE conduit_legacy_tasks ADD COLUMN updated_at_ms INTEGER;
UPDATE conduit_legacy_tasks SET status_message = json_extract(doc, '$.status_message'),
    updated_at_ms = json_extract(doc, '$.last_updated_at_ms');

DROP TRIGGER conduit_tasks_change_inserted;
DROP TRIGGER conduit_tasks_change_updated;
DROP TRIGGER conduit_legacy_tasks_change_inserted;
DROP TRIGGER conduit_legacy_tasks_change_updated;

CREATE TRIGGER conduit_tasks_change_inserted AFTER INSERT ON conduit_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, NEW.status_message, NEW.updated_at_ms, NEW.created_at_ms);
END;
CREATE TRIGGER conduit_tasks_change_updated AFTER UPDATE OF doc ON conduit_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
    AND (OLD.status IS NOT NEW.status OR OLD.status_message IS NOT NEW.status_message)
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, NEW.status_message, NEW.updated_at_ms, NEW.created_at_ms);
END;

CREATE TRIGGER conduit_legacy_tasks_change_inserted AFTER INSERT ON conduit_legacy_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, NEW.status_message, NEW.updated_at_ms, NEW.created_at_ms);
END;
CREATE TRIGGER conduit_legacy_tasks_change_updated AFTER UPDATE OF doc ON conduit_legacy_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
    AND (OLD.status IS NOT NEW.status OR OLD.status_message IS NOT NEW.status_message)
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, NEW.status_message, NEW.updated_at_ms, NEW.created_at_ms);
END;
