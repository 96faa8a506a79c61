package server

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// adminStore is what the platform admins' handlers need from storage: users,
// organisations, feature flags, metrics, the audit log, the catalog, the
// stored e-mail settings, the newsletter, and the setup links that make the
// first platform admin.
type adminStore interface {
	AdminOrg(ctx context.Context, id string) (*perch.AdminOrgDetail, error)
	AdminNeeded(ctx context.Context, listed []string) (bool, error)
	AdminUser(ctx context.Context, id string) (*perch.AdminUser, error)
	Announcement(ctx context.Context, id string) (*perch.Announcement, error)
	Announcements(ctx context.Context) ([]*perch.Announcement, error)
	AuditLog(ctx context.Context, f perch.AuditFilter) ([]*perch.AuditEntry, string, error)
	CountNewsletterSubscribers(ctx context.Context, through time.Time) (int, error)
	CreateAnnouncement(ctx context.Context, title, body string) (*perch.Announcement, error)
	CreateSetupCode(ctx context.Context, hash string, ttl time.Duration, listed []string) (expires time.Time, made bool, err error)
	DeleteAnnouncement(ctx context.Context, id string) error
	EachAudit(ctx context.Context, f perch.AuditFilter, fn func(*perch.AuditEntry) error) error
	EachNewsletterSubscriber(ctx context.Context, through time.Time, fn func(*perch.Subscriber) error) error
	FeatureFlag(ctx context.Context, key string) (*perch.FeatureFlag, error)
	FeatureFlags(ctx context.Context) ([]*perch.FeatureFlag, error)
	MetricSeries(ctx context.Context, q perch.MetricQuery) ([]perch.MetricPoint, error)
	MetricsSummary(ctx context.Context) (*perch.MetricsSummary, error)
	NewsletterSubscribers(ctx context.Context, page perch.Page) ([]*perch.Subscriber, string, error)
	Orgs(ctx context.Context, q string, page perch.Page) ([]*perch.AdminOrg, string, error)
	Plans(ctx context.Context) ([]*perch.Plan, error)
	PlansWithSubscribers(ctx context.Context) ([]*perch.AdminPlan, error)
	PutEmailSettings(ctx context.Context, e store.EmailSettings, keepPassword bool) (*store.EmailSettings, error)
	RedeemSetupCode(ctx context.Context, hash, userID string, listed []string) (*perch.User, error)
	SetNewsletter(ctx context.Context, userID string, on bool) (changed bool, err error)
	UpdateAnnouncement(ctx context.Context, id string, upd perch.AnnouncementUpdate) (*perch.Announcement, error)
	UpdateFeatureFlag(ctx context.Context, key string, u perch.FeatureUpdate) (before, after *perch.FeatureFlag, err error)
	UpdateOrgAsAdmin(ctx context.Context, id string, upd perch.AdminOrgUpdate) (before, after *perch.AdminOrgDetail, err error)
	UpdateUserAsAdmin(ctx context.Context, id string, upd perch.AdminUserUpdate, listed []string) (*store.AdminUserChange, error)
	User(ctx context.Context, id string) (*perch.User, error)
	Users(ctx context.Context, q string, page perch.Page) ([]*perch.AdminUser, string, error)
}

var _ adminStore = (*store.Store)(nil)

// maxSearch is the longest ?q= the admin lists take.
const maxSearch = 200

// searchOf reads ?q=, the text an admin list is searched for: single-line
// text of at most maxSearch characters, else a bad request.
func searchOf(r *http.Request) (string, error) {
	q := r.URL.Query().Get("q")
	problem := perch.TextProblem(q, perch.SingleLine)
	if problem == "" && utf8.RuneCountInString(q) > maxSearch {
		problem = "must be at most 200 characters"
	}
	if problem != "" {
		return "", &perch.Error{Code: perch.EBADREQUEST, Message: "The search (q) " + problem + ".", Fields: map[string]string{"q": problem}}
	}
	return q, nil
}

// searchPageOf reads an admin list's ?q=, ?cursor= and ?limit=.
func searchPageOf(r *http.Request) (string, perch.Page, error) {
	page, err := pageOf(r)
	if err != nil {
		return "", page, err
	}
	q, err := searchOf(r)
	return q, page, err
}

