-- Each user's preferences (docs/DESIGN.md, Preferences): body is
-- perch.Preferences as JSON, version grows with every change (a client
-- never lets an older copy replace a newer one). The unread mail's settings
-- are copied into columns for the worker to find, with where it stands:
-- unread_through is the newest created_at (ms) a past mail has covered, so
-- no notification is mailed twice, and unread_due_at when to look next
-- (NULL: the mail is off).

-- +goose Up
CREATE TABLE user_preferences (
    user_id              TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    body                 TEXT NOT NULL,
    version              BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    unread_after_minutes INTEGER,
    unread_min_priority  INTEGER,
    unread_through       BIGINT NOT NULL DEFAULT 0,
    unread_due_at        BIGINT
);
CREATE INDEX user_preferences_unread_due ON user_preferences (unread_due_at) WHERE unread_due_at IS NOT NULL;

-- +goose Down
DROP TABLE user_preferences;
