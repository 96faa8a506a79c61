package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/store"
)

// authStore is what sign-in needs from storage: passwords and sessions, the
// device flow, and OAuth sign-in with its linked identities.
type authStore interface {
	AccessPrincipal(ctx context.Context, accessHash string) (*perch.Principal, error)
	ApproveDeviceSession(ctx context.Context, id, userID, codeHash string, userCodeConfirmed bool) (*perch.DeviceSession, error)
	CreateDeviceSession(ctx context.Context, req perch.DeviceRequest) (*perch.DeviceSession, error)
	CreateIdentityUser(ctx context.Context, name, email string, id perch.Identity) (*perch.User, error)
	CreateInvitedUser(ctx context.Context, name, email, passwordHash, tokenHash string) (*perch.User, error)
	CreateOAuthFlow(ctx context.Context, stateHash string, f perch.OAuthFlow) error
	CreateSession(ctx context.Context, userID string, t store.SessionTokens) (string, error)
	CreateUser(ctx context.Context, name, email, passwordHash string) (*perch.User, error)
	DenyDeviceSession(ctx context.Context, id, userID string) (*perch.DeviceSession, error)
	DeviceSession(ctx context.Context, id string) (*perch.DeviceSession, error)
	ExchangeDeviceSession(ctx context.Context, id string, polled bool) error
	Identities(ctx context.Context, userID string) ([]perch.Identity, error)
	IdentityUser(ctx context.Context, provider, subject string) (*perch.User, error)
	LinkIdentity(ctx context.Context, userID string, id perch.Identity) (*perch.Identity, error)
	RevokeSessionByRefresh(ctx context.Context, refreshHash string) (userID, sessionID string, err error)
	RotateRefresh(ctx context.Context, oldHash string, t store.SessionTokens) (userID, sessionID string, err error)
	TakeOAuthFlow(ctx context.Context, stateHash string) (*perch.OAuthFlow, error)
	User(ctx context.Context, id string) (*perch.User, error)
	UserCredentials(ctx context.Context, email string) (*perch.User, string, error)
}

var _ authStore = (*store.Store)(nil)

// authResponse is the body of register, login and refresh.
type authResponse struct {
	User         *perch.User `json:"user,omitempty"`
	AccessToken  string      `json:"access_token"`
	RefreshToken string      `json:"refresh_token"`
	TokenType    string      `json:"token_type"`
	ExpiresIn    int         `json:"expires_in"` // seconds the access token lives
}

var errBadCredentials = perch.Errorf(perch.EUNAUTHORIZED, "The e-mail address or password is incorrect.")

// newTokens mints a fresh access and refresh token pair.
func (s *Server) newTokens() (access, refresh string, t store.SessionTokens) {
	now := s.now()
	access, t.AccessHash = auth.NewToken(perch.AccessTokenPrefix)
	refresh, t.RefreshHash = auth.NewToken(perch.RefreshTokenPrefix)
	t.AccessExpires, t.RefreshExpires = now.Add(perch.AccessTokenTTL), now.Add(perch.RefreshTokenTTL)
	return access, refresh, t
}

// signIn starts a new session for u and describes it.
func (s *Server) signIn(ctx context.Context, u *perch.User) (*authResponse, error) {
	access, refresh, t := s.newTokens()
	if _, err := s.authDB.CreateSession(ctx, u.ID, t); err != nil {
		return nil, err
	}
	u.IsAdmin = s.isAdmin(u)
	return &authResponse{User: u, AccessToken: access, RefreshToken: refresh, TokenType: "Bearer", ExpiresIn: int(perch.AccessTokenTTL.Seconds())}, nil
}

