-- Notifications are ingest's hottest insert, and on SQLite every insert
-- statement paid for AUTOINCREMENT (a read and a write of sqlite_sequence)
-- and every row for the dedupe key's UNIQUE (a b-tree insert even for the
-- NULL that most rows carry). The table is rebuilt with a plain INTEGER
-- PRIMARY KEY and a partial unique index over the keys there are. Ids are
-- still never reused: the store gives them itself, from past both the
-- largest id kept and the highest id pruned (settings
-- notifications.pruned_through); pruning is the only delete, so every id
-- ever given is one of those two. Ids, rows and read state are all kept.
--
-- notification_reads references notifications (ON DELETE CASCADE) and is
-- the only table that does. goose runs this in a transaction, where
-- PRAGMA foreign_keys cannot be turned off, and with it on, dropping
-- notifications would cascade to the reads and renaming the new table
-- would rewrite the reads' reference. So the reads are set aside in a
-- plain table first and notification_reads is made again at the end, as
-- 00003 made it.

-- +goose Up
CREATE TABLE notification_reads_held (
    user_id         TEXT NOT NULL,
    notification_id BIGINT NOT NULL,
    read_at         BIGINT NOT NULL
);
INSERT INTO notification_reads_held SELECT user_id, notification_id, read_at FROM notification_reads;
DROP TABLE notification_reads;

CREATE TABLE notifications_new (
    id         INTEGER PRIMARY KEY,
    scope_type TEXT NOT NULL CHECK (scope_type IN ('user', 'team', 'org', 'all')),
    scope_id   TEXT NOT NULL,
    tab        TEXT NOT NULL,
    title      TEXT NOT NULL,
    message    TEXT NOT NULL,
    severity   TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'error')),
    source     TEXT NOT NULL,
    url        TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    dedupe_key TEXT
);
INSERT INTO notifications_new (id, scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key)
    SELECT id, scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key FROM notifications;
DROP TABLE notifications;
ALTER TABLE notifications_new RENAME TO notifications;
CREATE INDEX notifications_scope ON notifications (scope_type, scope_id, id);
CREATE UNIQUE INDEX notifications_dedupe ON notifications (dedupe_key) WHERE dedupe_key IS NOT NULL;

CREATE TABLE notification_reads (
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    notification_id BIGINT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    read_at         BIGINT NOT NULL,
    PRIMARY KEY (user_id, notification_id)
);
CREATE INDEX notification_reads_notification ON notification_reads (notification_id);
INSERT INTO notification_reads (user_id, notification_id, read_at)
    SELECT user_id, notification_id, read_at FROM notification_reads_held;
DROP TABLE notification_reads_held;

-- +goose Down
-- Back to AUTOINCREMENT and the column's UNIQUE, in the same steps. The
-- sequence starts past every id given, pruned ones included, as the store
-- counted them.
CREATE TABLE notification_reads_held (
    user_id         TEXT NOT NULL,
    notification_id BIGINT NOT NULL,
    read_at         BIGINT NOT NULL
);
INSERT INTO notification_reads_held SELECT user_id, notification_id, read_at FROM notification_reads;
DROP TABLE notification_reads;

CREATE TABLE notifications_autoincrement (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_type TEXT NOT NULL CHECK (scope_type IN ('user', 'team', 'org', 'all')),
    scope_id   TEXT NOT NULL,
    tab        TEXT NOT NULL,
    title      TEXT NOT NULL,
    message    TEXT NOT NULL,
    severity   TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'error')),
    source     TEXT NOT NULL,
    url        TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    dedupe_key TEXT UNIQUE
);
INSERT INTO notifications_autoincrement (id, scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key)
    SELECT id, scope_type, scope_id, tab, title, message, severity, source, url, created_at, dedupe_key FROM notifications;
DROP TABLE notifications;
ALTER TABLE notifications_autoincrement RENAME TO notifications;
CREATE INDEX notifications_scope ON notifications (scope_type, scope_id, id);
DELETE FROM sqlite_sequence WHERE name = 'notifications';
INSERT INTO sqlite_sequence (name, seq) VALUES ('notifications', MAX(
    COALESCE((SELECT MAX(id) FROM notifications), 0),
    COALESCE((SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'notifications.pruned_through'), 0)));

CREATE TABLE notification_reads (
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    notification_id BIGINT NOT NULL REFERENCES notifications (id) ON DELETE CASCADE,
    read_at         BIGINT NOT NULL,
    PRIMARY KEY (user_id, notification_id)
);
CREATE INDEX notification_reads_notification ON notification_reads (notification_id);
INSERT INTO notification_reads (user_id, notification_id, read_at)
    SELECT user_id, notification_id, read_at FROM notification_reads_held;
DROP TABLE notification_reads_held;
