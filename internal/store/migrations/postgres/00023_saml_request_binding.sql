-- A sign-in started at Perch is bound to the browser that started it: the
-- browser keeps a random secret in a short-lived cookie, and the request
-- keeps the secret's SHA-256 (hex), which the assertion consumer service
-- compares before it takes the answer. Sign-ins started before this
-- migration have none, so they are refused and started again (they live
-- ten minutes).

-- +goose Up
ALTER TABLE saml_requests ADD COLUMN browser_hash TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE saml_requests DROP COLUMN browser_hash;
