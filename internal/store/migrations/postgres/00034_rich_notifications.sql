-- A notification's priority (1 min … 5 urgent; docs/DESIGN.md, The rich
-- notification) and its extras: tags, icon, Markdown, actions (with what
-- only the server may see of them: an http action's sealed request, a
-- native action's reference) and the time a scheduled one was due, as one
-- JSON object, NULL for the many notifications that have none of them, so
-- that a plain one costs ingest an integer and a NULL. Every existing
-- notification is default (3), or high (4) for an error, as a new one
-- without a priority would be.

-- +goose Up
ALTER TABLE notifications ADD COLUMN priority SMALLINT NOT NULL DEFAULT 3 CHECK (priority BETWEEN 1 AND 5);
ALTER TABLE notifications ADD COLUMN extras TEXT;
UPDATE notifications SET priority = 4 WHERE severity = 'error';

-- +goose Down
ALTER TABLE notifications DROP COLUMN extras;
ALTER TABLE notifications DROP COLUMN priority;
