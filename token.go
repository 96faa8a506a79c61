package perch

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Prefixes of the raw credentials Perch hands out. A raw value is shown once
// and only its hash is stored.
const (
	APITokenPrefix     = "pat_"
	WebhookTokenPrefix = "whk_"
	AccessTokenPrefix  = "pac_"
	RefreshTokenPrefix = "prf_"
	SCIMTokenPrefix    = "scim_" // an organisation's SCIM token
	SetupCodePrefix    = "pst_"  // a one-time setup link's code, while a server has no platform admin
)

// SessionCookie is the cookie that carries a dashboard session's access
// token; the API and the WebSocket accept it where no Authorization header
// is sent.
const SessionCookie = "perch_session"

// MaxTokenLabelLen is the longest API or webhook token label.
const MaxTokenLabelLen = 100

// APIToken is a long-lived personal credential, usable as a bearer token
// wherever an access token is, within its scopes and until it expires.
type APIToken struct {
	ID             string     `json:"id"`
	UserID         string     `json:"-"`
	Label          string     `json:"label"`
	TokenPrefix    string     `json:"token_prefix"`
	IsActive       bool       `json:"is_active"`
	LastVerifiedAt *time.Time `json:"last_verified_at"`
	CreatedAt      time.Time  `json:"created_at"`
	// ExpiresAt is when the token stops working; nil: never.
	ExpiresAt *time.Time `json:"expires_at"`
	// Scopes limit what the token may do of what its user may, in order,
	// each with the ones below it; nil: everything its user may.
	Scopes []TokenScope `json:"scopes"`
}

// Expired reports whether k has expired at now.
func (k *APIToken) Expired(now time.Time) bool {
	return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)
}

// APITokenUpdate changes a token; nil fields stay as they are.
type APITokenUpdate struct {
	Label    *string
	IsActive *bool
}

// ValidateTokenLabel returns the trimmed label, or a bad_request error: the
// spec answers a missing or over-long label with 400, not 422, and so a
// label that is not single-line text (see TextProblem) is 400 too.
func ValidateTokenLabel(label string) (string, error) {
	label = strings.TrimSpace(label)
	switch {
	case label == "":
		return "", &Error{Code: EBADREQUEST, Message: "A label is required.", Fields: map[string]string{"label": "is required"}}
	case utf8.RuneCountInString(label) > MaxTokenLabelLen:
		return "", &Error{Code: EBADREQUEST, Message: "The label is too long.", Fields: map[string]string{"label": "must be at most 100 characters"}}
	}
	if problem := TextProblem(label, SingleLine); problem != "" {
		return "", &Error{Code: EBADREQUEST, Message: "The label holds characters it may not.", Fields: map[string]string{"label": problem}}
	}
	return label, nil
}

// Principal is who a request acts for, and through which credential.
type Principal struct {
	User       *User
	SessionID  string    // set when signed in with an access token or a dashboard session
	APITokenID string    // set when signed in with an API token
	ExpiresAt  time.Time // when the access or API token ends; zero for an API token without expiry
	// Scopes limit an API token (see TokenScope); nil for access tokens
	// and unscoped API tokens.
	Scopes []TokenScope
}

// Session is one sign-in: the pair of tokens a login, registration or
// device approval hands out, renewed by refresh.
type Session struct {
	UserID       string    `json:"user_id"`
	SessionID    string    `json:"-"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token"`
	ExpiresAt    time.Time `json:"-"` // of the access token
}

// Token lifetimes (docs/DESIGN.md, Sessions and passwords).
const (
	AccessTokenTTL  = 15 * time.Minute
	RefreshTokenTTL = 30 * 24 * time.Hour
	SetupCodeTTL    = 24 * time.Hour // a setup link's (docs/DESIGN.md, Who is verified, who is admin)
)
