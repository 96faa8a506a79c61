-- Retention prunes in id order (ids grow with created_at), so the index on
-- created_at only cost every insert a third b-tree to update.

-- +goose Up
DROP INDEX notifications_created;

-- +goose Down
CREATE INDEX notifications_created ON notifications (created_at);
