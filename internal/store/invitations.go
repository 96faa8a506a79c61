package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

const invitationColumns = `i.id, i.org_id, i.email, i.role, i.status, i.created_at, i.expires_at, i.accepted_at, i.invited_by, COALESCE(u.name, '')`

const invitationFrom = ` FROM invitations i LEFT JOIN users u ON u.id = i.invited_by`

func (s *Store) scanInvitation(row interface{ Scan(...any) error }) (*perch.Invitation, error) {
	var inv perch.Invitation
	var created, expires int64
	var accepted sql.NullInt64
	var inviter sql.NullString
	var inviterName string
	if err := row.Scan(&inv.ID, &inv.OrgID, &inv.Email, &inv.Role, &inv.Status, &created, &expires, &accepted, &inviter, &inviterName); err != nil {
		return nil, err
	}
	inv.CreatedAt, inv.ExpiresAt, inv.AcceptedAt = fromMS(created), fromMS(expires), fromNullMS(accepted)
	if inviter.Valid {
		inv.InvitedBy = &perch.TeamRef{ID: inviter.String, Name: inviterName}
	}
	if inv.Status == perch.InvitationPending && !inv.ExpiresAt.After(s.now()) {
		inv.Status = perch.InvitationExpired
	}
	return &inv, nil
}

// Invitations lists an organisation's invitations, newest first.
func (s *Store) Invitations(ctx context.Context, orgID string) ([]*perch.Invitation, error) {
	rows, err := s.r.QueryContext(ctx, s.q(`SELECT `+invitationColumns+invitationFrom+` WHERE i.org_id = ? ORDER BY i.created_at DESC, i.id`), orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []*perch.Invitation{}
	for rows.Next() {
		inv, err := s.scanInvitation(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, inv)
	}
	return list, rows.Err()
}

// CreateInvitation records an invitation to orgID for email with role,
// known by the hashes of its two links: tokenHash, the link the inviter is
// shown to pass on by hand, and mailHash, the link that is only mailed to
// the address. Either joins; only the mailed one proves the mailbox. It is
// ECONFLICT when the address is already a member or has a live invitation,
// or when members and live invitations together already fill the plan's
// seats.
func (s *Store) CreateInvitation(ctx context.Context, orgID, inviterID, email, role, tokenHash, mailHash string) (*perch.Invitation, error) {
	now := s.now()
	email = strings.TrimSpace(email)
	norm := perch.NormalizeEmail(email)
	inv := &perch.Invitation{ID: newID(), OrgID: orgID, Email: email, Role: role, Status: perch.InvitationPending,
		CreatedAt: now, ExpiresAt: now.Add(perch.InvitationTTL)}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var members, pending, seats, memberHere, pendingHere int
		err := tx.QueryRowContext(ctx, s.q(`SELECT
				(SELECT COUNT(*) FROM users WHERE org_id = o.id),
				(SELECT COUNT(*) FROM invitations WHERE org_id = o.id AND status = 'pending' AND expires_at > ?),
				p.max_seats,
				(SELECT COUNT(*) FROM users WHERE org_id = o.id AND email_norm = ?),
				(SELECT COUNT(*) FROM invitations WHERE org_id = o.id AND email_norm = ? AND status = 'pending' AND expires_at > ?)
			FROM orgs o JOIN plans p ON p.slug = o.plan WHERE o.id = ?`), ms(now), norm, norm, ms(now), orgID).
			Scan(&members, &pending, &seats, &memberHere, &pendingHere)
		switch {
		case err != nil:
			return notFound(err, "Organisation")
		case memberHere > 0:
			return perch.Errorf(perch.ECONFLICT, "%s is already a member of this organisation.", email)
		case pendingHere > 0:
			return perch.Errorf(perch.ECONFLICT, "%s already has a pending invitation; revoke it to send a new one.", email)
		case members+pending >= seats:
			return perch.Errorf(perch.ECONFLICT, "All %d seats of the plan are taken by members and pending invitations; upgrade the plan or revoke an invitation.", seats)
		}
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO invitations (id, org_id, email, email_norm, role, token_hash, mail_token_hash, invited_by, status, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`), inv.ID, orgID, email, norm, role, tokenHash, mailHash, inviterID, ms(now), ms(inv.ExpiresAt))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s.invitation(ctx, s.r, `i.id = ?`, inv.ID)
}

func (s *Store) invitation(ctx context.Context, q querier, where string, arg any) (*perch.Invitation, error) {
	inv, err := s.scanInvitation(q.QueryRowContext(ctx, s.q(`SELECT `+invitationColumns+invitationFrom+` WHERE `+where), arg))
	return inv, notFound(err, "Invitation")
}

// RevokeInvitation withdraws a pending invitation of orgID. Revoking one that
// was accepted or revoked already is ECONFLICT.
func (s *Store) RevokeInvitation(ctx context.Context, orgID, id string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		inv, err := s.invitation(ctx, tx, `i.id = ?`, id)
		if err != nil || inv.OrgID != orgID {
			return perch.Errorf(perch.ENOTFOUND, "Invitation not found.")
		}
		if inv.Status == perch.InvitationAccepted || inv.Status == perch.InvitationRevoked {
			return perch.Errorf(perch.ECONFLICT, "The invitation was %s already.", inv.Status)
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE invitations SET status = 'revoked', revoked_at = ? WHERE id = ?`), ms(s.now()), id)
		return err
	})
}

var errBadInvitation = perch.Errorf(perch.EBADREQUEST, "This invitation link is invalid, expired or already used.")

