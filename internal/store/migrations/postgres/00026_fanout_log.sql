-- The fan-out log: what instances tell each other besides notifications
-- (read receipts, changes of grants, revocations, webhook-token and
-- workflow cache drops), kept so that a lost pub/sub message delays a
-- change by at most the log's poll and never skips it. Each instance reads
-- it in id order from where it last read, as it reads the notifications
-- table; ids become visible in id order (on PostgreSQL an advisory lock
-- orders the inserts). Entries older than an hour are pruned.

-- +goose Up
CREATE TABLE fanout_log (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message    TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX fanout_log_created ON fanout_log (created_at);

-- +goose Down
DROP INDEX fanout_log_created;
DROP TABLE fanout_log;
