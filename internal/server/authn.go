package server

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/store"
)

// kernelStore is what every group shares: authentication of each request,
// the audit log's writing and the platform admins listed by address.
type kernelStore interface {
	APITokenPrincipal(ctx context.Context, hash string) (*perch.User, *perch.APIToken, error)
	AccessPrincipal(ctx context.Context, accessHash string) (*perch.Principal, error)
	AppendAudit(ctx context.Context, e *perch.AuditEntry) error
	SyncListedAdmins(ctx context.Context, listed []string, userID string) (granted, withdrawn []*perch.User, err error)
	TouchAPIToken(ctx context.Context, id string, interval time.Duration) error
	TouchUser(ctx context.Context, userID string) error
	User(ctx context.Context, id string) (*perch.User, error)
}

var _ kernelStore = (*store.Store)(nil)

// apiTokenTouchEvery bounds how often a token's last_verified_at is written.
const apiTokenTouchEvery = time.Minute

var errNoCredential = perch.Errorf(perch.EUNAUTHORIZED, "Sign in first: send Authorization: Bearer <access token or API token>.")

// checkOrigin refuses a state-changing request from another site. A
// browser sends the session cookie whichever site made the request, so a
// request that signs in by cookie must come from this server's own pages
// (Go's CrossOriginProtection: Sec-Fetch-Site, else Origin against Host or
// the public address).
func (s *Server) checkOrigin(r *http.Request) error {
	if err := s.origins.Check(r); err != nil {
		return perch.Errorf(perch.EFORBIDDEN, "Cross-origin request refused: send it from Perch's own pages.")
	}
	return nil
}

// principal returns who the request acts for; only valid behind authenticate.
func principal(r *http.Request) *perch.Principal {
	p, _ := r.Context().Value(principalKey).(*perch.Principal)
	return p
}

// authenticate admits requests that carry a live access token or an active
// API token, and answers 401 to the rest.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		p, err := s.authenticated(w, r)
		if err != nil {
			return err
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey, p)))
		return nil
	})
}

// authenticated returns who r acts for. A request refused for its
// credential counts against the per-IP allowance of such refusals (the
// per-user limit's size), so that guessing credentials is slowed and every
// answer of a rate-limited route, its 401s included, carries the
// X-RateLimit-* headers.
func (s *Server) authenticated(w http.ResponseWriter, r *http.Request) (*perch.Principal, error) {
	p, err := s.principalFromRequest(r)
	if perch.ErrorCode(err) == perch.EUNAUTHORIZED {
		if lerr := s.allowRate(w, r, s.opts.Limits.User, "unauthenticated-ip:"+s.clientIP(r).String(), 1); lerr != nil {
			return nil, lerr
		}
	}
	return p, err
}

// principalFromRequest authenticates by the Authorization header or, for
// the dashboard's pages and scripts, by the session cookie. A browser sends
// the cookie whichever site made the request, so a state-changing request
// that relies on it must come from the dashboard's own origin.
func (s *Server) principalFromRequest(r *http.Request) (*perch.Principal, error) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, raw, ok := strings.Cut(h, " ")
		raw = strings.TrimSpace(raw)
		if !ok || !strings.EqualFold(scheme, "Bearer") || raw == "" {
			return nil, errNoCredential
		}
		return s.principalFromToken(r.Context(), raw)
	}
	c, err := r.Cookie(perch.SessionCookie)
	if err != nil || c.Value == "" {
		return nil, errNoCredential
	}
	if err := s.checkOrigin(r); err != nil {
		return nil, err
	}
	return s.principalFromToken(r.Context(), c.Value)
}

