package server

import (
	"net/http"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
)

func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	return respond(w, http.StatusOK, principal(r).User)
}

// updateMe changes the caller's name or password. A new password needs the
// current one, and signs out every other session of the user.
func (s *Server) updateMe(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name            *string `json:"name"`
		Password        *string `json:"password"`
		CurrentPassword string  `json:"current_password"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	p := principal(r)
	u := p.User
	problems := perch.Problems{}
	if in.Name != nil {
		perch.ValidateName(problems, *in.Name)
	}
	if in.Password != nil {
		perch.ValidatePassword(problems, "password", *in.Password, u.Email)
		if in.CurrentPassword == "" {
			problems.Add("current_password", "is required to change the password")
		} else if hash, err := s.store.PasswordHash(r.Context(), u.ID); err != nil {
			return err
		} else if !auth.CheckPassword(hash, in.CurrentPassword) {
			problems.Add("current_password", "is incorrect")
		}
	}
	if err := problems.Err(); err != nil {
		return err
	}
	if in.Password != nil {
		if err := s.store.SetPassword(r.Context(), u.ID, auth.HashPassword(*in.Password, s.opts.PasswordParams), p.SessionID); err != nil {
			return err
		}
	}
	if in.Name != nil {
		updated, err := s.store.SetUserName(r.Context(), u.ID, *in.Name)
		if err != nil {
			return err
		}
		updated.IsAdmin = s.isAdmin(updated)
		u = updated
	}
	return respond(w, http.StatusOK, u)
}

func (s *Server) features(w http.ResponseWriter, r *http.Request) error {
	flags, err := s.store.Features(r.Context(), principal(r).User.ID)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, flags)
}