// register creates an account. With invitation_token it joins the inviting
// organisation (the mailbox is proven when the token is the mailed link's,
// not the one the inviter was shown); otherwise it creates the user's own
// organisation and mails a link to verify the address.
func (s *Server) register(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Name            string `json:"name"`
		Email           string `json:"email"`
		Password        string `json:"password"`
		InvitationToken string `json:"invitation_token"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	nu := perch.NewUser{Name: in.Name, Email: in.Email, Password: in.Password}
	if err := nu.Validate(); err != nil {
		return err
	}
	hash := auth.HashPassword(in.Password, s.opts.PasswordParams)
	var u *perch.User
	var err error
	if in.InvitationToken != "" {
		u, err = s.authDB.CreateInvitedUser(r.Context(), in.Name, in.Email, hash, auth.HashToken(in.InvitationToken))
	} else {
		u, err = s.authDB.CreateUser(r.Context(), in.Name, in.Email, hash)
	}
	if err == nil && !u.EmailVerified { // the invitation's mailed link proves it; anything else asks
		err = s.mailEmailToken(r.Context(), u, perch.EmailVerify, u.Email)
	}
	if err != nil {
		return err
	}
	changes := map[string]any{"name": u.Name, "org_role": u.OrgRole}
	if in.InvitationToken != "" {
		changes["invited"] = true
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditRegistered, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID, Changes: changes})
	s.syncListedAdmin(r, u.ID) // a mailed invitation link proves the mailbox
	// An invitation into an organisation that signs in with SAML alone makes
	// the account, but its sign-in is through SAML.
	if err := s.ssoRefusal(r.Context(), u, "password"); err != nil {
		return err
	}
	res, err := s.signIn(r.Context(), u)
	if err != nil {
		return err
	}
	return respond(w, http.StatusCreated, res)
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	// Sign-in refuses control characters, which no address or password may
	// hold (and which PostgreSQL cannot even compare), but not the other
	// rules of new addresses and passwords, which older accounts may predate.
	p := perch.Problems{}
	if strings.TrimSpace(in.Email) == "" {
		p.Add("email", "is required")
	}
	perch.CheckText(p, "email", strings.TrimSpace(in.Email), perch.SingleLine)
	if in.Password == "" {
		p.Add("password", "is required")
	} else if bad := perch.PasswordProblem(in.Password); bad != "" {
		p.Add("password", bad)
	}
	if err := p.Err(); err != nil {
		return err
	}
	u, hash, err := s.authDB.UserCredentials(r.Context(), in.Email)
	switch perch.ErrorCode(err) {
	case "":
		if hash == "" { // an account made by single sign-on has no password: as long to refuse as a wrong one
			auth.CheckMissing(in.Password)
		}
		if !auth.CheckPassword(hash, in.Password) {
			s.audit(r, perch.AuditEntry{Action: perch.AuditSignInFailed, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
				Changes: map[string]any{"reason": "wrong password"}})
			return errBadCredentials
		}
		if err := s.ssoRefusal(r.Context(), u, "a password"); err != nil {
			if perch.ErrorCode(err) == perch.EFORBIDDEN {
				s.audit(r, perch.AuditEntry{Action: perch.AuditSignInFailed, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
					Changes: map[string]any{"reason": "single sign-on enforced", "method": "password"}})
			}
			return err
		}
	case perch.ENOTFOUND:
		// Same work and the same answer as a wrong password: a login reveals
		// nothing about which addresses have accounts.
		auth.CheckMissing(in.Password)
		s.audit(r, perch.AuditEntry{Action: perch.AuditSignInFailed,
			Actor:   perch.AuditActor{Type: perch.ActorUser, Email: clip(strings.TrimSpace(in.Email), perch.MaxEmailLen)},
			Changes: map[string]any{"reason": "no such account"}})
		return errBadCredentials
	default:
		return err
	}
	res, err := s.signIn(r.Context(), u)
	if perch.ErrorCode(err) == perch.EFORBIDDEN { // the account is disabled
		s.audit(r, perch.AuditEntry{Action: perch.AuditSignInFailed, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
			Changes: map[string]any{"reason": "account disabled"}})
	}
	if err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditSignedIn, Actor: actorOf(u), Target: userTarget(u.ID), OrgID: u.OrgID,
		Changes: map[string]any{"method": "password"}})
	return respond(w, http.StatusOK, res)
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.RefreshToken == "" {
		return perch.Problems{"refresh_token": "is required"}.Err()
	}
	access, refresh, t := s.newTokens()
	if userID, sessionID, err := s.authDB.RotateRefresh(r.Context(), auth.HashToken(in.RefreshToken), t); err != nil {
		// On reuse the store names the sign-in it revoked.
		if userID != "" {
			s.revoked(r.Context(), userID, []string{sessionID}, nil)
			s.auditUser(r, userID, perch.AuditRefreshReused, map[string]any{"session_id": sessionID})
		}
		return err
	}
	return respond(w, http.StatusOK, &authResponse{AccessToken: access, RefreshToken: refresh, TokenType: "Bearer", ExpiresIn: int(perch.AccessTokenTTL.Seconds())})
}

// logout ends the sign-in of the refresh token. It answers 204 whether or
// not the token was live, so signing out twice is harmless.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.RefreshToken == "" {
		return perch.Problems{"refresh_token": "is required"}.Err()
	}
	userID, sessionID, err := s.authDB.RevokeSessionByRefresh(r.Context(), auth.HashToken(in.RefreshToken))
	if err != nil {
		return err
	}
	s.revoked(r.Context(), userID, []string{sessionID}, nil)
	if userID != "" {
		s.auditUser(r, userID, perch.AuditSignedOut, map[string]any{"session_id": sessionID})
	}
	return noContent(w)
}
