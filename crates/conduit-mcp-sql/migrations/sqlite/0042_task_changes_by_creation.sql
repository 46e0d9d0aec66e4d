-- conduit-mcp-sql schema, version 42 (SQLite): the task change log finds a
-- task's changes by (`task_created_ms`, `task_id`) instead of by `task_id`
-- alone (issue 29).
--
-- Task ids are random, so every change row put an entry at a random place in
-- the `task_id` index: a page of its own to write per change, which cost a
-- task create with the log on about a quarter of its speed. A new task's
-- creation time is now, so its change goes at the end of this index, next to
-- those of the tasks created with it. A task's creation time never changes
-- (the store keeps it on every write), so its changes are found, and removed
-- with it, by the pair. Positions (`seq`) and every change kept are unchanged.
ALTER TABLE conduit_task_changes ADD COLUMN task_created_ms INTEGER;
UPDATE conduit_task_changes SET task_created_ms = COALESCE(
    (SELECT t.created_at_ms FROM conduit_tasks t WHERE t.task_id = conduit_task_changes.task_id),
    (SELECT t.created_at_ms FROM conduit_legacy_tasks t WHERE t.task_id = conduit_task_changes.task_id));
-- A change whose task is gone was removed with it already; none is left to find.
DELETE FROM conduit_task_changes WHERE task_created_ms IS NULL;
DROP INDEX conduit_task_changes_task;
CREATE INDEX conduit_task_changes_task ON conduit_task_changes (task_created_ms, task_id);

DROP TRIGGER conduit_tasks_change_inserted;
DROP TRIGGER conduit_tasks_change_updated;
DROP TRIGGER conduit_tasks_change_deleted;
DROP TRIGGER conduit_legacy_tasks_change_inserted;
DROP TRIGGER conduit_legacy_tasks_change_updated;
DROP TRIGGER conduit_legacy_tasks_change_deleted;

CREATE TRIGGER conduit_tasks_change_inserted AFTER INSERT ON conduit_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, json_extract(NEW.doc, '$.status_message'),
            json_extract(NEW.doc, '$.last_updated_at_ms'), NEW.created_at_ms);
END;
CREATE TRIGGER conduit_tasks_change_updated AFTER UPDATE OF doc ON conduit_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
    AND (OLD.status IS NOT NEW.status
         OR json_extract(OLD.doc, '$.status_message') IS NOT json_extract(NEW.doc, '$.status_message'))
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, json_extract(NEW.doc, '$.status_message'),
            json_extract(NEW.doc, '$.last_updated_at_ms'), NEW.created_at_ms);
END;
CREATE TRIGGER conduit_tasks_change_deleted AFTER DELETE ON conduit_tasks
BEGIN
    DELETE FROM conduit_task_changes WHERE task_created_ms = OLD.created_at_ms AND task_id = OLD.task_id;
END;

CREATE TRIGGER conduit_legacy_tasks_change_inserted AFTER INSERT ON conduit_legacy_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, json_extract(NEW.doc, '$.status_message'),
            json_extract(NEW.doc, '$.last_updated_at_ms'), NEW.created_at_ms);
END;
CREATE TRIGGER conduit_legacy_tasks_change_updated AFTER UPDATE OF doc ON conduit_legacy_tasks
WHEN (SELECT enabled FROM conduit_task_change_log WHERE id = 1) = 1
    AND (OLD.status IS NOT NEW.status
         OR json_extract(OLD.doc, '$.status_message') IS NOT json_extract(NEW.doc, '$.status_message'))
BEGIN
    INSERT INTO conduit_task_changes (task_id, owner, status, status_message, updated_at_ms, task_created_ms)
    VALUES (NEW.task_id, NEW.owner, NEW.status, json_extract(NEW.doc, '$.status_message'),
            json_extract(NEW.doc, '$.last_updated_at_ms'), NEW.created_at_ms);
END;
CREATE TRIGGER conduit_legacy_tasks_change_deleted AFTER DELETE ON conduit_legacy_tasks
BEGIN
    DELETE FROM conduit_task_changes WHERE task_created_ms = OLD.created_at_ms AND task_id = OLD.task_id;
END;
