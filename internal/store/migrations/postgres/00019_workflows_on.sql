-- Workflows and the marketplace are built (issue 20): turn their flags on,
-- the reverse of 00007. Admins may still turn them off, for everyone or per
-- organisation, and the routes they gate then answer 403 feature_disabled.

-- +goose Up
UPDATE feature_flags SET enabled = TRUE WHERE key IN ('workflows', 'marketplace');

-- +goose Down
UPDATE feature_flags SET enabled = FALSE WHERE key IN ('workflows', 'marketplace');