// principalFromToken resolves a raw bearer token of either kind.
func (s *Server) principalFromToken(ctx context.Context, raw string) (*perch.Principal, error) {
	hash := auth.HashToken(raw)
	p := &perch.Principal{}
	switch {
	case strings.HasPrefix(raw, perch.AccessTokenPrefix):
		var err error
		if p, err = s.kernelDB.AccessPrincipal(ctx, hash); err != nil {
			return nil, err
		}
	case strings.HasPrefix(raw, perch.APITokenPrefix):
		u, k, err := s.kernelDB.APITokenPrincipal(ctx, hash)
		if err != nil {
			return nil, err
		}
		p.User, p.APITokenID, p.Scopes = u, k.ID, k.Scopes
		if k.ExpiresAt != nil {
			p.ExpiresAt = *k.ExpiresAt
		}
		if k.LastVerifiedAt == nil || s.now().Sub(*k.LastVerifiedAt) >= apiTokenTouchEvery {
			if err := s.kernelDB.TouchAPIToken(ctx, k.ID, apiTokenTouchEvery); err != nil {
				return nil, err
			}
		}
	default:
		return nil, perch.Errorf(perch.EUNAUTHORIZED, "The bearer token is not a Perch access or API token.")
	}
	if seen := p.User.LastSeenAt; seen == nil || s.now().Sub(*seen) >= store.SeenEvery {
		if err := s.kernelDB.TouchUser(ctx, p.User.ID); err != nil {
			return nil, err
		}
	}
	p.User.IsAdmin = s.isAdmin(p.User)
	return p, nil
}

// signedInToMint refuses a request made with an API token: a credential
// must not make credentials that outlive it (an API token's deletion would
// leave what it made behind), so API and webhook tokens and desktop
// sign-ins are made by people signed in, never by a token.
func signedInToMint(r *http.Request, what string) error {
	if principal(r).APITokenID != "" {
		return perch.Errorf(perch.EFORBIDDEN, "An API token cannot create %s: what a token made would outlive the token's deletion. "+
			"Sign in instead (the dashboard, or POST /api/v1/auth/login) and create it with that session's access token.", what)
	}
	return nil
}

// perUser applies the per-user limit of authenticated endpoints.
func (s *Server) perUser(next http.Handler) http.Handler {
	return s.rateLimited(next, s.opts.Limits.User, func(r *http.Request) string { return userKey(principal(r).User.ID) })
}

// userKey is the key of a user's rate limit.
func userKey(id string) string { return "user:" + id }

// perIP serves h within limit l per client IP, counted in bucket: each
// bucket is an allowance of its own, so that, say, a person who mistypes
// their password is not also kept from resetting it, and a desktop sign-in
// spends none of the address's sign-in attempts.
func (s *Server) perIP(bucket string, l perch.Limit, h handlerFunc) http.Handler {
	return s.ipLimited(bucket, l, s.handle(h))
}

// ipLimited is perIP for a handler already wrapped (one that authenticates).
func (s *Server) ipLimited(bucket string, l perch.Limit, next http.Handler) http.Handler {
	return s.rateLimited(next, l, func(r *http.Request) string { return bucket + "-ip:" + s.clientIP(r).String() })
}

// rateLimited counts each request against key(r) and answers 429 past the
// limit. Every limited response carries the X-RateLimit-* headers.
func (s *Server) rateLimited(next http.Handler, l perch.Limit, key func(*http.Request) string) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := s.allowRate(w, r, l, key(r), 1); err != nil {
			return err
		}
		next.ServeHTTP(w, r)
		return nil
	})
}

// allowRate counts n units (requests, or an anonymous delivery's
// notifications) against key, sets the X-RateLimit-* headers and returns a
// rate_limited error past the limit.
func (s *Server) allowRate(w http.ResponseWriter, r *http.Request, l perch.Limit, key string, n int) error {
	res, err := s.limiter.Allow(r.Context(), key, l, n)
	if err != nil {
		// A broken limiter must not take the API down with it.
		s.log.Warn("rate limiter unavailable; request allowed", "err", err, "request_id", requestID(r))
		return nil
	}
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(res.Limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(res.Remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(s.now().Add(res.ResetAfter).Unix()+1, 10))
	if !res.Allowed {
		retry := max(1, int(math.Ceil(res.RetryAfter.Seconds())))
		h.Set("Retry-After", strconv.Itoa(retry))
		return perch.Errorf(perch.ERATELIMITED, "Too many requests; try again in %s.", time.Duration(retry)*time.Second)
	}
	return nil
}

// clientIP is the address of the party that sent the request: the peer, or,
// when the peer is a trusted proxy, the nearest untrusted address in
// X-Forwarded-For (read right to left, since only the right end is written by
// proxies we trust).
func (s *Server) clientIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.IPv4Unspecified()
	}
	peer = peer.Unmap()
	if !s.trusted(peer) {
		return peer
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		a = a.Unmap()
		if !s.trusted(a) {
			return a
		}
		peer = a
	}
	return peer
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.opts.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
