package perch

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// TokenScope is one of what an API token may be limited to. The scopes are
// levels, each adding to the one below it: read reads what the user may
// read (their notifications and read state, the live feed, their account,
// organisation and workflows), send adds sending notifications and running
// actions, manage adds changing the organisation, its tokens and settings,
// and the platform's when the user is a platform admin. A token without
// scopes may do everything its user may. Which scope each action needs is
// policy.go's table (docs/DESIGN.md, API tokens).
type TokenScope string

// The scopes, lowest first.
const (
	ScopeRead   TokenScope = "read"
	ScopeSend   TokenScope = "send"
	ScopeManage TokenScope = "manage"
)

// TokenScopes are the scopes in order, lowest first.
var TokenScopes = []TokenScope{ScopeRead, ScopeSend, ScopeManage}

// level is s's place in TokenScopes, or -1 for an unknown scope.
func (s TokenScope) level() int { return slices.Index(TokenScopes, s) }

// APITokenLimits are what a new API token is limited by: when it ends (nil:
// never) and its scopes (nil: everything its user may do).
type APITokenLimits struct {
	ExpiresAt *time.Time
	Scopes    []TokenScope
}

// ValidateTokenLimits checks what POST /tokens was given for expires_at
// (RFC 3339, after now; nil: no expiry) and scopes (each known, none
// twice, at least one; nil: unscoped). It returns every problem at once as
// an EVALIDATION error. A scope brings the ones below it, so the limits
// returned hold the full list in order (["send"] is read and send), which
// is what the token's answer shows.
func ValidateTokenLimits(expiresAt *string, scopes []TokenScope, now time.Time) (APITokenLimits, error) {
	var lim APITokenLimits
	p := Problems{}
	if expiresAt != nil {
		t, err := time.Parse(time.RFC3339, *expiresAt)
		switch {
		case err != nil:
			p.Add("expires_at", "must be a time in RFC 3339 form, like 2027-01-01T00:00:00Z")
		case !t.After(now):
			p.Add("expires_at", "must be in the future")
		default:
			t = t.UTC().Truncate(time.Millisecond)
			lim.ExpiresAt = &t
		}
	}
	if scopes != nil {
		top, seen := -1, map[TokenScope]bool{}
		for _, s := range scopes {
			switch {
			case s.level() < 0:
				p.Add("scopes", fmt.Sprintf("%q is not a scope: use read, send or manage", string(s)))
			case seen[s]:
				p.Add("scopes", fmt.Sprintf("%q is listed twice", string(s)))
			}
			seen[s] = true
			top = max(top, s.level())
		}
		if len(scopes) == 0 {
			p.Add("scopes", "must name at least one of read, send and manage; leave it out for everything the account may do")
		}
		if top >= 0 {
			lim.Scopes = slices.Clone(TokenScopes[:top+1])
		}
	}
	if err := p.Err(); err != nil {
		return APITokenLimits{}, err
	}
	return lim, nil
}

// ParseTokenScopes reads scopes as the store keeps them (comma-separated,
// in order; "" for an unscoped token, which is nil).
func ParseTokenScopes(s string) []TokenScope {
	if s == "" {
		return nil
	}
	var out []TokenScope
	for part := range strings.SplitSeq(s, ",") {
		out = append(out, TokenScope(part))
	}
	return out
}

// FormatTokenScopes is the stored form of scopes (see ParseTokenScopes).
func FormatTokenScopes(scopes []TokenScope) string {
	parts := make([]string, len(scopes))
	for i, s := range scopes {
		parts[i] = string(s)
	}
	return strings.Join(parts, ",")
}

// DescribeTokenScopes says in words what a token of scopes may do:
// "read and send", or "everything your account may do" when unscoped.
func DescribeTokenScopes(scopes []TokenScope) string {
	if scopes == nil {
		return "everything your account may do"
	}
	parts := make([]string, len(scopes))
	for i, s := range scopes {
		parts[i] = string(s)
	}
	switch len(parts) {
	case 0:
		return "nothing"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}
