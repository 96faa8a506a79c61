package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/store"
)

// accountStore is what the handlers of one's own account need from storage:
// profile, password, e-mail proofs and linked identities.
type accountStore interface {
	CreateEmailToken(ctx context.Context, userID, kind, email, hash string, expires time.Time) error
	EmailInUse(ctx context.Context, email string) (bool, error)
	EmailTokenOwner(ctx context.Context, hash, kind string) (*perch.User, error)
	Features(ctx context.Context, userID, orgID string) (map[string]bool, error)
	Identities(ctx context.Context, userID string) ([]perch.Identity, error)
	PasswordHash(ctx context.Context, userID string) (string, error)
	RemoveIdentity(ctx context.Context, userID, provider string) (*perch.Identity, error)
	ResetPassword(ctx context.Context, hash, passwordHash string) (*perch.User, []string, error)
	SetNewsletter(ctx context.Context, userID string, on bool) (changed bool, err error)
	SetPassword(ctx context.Context, userID, hash, keepSession string) ([]string, error)
	SetUserName(ctx context.Context, userID, name string) (*perch.User, error)
	UserCredentials(ctx context.Context, email string) (*perch.User, string, error)
	VerifyEmail(ctx context.Context, hash string) (*perch.User, error)
}

var _ accountStore = (*store.Store)(nil)

func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	return respond(w, http.StatusOK, principal(r).User)
}

// meResponse is the user, plus the address waiting for verification after
// a change of e-mail.
type meResponse struct {
	*perch.User
	PendingEmail string `json:"pending_email,omitempty"`
}

// updateMe changes the caller's name, password, e-mail address or whether
// they take the newsletter. A new password or address needs the current
// password. A new password signs out every other session; a new address
// takes effect once the link mailed to it is followed.
func (s *Server) updateMe(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name            *string `json:"name"`
		Email           *string `json:"email"`
		Password        *string `json:"password"`
		CurrentPassword string  `json:"current_password"`
		Newsletter      *bool   `json:"newsletter"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	p := principal(r)
	u := p.User
	if in.Email != nil && perch.NormalizeEmail(*in.Email) == perch.NormalizeEmail(u.Email) {
		in.Email = nil // no change
	}
	problems := perch.Problems{}
	if in.Name != nil {
		perch.ValidateName(problems, *in.Name)
	}
	if in.Email != nil {
		perch.ValidateEmail(problems, strings.TrimSpace(*in.Email))
	}
	if in.Password != nil {
		perch.ValidatePassword(problems, "password", *in.Password, u.Email)
	}
	if in.Password != nil || in.Email != nil {
		if in.CurrentPassword == "" {
			problems.Add("current_password", "is required to change the password or e-mail address")
		} else if hash, err := s.accountDB.PasswordHash(r.Context(), u.ID); err != nil {
			return err
		} else if !auth.CheckPassword(hash, in.CurrentPassword) {
			problems.Add("current_password", "is incorrect")
		}
	}
	if err := problems.Err(); err != nil {
		return err
	}
	res := meResponse{User: u}
	if in.Email != nil {
		email := strings.TrimSpace(*in.Email)
		if taken, err := s.accountDB.EmailInUse(r.Context(), email); err != nil {
			return err
		} else if taken {
			return perch.Errorf(perch.ECONFLICT, "An account with this e-mail address already exists.")
		}
		if err := s.mailEmailToken(r.Context(), u, perch.EmailChange, email); err != nil {
			return err
		}
		res.PendingEmail = email
		s.audit(r, perch.AuditEntry{Action: perch.AuditEmailChangeAsked, Target: userTarget(u.ID), Changes: map[string]any{"to": email}})
	}
	if in.Password != nil {
		revoked, err := s.accountDB.SetPassword(r.Context(), u.ID, auth.HashPassword(*in.Password, s.opts.PasswordParams), p.SessionID)
		if err != nil {
			return err
		}
		s.revoked(r.Context(), u.ID, revoked, nil)
		s.audit(r, perch.AuditEntry{Action: perch.AuditPasswordChanged, Target: userTarget(u.ID), Changes: map[string]any{"sessions_ended": len(revoked)}})
	}
	if in.Newsletter != nil {
		changed, err := s.accountDB.SetNewsletter(r.Context(), u.ID, *in.Newsletter)
		if err != nil {
			return err
		}
		if changed {
			s.audit(r, perch.AuditEntry{Action: perch.AuditUserUpdated, Target: perch.AuditTarget{Type: "user", ID: u.ID},
				Changes: map[string]any{"newsletter": *in.Newsletter}})
		}
		updated := *res.User
		updated.Newsletter = *in.Newsletter
		res.User = &updated
	}
	if in.Name != nil {
		updated, err := s.accountDB.SetUserName(r.Context(), u.ID, *in.Name)
		if err != nil {
			return err
		}
		updated.IsAdmin = s.isAdmin(updated)
		res.User = updated
		if updated.Name != u.Name {
			s.audit(r, perch.AuditEntry{Action: perch.AuditUserUpdated, Target: userTarget(u.ID), Changes: map[string]any{"name": map[string]any{"from": u.Name, "to": updated.Name}}})
		}
	}
	return respond(w, http.StatusOK, res)
}

func (s *Server) features(w http.ResponseWriter, r *http.Request) error {
	u := principal(r).User
	flags, err := s.accountDB.Features(r.Context(), u.ID, u.OrgID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, flags)
}
