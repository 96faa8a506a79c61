-- Workflows and the marketplace are not built yet: a flag that says they are
-- on would promise clients features that answer 404. The workflows issue
-- turns them on with what they gate.

-- +goose Up
UPDATE feature_flags SET enabled = FALSE WHERE key IN ('workflows', 'marketplace');

-- +goose Down
UPDATE feature_flags SET enabled = TRUE WHERE key IN ('workflows', 'marketplace');