// liveInvitation returns the pending, unexpired invitation one of whose
// links has the token hash, for email, and whether the link was the mailed
// one (which proves the mailbox it reached).
func (s *Store) liveInvitation(ctx context.Context, tx *sql.Tx, tokenHash, email string) (inv *perch.Invitation, mailed bool, err error) {
	inv, err = s.invitation(ctx, tx, `i.token_hash = ?`, tokenHash)
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		inv, err = s.invitation(ctx, tx, `i.mail_token_hash = ?`, tokenHash)
		mailed = true
	}
	if err != nil || inv.Status != perch.InvitationPending {
		return nil, false, errBadInvitation
	}
	if perch.NormalizeEmail(inv.Email) != perch.NormalizeEmail(email) {
		return nil, false, perch.Errorf(perch.EFORBIDDEN, "This invitation was sent to %s; sign in with that address to accept it.", inv.Email)
	}
	return inv, mailed, nil
}

// InvitationPreview returns what the live invitation one of whose links
// has the token hash is for: the organisation's name, the inviter's, the
// address and the role. A link unknown, used, revoked or expired is the
// same EBADREQUEST, so that the answer tells nothing to one without a live
// link.
func (s *Store) InvitationPreview(ctx context.Context, tokenHash string) (*perch.InvitationPreview, error) {
	var p perch.InvitationPreview
	var expires int64
	err := s.r.QueryRowContext(ctx, s.q(`SELECT o.name, COALESCE(u.name, ''), i.email, i.role, i.expires_at
		FROM invitations i JOIN orgs o ON o.id = i.org_id LEFT JOIN users u ON u.id = i.invited_by
		WHERE (i.token_hash = ? OR i.mail_token_hash = ?) AND i.status = 'pending' AND i.expires_at > ?`),
		tokenHash, tokenHash, ms(s.now())).Scan(&p.OrgName, &p.InvitedBy, &p.Email, &p.Role, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errBadInvitation
	}
	if err != nil {
		return nil, err
	}
	p.ExpiresAt = fromMS(expires)
	return &p, nil
}

func (s *Store) markAccepted(ctx context.Context, tx *sql.Tx, id string, now time.Time) error {
	res, err := tx.ExecContext(ctx, s.q(`UPDATE invitations SET status = 'accepted', accepted_at = ? WHERE id = ? AND status = 'pending'`), ms(now), id)
	if err := expectOne(res, err, "Invitation"); err != nil {
		return errBadInvitation
	}
	return nil
}

// AcceptInvitation moves a signed-in user into the organisation that invited
// them, with the invited role. The invitation must be live and addressed to
// the user's e-mail (EFORBIDDEN otherwise); the last owner of an organisation
// that has other members cannot leave it (ECONFLICT). Accepted through the
// mailed link, it proves the user's mailbox.
func (s *Store) AcceptInvitation(ctx context.Context, tokenHash string, user *perch.User) (*perch.Org, error) {
	var orgID string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		inv, mailed, err := s.liveInvitation(ctx, tx, tokenHash, user.Email)
		if err != nil {
			return err
		}
		var currentOrg string
		if err := tx.QueryRowContext(ctx, s.q(`SELECT org_id FROM users WHERE id = ?`), user.ID).Scan(&currentOrg); err != nil {
			return notFound(err, "User")
		}
		if currentOrg == inv.OrgID {
			return perch.Errorf(perch.ECONFLICT, "You are already a member of this organisation.")
		}
		var others int
		if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(*) FROM users WHERE org_id = ? AND id <> ?`), currentOrg, user.ID).Scan(&others); err != nil {
			return err
		}
		if others > 0 {
			if err := s.keepsAnOwner(ctx, tx, currentOrg, user.ID); err != nil {
				return perch.Errorf(perch.ECONFLICT, "You are the only owner of your current organisation: make someone else an owner before you leave it.")
			}
		}
		if err := s.markAccepted(ctx, tx, inv.ID, s.now()); err != nil {
			return err
		}
		if mailed {
			if err := s.proveMailbox(ctx, tx, user.ID, inv.Email); err != nil {
				return err
			}
		}
		orgID = inv.OrgID
		return s.moveUser(ctx, tx, user.ID, currentOrg, inv.OrgID, inv.Role)
	})
	if err != nil {
		return nil, err
	}
	return s.Org(ctx, orgID)
}

// CreateInvitedUser registers an account straight into the organisation of a
// live invitation addressed to email. Its mailbox is proven when the link
// was the mailed one, which only the address received; the link the
// inviter was shown proves nothing.
func (s *Store) CreateInvitedUser(ctx context.Context, name, email, passwordHash, tokenHash string) (*perch.User, error) {
	now := s.now()
	name, email = strings.TrimSpace(name), strings.TrimSpace(email)
	u := &perch.User{ID: newID(), Email: email, Name: name, CreatedAt: now, UpdatedAt: now}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		inv, mailed, err := s.liveInvitation(ctx, tx, tokenHash, email)
		if err != nil {
			return err
		}
		if err := s.markAccepted(ctx, tx, inv.ID, now); err != nil {
			return err
		}
		u.OrgID, u.OrgRole, u.EmailVerified = inv.OrgID, inv.Role, mailed
		_, err = tx.ExecContext(ctx, s.q(`INSERT INTO users
			(id, org_id, org_role, joined_at, email, email_norm, name, password_hash, email_verified, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			u.ID, u.OrgID, u.OrgRole, ms(now), email, perch.NormalizeEmail(email), name, passwordHash, mailed, ms(now), ms(now))
		if isUniqueViolation(err) {
			return perch.Errorf(perch.ECONFLICT, "An account with this e-mail address already exists: sign in and accept the invitation.")
		}
		if err != nil {
			return err
		}
		return s.seatsChanged(ctx, tx, u.OrgID)
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}
