-- SCIM deprovisioning (docs/DESIGN.md, SCIM): a SCIM DELETE disables the
-- account and keeps it in its organisation, where users.scim_deleted_at
-- hides it from the identity provider (GET answers 404, lists leave it
-- out) until a POST of the same userName, externalId or address restores
-- it.
--
-- Before, a SCIM DELETE moved the person into a new trial organisation of
-- their own ("<name>'s organisation") and left the account enabled. Such
-- an organisation is found by the audit entry the old DELETE wrote
-- (scim.user.deleted, in the organisation the user left, about the user):
-- it was created in the minute before that entry, the user joined it then
-- and is still its only member, no platform admin, and it holds nothing of
-- its own (no team, invitation, webhook token, workflow, job, SAML or SCIM
-- settings, feature override, billing customer, subscription or checkout,
-- organisation-wide notification, nor API token made since, nor any audit
-- entry after the move other than the account's own sign-ins and profile
-- changes, auth.* and user.*, or the system's trial expiry). The user then
-- goes back to the organisation that deleted them, as a member (their old
-- role is not known), disabled by SCIM (an earlier disable keeps its time
-- and author), deleted by SCIM at the entry's time, with every sign-in
-- ended; the empty organisation is deleted. Anything else is left as it
-- is: the query in docs/DESIGN.md lists what an operator may want to look
-- at.

-- +goose Up
ALTER TABLE users ADD COLUMN scim_deleted_at BIGINT;

CREATE TEMPORARY TABLE scim_orphans AS
SELECT u.id AS user_id, o.id AS orphan_org, a.org_id AS home_org, MAX(a.at) AS deleted_at
FROM users u
JOIN orgs o ON o.id = u.org_id
JOIN audit_log a ON a.action = 'scim.user.deleted' AND a.target_type = 'user' AND a.target_id = u.id
    AND a.org_id <> u.org_id AND o.created_at BETWEEN a.at - 60000 AND a.at
    AND u.joined_at BETWEEN o.created_at AND a.at
JOIN orgs home ON home.id = a.org_id
WHERE u.org_role = 'owner' AND NOT u.is_admin AND NOT u.listed_admin
  AND (SELECT COUNT(*) FROM users m WHERE m.org_id = o.id) = 1
  AND o.billing_provider = '' AND o.billing_customer_id = '' AND o.billing_subscription_id = ''
  AND NOT EXISTS (SELECT 1 FROM teams x WHERE x.org_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM invitations x WHERE x.org_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM webhook_tokens x WHERE x.org_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM workflows x WHERE x.org_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM jobs x WHERE x.org_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM saml_configs x WHERE x.org_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM scim_tokens x WHERE x.org_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM feature_overrides x WHERE x.org_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM billing_checkouts x WHERE x.org_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM notifications x WHERE x.scope_type = 'org' AND x.scope_id = o.id)
  AND NOT EXISTS (SELECT 1 FROM api_tokens x WHERE x.user_id = u.id AND x.created_at >= o.created_at)
  AND NOT EXISTS (SELECT 1 FROM audit_log x WHERE x.org_id = o.id AND x.at > a.at
                  AND x.action NOT LIKE 'auth.%' AND x.action NOT LIKE 'user.%' AND x.action <> 'billing.trial_expired')
GROUP BY u.id, o.id, a.org_id;

UPDATE sessions SET revoked_at = CAST(strftime('%s', 'now') AS INTEGER) * 1000
WHERE revoked_at IS NULL AND user_id IN (SELECT user_id FROM scim_orphans);

UPDATE users SET
    disabled_by = CASE WHEN disabled_at IS NULL THEN 'scim' ELSE disabled_by END,
    disabled_at = COALESCE(disabled_at, (SELECT deleted_at FROM scim_orphans x WHERE x.user_id = users.id)),
    scim_deleted_at = (SELECT deleted_at FROM scim_orphans x WHERE x.user_id = users.id),
    joined_at = (SELECT deleted_at FROM scim_orphans x WHERE x.user_id = users.id),
    org_role = 'member',
    org_id = (SELECT home_org FROM scim_orphans x WHERE x.user_id = users.id)
WHERE id IN (SELECT user_id FROM scim_orphans);

DELETE FROM orgs WHERE id IN (SELECT orphan_org FROM scim_orphans);
DROP TABLE scim_orphans;

-- +goose Down
-- What Up cleaned is not put back: the accounts stay disabled in the
-- organisations that deleted them.
ALTER TABLE users DROP COLUMN scim_deleted_at;
