-- A mailbox is proven only by a round trip of Perch's own (the verify
-- link, a password-reset link, or an invitation link that reached the
-- invitee by mail and was never shown to anyone else); what an
-- organisation's identity provider asserts is kept apart.
--
-- users.email_verified keeps its name and now means "proven by a round
-- trip"; users.email_asserted_by is the organisation whose identity
-- provider (SCIM, or a first SAML sign-in) asserted the address;
-- users.listed_admin records that an admin.granted entry stands for the
-- account's platform-admin role by PERCH_ADMIN_EMAILS, so that each grant
-- and withdrawal by that setting is audited once across the cluster.
-- invitations.mail_token_hash is the hash of the link that is only mailed
-- (token_hash, the link the inviter is shown, joins but proves nothing).
--
-- Addresses set verified by paths that never proved the mailbox lose the
-- mark: SCIM-managed and just-in-time SAML accounts, accounts made through
-- GitHub or Google sign-in that never set a password (a reset would have
-- proven the mailbox), and accounts made by registering through an
-- invitation link (which the inviter was shown). A password-reset link
-- proves them again.

-- +goose Up
ALTER TABLE users ADD COLUMN email_asserted_by TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN listed_admin BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE invitations ADD COLUMN mail_token_hash TEXT;
CREATE UNIQUE INDEX invitations_mail_token ON invitations (mail_token_hash);

UPDATE users SET email_verified = FALSE, email_asserted_by = org_id
WHERE id IN (SELECT user_id FROM scim_users)
   OR (password_hash = '' AND id NOT IN (SELECT user_id FROM user_identities));

UPDATE users SET email_verified = FALSE
WHERE password_hash = '' AND id IN (SELECT user_id FROM user_identities);

UPDATE users SET email_verified = FALSE
WHERE EXISTS (SELECT 1 FROM invitations i
              WHERE i.status = 'accepted' AND i.email_norm = users.email_norm AND i.accepted_at = users.created_at);

-- +goose Down
DROP INDEX invitations_mail_token;
ALTER TABLE invitations DROP COLUMN mail_token_hash;
ALTER TABLE users DROP COLUMN listed_admin;
ALTER TABLE users DROP COLUMN email_asserted_by;
