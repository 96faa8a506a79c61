-- The dedupe key's uniqueness becomes a partial index, as on SQLite (where
-- the NULL that most rows carry cost a b-tree insert each): one
-- ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL then serves both
-- databases. The identity column is unchanged. (The file is named for the
-- SQLite side of the change, which rebuilds the table.)

-- +goose Up
ALTER TABLE notifications DROP CONSTRAINT notifications_dedupe_key_key;
CREATE UNIQUE INDEX notifications_dedupe ON notifications (dedupe_key) WHERE dedupe_key IS NOT NULL;

-- +goose Down
DROP INDEX notifications_dedupe;
ALTER TABLE notifications ADD CONSTRAINT notifications_dedupe_key_key UNIQUE (dedupe_key);
