-- The sender's payload of a notification that an organisation's workflows
-- ran on, as the workflows read it (the delivery's JSON body), so that
-- "Try it" on a past notification sees what the live run saw. Only
-- notifications of an organisation with a workflow switched on keep one,
-- and only up to 64 KiB (docs/DESIGN.md, Kept payloads); a row goes when
-- pruning takes its notification.

-- +goose Up
CREATE TABLE notification_payloads (
    notification_id BIGINT PRIMARY KEY,
    body            BYTEA NOT NULL
);

-- +goose Down
DROP TABLE notification_payloads;
