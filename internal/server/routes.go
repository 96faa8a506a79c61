package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// routes lists the whole HTTP surface of Perch.
func (s *Server) routes() {
	m := s.mux
	// Operations, at the root.
	m.Handle("GET /healthz", s.handle(s.healthz))
	m.Handle("GET /readyz", s.handle(s.readyz))
	m.Handle("GET /metrics", promhttp.HandlerFor(s.opts.Metrics, promhttp.HandlerOpts{}))

	// Sign-in, limited per client IP.
	m.Handle("POST /api/v1/auth/register", s.perIP(s.handle(s.register)))
	m.Handle("POST /api/v1/auth/login", s.perIP(s.handle(s.login)))
	m.Handle("POST /api/v1/auth/refresh", s.handle(s.refresh))
	m.Handle("POST /api/v1/auth/logout", s.handle(s.logout))

	// The signed-in user.
	m.Handle("GET /api/v1/users/me", s.signedIn(s.me))
	m.Handle("PATCH /api/v1/users/me", s.signedIn(s.updateMe))
	m.Handle("GET /api/v1/users/me/features", s.signedIn(s.features))

	// API tokens.
	m.Handle("GET /api/v1/tokens", s.signedIn(s.listAPITokens))
	m.Handle("POST /api/v1/tokens", s.signedIn(s.createAPIToken))
	m.Handle("PATCH /api/v1/tokens/{id}", s.signedIn(s.updateAPIToken))
	m.Handle("DELETE /api/v1/tokens/{id}", s.signedIn(s.deleteAPIToken))

	// Plans and announcements.
	m.Handle("GET /api/v1/billing/plans", s.handle(s.listPlans))
	m.Handle("GET /api/v1/announcements", s.signedIn(s.listAnnouncements))
	m.Handle("POST /api/v1/admin/announcements", s.platformAdmin(s.createAnnouncement))
	m.Handle("PATCH /api/v1/admin/announcements/{id}", s.platformAdmin(s.updateAnnouncement))
	m.Handle("DELETE /api/v1/admin/announcements/{id}", s.platformAdmin(s.deleteAnnouncement))

	// Anything else: 404, or 405 when the path exists for another method.
	m.Handle("/", s.handle(s.unmatched))
}

// signedIn serves h to a signed-in user, within their rate limit.
func (s *Server) signedIn(h handlerFunc) http.Handler {
	return s.authenticate(s.perUser(s.handle(h)))
}

// platformAdmin serves h to platform admins only.
func (s *Server) platformAdmin(h handlerFunc) http.Handler {
	return s.signedIn(func(w http.ResponseWriter, r *http.Request) error {
		if !s.isAdmin(principal(r).User) {
			return errAdminOnly
		}
		return h(w, r)
	})
}