// listedAdmins are the addresses of PERCH_ADMIN_EMAILS, normalized.
func (s *Server) listedAdmins() []string { return slices.Sorted(maps.Keys(s.admins)) }

// adminView completes u for an admin: platform_admin counts
// PERCH_ADMIN_EMAILS as well as the grant, as isAdmin does.
func (s *Server) adminView(u *perch.AdminUser) *perch.AdminUser {
	u.PlatformAdmin = s.isAdmin(&perch.User{Email: u.Email, EmailVerified: u.EmailVerified, IsAdmin: u.Granted})
	return u
}

// adminListUsers serves GET /api/v1/admin/users: every user, newest first,
// searched by ?q= and paged.
func (s *Server) adminListUsers(w http.ResponseWriter, r *http.Request) error {
	q, page, err := searchPageOf(r)
	if err != nil {
		return err
	}
	users, next, err := s.adminDB.Users(r.Context(), q, page)
	if err != nil {
		return err
	}
	for _, u := range users {
		s.adminView(u)
	}
	return respondPage(w, users, next)
}

// adminUpdateUser serves PATCH /api/v1/admin/users/{id}: disable or enable
// an account, or grant or withdraw the platform-admin role. Disabling ends
// every sign-in, API token and WebSocket of the user at once, on every
// instance.
func (s *Server) adminUpdateUser(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Disabled      *bool `json:"disabled"`
		PlatformAdmin *bool `json:"platform_admin"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	ctx, id := r.Context(), r.PathValue("id")
	if in.Disabled != nil && *in.Disabled && id == principal(r).User.ID {
		return perch.Errorf(perch.ECONFLICT, "You cannot disable your own account; another platform admin can.")
	}
	if in.PlatformAdmin != nil && !*in.PlatformAdmin {
		target, err := s.adminDB.AdminUser(ctx, id)
		if err != nil {
			return err
		}
		if s.admins[perch.NormalizeEmail(target.Email)] {
			return perch.Errorf(perch.ECONFLICT, "%s is listed in PERCH_ADMIN_EMAILS, which makes it a platform admin whatever is granted here; take it out of that setting to remove the role.", target.Email)
		}
	}
	c, err := s.adminDB.UpdateUserAsAdmin(ctx, id, perch.AdminUserUpdate{Disabled: in.Disabled, PlatformAdmin: in.PlatformAdmin}, s.listedAdmins())
	if err != nil {
		return err
	}
	before, after := c.Before, c.After
	switch {
	case after.Disabled:
		s.userDisabled(ctx, id, c.Sessions, c.APITokens)
	case before.Disabled:
		s.tokensChanged(ctx) // the webhook tokens they made work again
	}
	changes := map[string]any{}
	if before.Disabled != after.Disabled {
		changes["disabled"] = after.Disabled
	}
	if before.Granted != after.Granted {
		changes["platform_admin"] = after.Granted
	}
	if len(changes) > 0 {
		s.audit(r, perch.AuditEntry{Action: perch.AuditAdminUserUpdated, Target: perch.AuditTarget{Type: "user", ID: id},
			OrgID: after.OrgID, Changes: changes})
	}
	if before.Granted != after.Granted { // every grant, by any path, has an entry of its own
		action := perch.AuditAdminRevoked
		if after.Granted {
			action = perch.AuditAdminGranted
		}
		s.audit(r, perch.AuditEntry{Action: action, Target: userTarget(id), OrgID: after.OrgID,
			Changes: map[string]any{"via": "admin", "email": after.Email}})
	}
	return respond(w, http.StatusOK, s.adminView(after))
}

// userDisabled carries out, on every instance, what disabling userID ends
// beyond the store's transaction (which ended the sign-ins and answered
// them with the API tokens now refused): the WebSockets those opened
// close, and every instance looks webhook tokens up afresh, so that those
// the user made stop at once. It is the one way a disable takes effect,
// whoever disabled: a platform admin, or the organisation's identity
// provider deactivating or deleting the member.
func (s *Server) userDisabled(ctx context.Context, userID string, sessions, apiTokens []string) {
	s.revoked(ctx, userID, sessions, apiTokens)
	s.tokensChanged(ctx)
}
