package perch

import (
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Sign-in providers (docs/DESIGN.md, Single sign-on): oauth-a is GitHub,
// oauth-b is Google, through OpenID Connect. The name is the one in paths,
// the identities list and the audit log.
const (
	ProviderGitHub = "github"
	ProviderGoogle = "google"
)

// ProviderTitle is how pages and messages name a provider.
func ProviderTitle(provider string) string {
	switch provider {
	case ProviderGitHub:
		return "GitHub"
	case ProviderGoogle:
		return "Google"
	}
	return provider
}

// Identity links an account to an account at a sign-in provider: the
// provider's stable id for it (Subject: GitHub's numeric user id, Google's
// "sub") and the address the provider gave when it was linked.
type Identity struct {
	UserID    string    `json:"-"`
	Provider  string    `json:"provider"`
	Subject   string    `json:"-"`
	Email     string    `json:"email"`
	CreatedAt time.Time `json:"created_at"`
}

// OAuthFlow is one sign-in with a provider under way, kept on the server
// between the redirect to the provider and its return: the PKCE verifier
// and OpenID nonce it was started with, where the browser goes afterwards,
// the desktop sign-in it continues, and, when a signed-in user started it to
// link the provider, that user. It is found by its state, used once, and
// lives OAuthFlowTTL.
type OAuthFlow struct {
	Provider      string
	Verifier      string
	Nonce         string
	Redirect      string // a local path
	DeviceSession string // "" unless it continues a desktop sign-in
	LinkUserID    string // "" unless it links the provider to this user
	ExpiresAt     time.Time
}

// OAuthFlowTTL is how long a sign-in with a provider may take, from the
// redirect to the provider until it sends the browser back.
const OAuthFlowTTL = 10 * time.Minute

// Cookies the API sets for the dashboard. The session cookies are the
// dashboard's (internal/web/session.go), set by the API as well when a
// sign-in with a provider or through SAML ends; the flow cookie binds a sign-in with a
// provider to the browser that started it, under the paths of the
// callbacks only.
const (
	RefreshCookie = "perch_refresh"
	RefreshPath   = "/session"
	OAuthCookie   = "perch_oauth"
	OAuthPath     = "/api/v1/auth/"
)

// DefaultPage is where a browser goes after signing in when it asked for
// no page, or for one that is not a path of this site.
const DefaultPage = "/notifications"

// LocalPath reports whether target, which came with a request, is a path of
// this site however a browser reads it. Browsers parse Location by the
// WHATWG URL rules, which drop tabs and newlines anywhere, trim leading
// spaces and controls, and read "\" as "/": "/\t/evil.test" and
// "/\evil.test" are both "//evil.test", another host. So a target must start
// with one "/" followed by anything but "/" or "\", and hold no control
// character or "\" anywhere; what is left is a path (with a query and a
// fragment) that no parser reads a scheme or a host in.
func LocalPath(target string) bool {
	if len(target) == 0 || target[0] != '/' {
		return false
	}
	if len(target) > 1 && (target[1] == '/' || target[1] == '\\') {
		return false
	}
	if !utf8.ValidString(target) {
		return false
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(target)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && u.Opaque == ""
}

// SafeRedirect is target when it is a path of this site (and not overly
// long), else DefaultPage.
func SafeRedirect(target string) string {
	if len(target) <= 2000 && LocalPath(target) {
		return target
	}
	return DefaultPage
}

// SignInName is the display name for an account made from a provider's
// profile: its name, else its login, else the part of the address before
// the "@"; cleaned to single-line text and cut to MaxNameLen characters.
func SignInName(name, login, email string) string {
	for _, n := range []string{name, login, strings.SplitN(email, "@", 2)[0]} {
		n = strings.TrimSpace(CleanText(n, SingleLine))
		if n == "" {
			continue
		}
		if utf8.RuneCountInString(n) > MaxNameLen {
			n = strings.TrimSpace(string([]rune(n)[:MaxNameLen]))
		}
		return n
	}
	return "Perch user"
}
