package server

import (
	"net/http"

	"github.com/perch-dev/perch"
)

// listIdentities lists the providers linked to the caller's account.
func (s *Server) listIdentities(w http.ResponseWriter, r *http.Request) error {
	ids, err := s.accountDB.Identities(r.Context(), principal(r).User.ID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, ids)
}

// deleteIdentity unlinks a provider from the caller's account, unless it
// is the last way they have to sign in.
func (s *Server) deleteIdentity(w http.ResponseWriter, r *http.Request) error {
	provider := r.PathValue("provider")
	if _, known := providerSettings[provider]; !known {
		return perch.Errorf(perch.ENOTFOUND, "There is no sign-in provider %q: it is github or google.", clip(provider, 64))
	}
	gone, err := s.accountDB.RemoveIdentity(r.Context(), principal(r).User.ID, provider)
	if perch.ErrorCode(err) == perch.ENOTFOUND {
		return perch.Errorf(perch.ENOTFOUND, "Your account is not linked to %s.", perch.ProviderTitle(provider))
	}
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditIdentityRemoved, Target: userTarget(gone.UserID),
		Changes: map[string]any{"provider": gone.Provider, "email": gone.Email}})
	return noContent(w)
}
