-- The running server instances and how many WebSocket clients each holds,
-- for the admin metrics' connected_clients: each instance upserts its row
-- every 15 seconds and deletes it when it stops; rows not seen for a minute
-- are not counted, and rows not seen for an hour are deleted.

-- +goose Up
CREATE TABLE instances (
    id      TEXT PRIMARY KEY,
    clients INTEGER NOT NULL CHECK (clients >= 0),
    seen_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE instances;
