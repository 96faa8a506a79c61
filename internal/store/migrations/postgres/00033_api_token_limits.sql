-- What an API token is limited by (docs/DESIGN.md, API tokens): when it
-- stops working (milliseconds since the epoch; NULL: never) and its scopes
-- (comma-separated, lowest first, each with the ones below it; NULL:
-- everything its user may do, which every existing token keeps).

-- +goose Up
ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT;
ALTER TABLE api_tokens ADD COLUMN scopes TEXT;

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN scopes;
ALTER TABLE api_tokens DROP COLUMN expires_at;
