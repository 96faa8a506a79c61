-- Scheduled delivery (docs/DESIGN.md, Scheduled delivery): a notification
-- sent with deliver_at or delay waits here, outside the notifications table
-- (the log), and gets its notification id only when it is due. body is the
-- notification to make, as JSON with its scope and its actions' server-only
-- parts (sealed requests, native actions), and the workflow jobs to queue
-- with it. token_id and user_id are the webhook token that sent it and its
-- owner, who alone may list and cancel it; deleting the token removes what
-- it scheduled. dedupe_key is the delivery's own (Idempotency-Key, a
-- sender's delivery id), so a redelivery schedules nothing again.
--
-- A worker claims a due row by moving lease_until past now (another worker
-- skips it until the lease ends), writes the notification through ingest
-- with the dedupe key "scheduled|<id>", and then sets done_at (and
-- notification_id). A row cancelled by its owner, or dropped because its
-- token may no longer send, has done_at and cancelled. Done rows are kept
-- for their dedupe key until pruned with the notifications (PERCH_RETENTION).

-- +goose Up
CREATE TABLE scheduled_notifications (
    id              TEXT PRIMARY KEY,
    token_id        TEXT NOT NULL REFERENCES webhook_tokens (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id          TEXT NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    deliver_at      BIGINT NOT NULL,
    body            TEXT NOT NULL,
    dedupe_key      TEXT,
    created_at      BIGINT NOT NULL,
    lease_until     BIGINT NOT NULL DEFAULT 0,
    done_at         BIGINT,
    cancelled       BOOLEAN NOT NULL DEFAULT FALSE,
    notification_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX scheduled_notifications_due ON scheduled_notifications (deliver_at) WHERE done_at IS NULL;
CREATE INDEX scheduled_notifications_user ON scheduled_notifications (user_id, deliver_at) WHERE done_at IS NULL;
CREATE INDEX scheduled_notifications_token ON scheduled_notifications (token_id) WHERE done_at IS NULL;
CREATE INDEX scheduled_notifications_done ON scheduled_notifications (done_at) WHERE done_at IS NOT NULL;
CREATE UNIQUE INDEX scheduled_notifications_dedupe ON scheduled_notifications (dedupe_key) WHERE dedupe_key IS NOT NULL;

-- +goose Down
DROP INDEX scheduled_notifications_dedupe;
DROP INDEX scheduled_notifications_done;
DROP INDEX scheduled_notifications_token;
DROP INDEX scheduled_notifications_user;
DROP INDEX scheduled_notifications_due;
DROP TABLE scheduled_notifications;
