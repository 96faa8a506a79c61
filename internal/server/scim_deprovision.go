package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// Deprovisioning through SCIM (docs/DESIGN.md, SCIM): `active: false` and
// DELETE disable the account the way a platform admin does, in its
// organisation; DELETE also hides it from the identity provider, until a
// POST of the same userName, externalId or address restores it.

// scimActiveChanged carries out what a SCIM write that left the member
// disabled, or enabled them again, means beyond the store: a disable ends
// their WebSockets and webhook tokens on every instance (userDisabled, as
// for a platform admin's), an enable lets the webhook tokens work again.
func (s *Server) scimActiveChanged(ctx context.Context, ch *store.SCIMChange) {
	switch {
	case ch.After == nil || ch.After.Disabled:
		s.userDisabled(ctx, ch.Before.ID, ch.Sessions, ch.APITokens)
	case ch.Before.Disabled:
		s.tokensChanged(ctx)
	}
}

// scimDeleteUser serves DELETE /Users/{id}: the member is deprovisioned.
// Their account is disabled and stays in the organisation (every sign-in,
// API token, webhook token they made and WebSocket of theirs ends at once,
// on every instance), and SCIM no longer finds it (RFC 7644 §3.6: 404 from
// now on); no organisation is made for them.
func (s *Server) scimDeleteUser(w http.ResponseWriter, r *http.Request, c *scimCall) error {
	var refused *store.SCIMUser
	ch, err := s.scimDB.DeleteSCIMUser(r.Context(), c.orgID, r.PathValue("id"), func(su *store.SCIMUser) error {
		if err := s.idpMayManage(scimAccount(su)); err != nil {
			refused = su
			return err
		}
		return ifMatch(r, su)
	})
	if err != nil {
		if refused != nil {
			s.scimRefused(r, c, refused.ID, refused.Email, err)
		}
		return err
	}
	s.scimActiveChanged(r.Context(), ch)
	changes := map[string]any{"email": ch.Before.Email, "userName": ch.Before.UserName}
	if !ch.Before.Disabled {
		changes["active"] = false
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSCIMUserDeleted, Actor: c.actor, OrgID: c.orgID, Target: userTarget(ch.Before.ID),
		Changes: changes})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// scimRestore answers a POST that names a member the identity provider
// deleted (by externalId, userName or address) with that member restored:
// the same account and id, in the organisation, with its role, its
// attributes those sent, enabled when sent active (an account a platform
// admin disabled stays so: 409). A platform admin, or a new address
// outside the verified domains, is refused as for a replace. It answers
// false, having written nothing, when no deleted member matches.
func (s *Server) scimRestore(w http.ResponseWriter, r *http.Request, c *scimCall, write store.SCIMWrite) (bool, error) {
	var refused *store.SCIMUser
	ch, err := s.scimDB.RestoreSCIMUser(r.Context(), c.orgID, write, func(su *store.SCIMUser) (store.SCIMWrite, error) {
		if err := s.idpMayManage(scimAccount(su)); err != nil {
			refused = su
			return store.SCIMWrite{}, err
		}
		if perch.NormalizeEmail(write.Email) != perch.NormalizeEmail(su.Email) {
			if err := s.idpMayCreate(r.Context(), c.orgID, write.Email); err != nil {
				refused = su
				return store.SCIMWrite{}, err
			}
		}
		return write, nil
	})
	if errors.Is(err, store.ErrNoDeletedSCIMUser) {
		return false, nil
	}
	if err != nil {
		if refused != nil {
			s.scimRefused(r, c, refused.ID, refused.Email, err)
		}
		return true, err
	}
	before, after := ch.Before, ch.After
	s.scimActiveChanged(r.Context(), ch)
	if perch.NormalizeEmail(before.Email) != perch.NormalizeEmail(after.Email) {
		s.syncListedAdmin(r, after.ID) // a new address is asserted, not proven
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSCIMUserRestored, Actor: c.actor, OrgID: c.orgID, Target: userTarget(after.ID),
		Changes: map[string]any{"email": after.Email, "userName": after.UserName, "externalId": after.ExternalID, "active": !after.Disabled}})
	return true, s.answerUser(w, http.StatusCreated, after)
}
