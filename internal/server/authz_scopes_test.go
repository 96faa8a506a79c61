package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// publicRoute marks a route in routeScopes that takes no user's credential
// (operations, sign-in, receivers, SCIM, descriptions): no API token
// scope applies to it.
const publicRoute perch.TokenScope = ""

// routeScopes is the scope an API token needs on each route routes.go
// serves, written out here route by route as the contract reads
// (docs/DESIGN.md, API tokens): reading is read, every change is manage,
// administration is manage even to read it. The matrix checks the server
// against it, and TestEveryRouteHasAScope that no route is left out.
var routeScopes = map[string]perch.TokenScope{
	"GET /healthz":                                                publicRoute,
	"GET /readyz":                                                 publicRoute,
	"GET /metrics":                                                publicRoute,
	"POST /api/v1/auth/register":                                  publicRoute,
	"POST /api/v1/auth/login":                                     publicRoute,
	"POST /api/v1/auth/forgot-password":                           publicRoute,
	"POST /api/v1/auth/reset-password":                            publicRoute,
	"POST /api/v1/auth/reset-password/check":                      publicRoute,
	"POST /api/v1/auth/verify-email":                              publicRoute,
	"POST /api/v1/auth/invitation/check":                          publicRoute,
	"POST /api/v1/auth/refresh":                                   publicRoute,
	"POST /api/v1/auth/logout":                                    publicRoute,
	"GET /api/v1/auth/device/authorize":                           publicRoute,
	"GET /api/v1/auth/device/requests/{session_id}":               perch.ScopeRead,
	"POST /api/v1/auth/device/complete":                           perch.ScopeManage,
	"POST /api/v1/auth/device/exchange":                           publicRoute,
	"GET /api/v1/auth/device/status/{session_id}":                 publicRoute,
	"GET /api/v1/users/me":                                        perch.ScopeRead,
	"PATCH /api/v1/users/me":                                      perch.ScopeManage,
	"GET /api/v1/users/me/features":                               perch.ScopeRead,
	"GET /api/v1/users/me/preferences":                            perch.ScopeRead,
	"PUT /api/v1/users/me/preferences":                            perch.ScopeManage,
	"GET /api/v1/setup":                                           perch.ScopeRead,
	"POST /api/v1/setup/admin":                                    perch.ScopeManage,
	"GET /api/v1/tokens":                                          perch.ScopeRead,
	"POST /api/v1/tokens":                                         perch.ScopeManage,
	"PATCH /api/v1/tokens/{id}":                                   perch.ScopeManage,
	"DELETE /api/v1/tokens/{id}":                                  perch.ScopeManage,
	"GET /api/v1/org":                                             perch.ScopeRead,
	"PATCH /api/v1/org":                                           perch.ScopeManage,
	"GET /api/v1/org/members":                                     perch.ScopeRead,
	"PATCH /api/v1/org/members/{userId}":                          perch.ScopeManage,
	"DELETE /api/v1/org/members/{userId}":                         perch.ScopeManage,
	"GET /api/v1/org/teams":                                       perch.ScopeRead,
	"POST /api/v1/org/teams":                                      perch.ScopeManage,
	"GET /api/v1/org/teams/{id}":                                  perch.ScopeRead,
	"PATCH /api/v1/org/teams/{id}":                                perch.ScopeManage,
	"DELETE /api/v1/org/teams/{id}":                               perch.ScopeManage,
	"PUT /api/v1/org/teams/{id}/members/{userId}":                 perch.ScopeManage,
	"DELETE /api/v1/org/teams/{id}/members/{userId}":              perch.ScopeManage,
	"GET /api/v1/org/invitations":                                 perch.ScopeRead,
	"POST /api/v1/org/invitations":                                perch.ScopeManage,
	"DELETE /api/v1/org/invitations/{id}":                         perch.ScopeManage,
	"POST /api/v1/org/invitations/accept":                         perch.ScopeManage,
	"GET /api/v1/org/workflows":                                   perch.ScopeRead,
	"POST /api/v1/org/workflows":                                  perch.ScopeManage,
	"GET /api/v1/org/workflows/{id}":                              perch.ScopeRead,
	"PATCH /api/v1/org/workflows/{id}":                            perch.ScopeManage,
	"DELETE /api/v1/org/workflows/{id}":                           perch.ScopeManage,
	"GET /api/v1/org/workflows/{id}/runs":                         perch.ScopeRead,
	"POST /api/v1/org/workflows/{id}/test":                        perch.ScopeRead, // "try it" changes nothing
	"POST /api/v1/org/workflows/{id}/fork":                        perch.ScopeManage,
	"POST /api/v1/org/workflows/{id}/install":                     perch.ScopeManage,
	"POST /api/v1/org/workflows/{id}/publish":                     perch.ScopeManage,
	"GET /api/v1/org/workflows/failed-deliveries":                 perch.ScopeRead, // owners and admins, ViewDeliveries
	"POST /api/v1/org/workflows/failed-deliveries/{job_id}/retry": perch.ScopeManage,
	"GET /api/v1/marketplace/workflows":                           perch.ScopeRead,
	"GET /api/v1/webhook-tokens":                                  perch.ScopeRead,
	"POST /api/v1/webhook-tokens":                                 perch.ScopeManage,
	"DELETE /api/v1/webhook-tokens/{id}":                          perch.ScopeManage,
	"POST /webhooks/inbound":                                      publicRoute,
	"POST /webhooks/incidents":                                    publicRoute,
	"POST /webhooks/pagerduty":                                    publicRoute,
	"POST /webhooks/code-host":                                    publicRoute,
	"POST /webhooks/github":                                       publicRoute,
	"POST /webhooks/monitoring":                                   publicRoute,
	"POST /webhooks/datadog":                                      publicRoute,
	"GET /api/v1/notifications":                                   perch.ScopeRead,
	"POST /api/v1/notifications/read":                             perch.ScopeRead, // read state is part of reading
	"GET /ws":                                                     perch.ScopeRead,
	"POST /api/v1/notifications/{id}/actions/{action_id}":         perch.ScopeSend, // send, as is cancelling what one scheduled
	"GET /api/v1/org/integrations/pagerduty":                      perch.ScopeRead,
	"PUT /api/v1/org/integrations/pagerduty":                      perch.ScopeManage,
	"DELETE /api/v1/org/integrations/pagerduty":                   perch.ScopeManage,
	"GET /api/v1/org/integrations/actions":                        perch.ScopeManage, // a secret: manage even to read
	"GET /api/v1/notifications/scheduled":                         perch.ScopeRead,
	"DELETE /api/v1/notifications/scheduled/{id}":                 perch.ScopeSend,
	"GET /api/v1/billing/plans":                                   publicRoute,
	"POST /api/v1/billing/checkout":                               perch.ScopeManage,
	"POST /api/v1/billing/portal":                                 perch.ScopeManage,
	"POST /webhooks/payments-a":                                   publicRoute,
	"POST /webhooks/stripe":                                       publicRoute,
	"POST /webhooks/payments-b":                                   publicRoute,
	"POST /webhooks/paddle":                                       publicRoute,
	"GET /api/v1/regions":                                         publicRoute,
	"GET /api/v1/announcements":                                   perch.ScopeRead,
	"POST /api/v1/admin/announcements":                            perch.ScopeManage,
	"PATCH /api/v1/admin/announcements/{id}":                      perch.ScopeManage,
	"DELETE /api/v1/admin/announcements/{id}":                     perch.ScopeManage,
	"GET /api/v1/auth/oauth-a":                                    publicRoute,
	"GET /api/v1/auth/github":                                     publicRoute,
	"GET /api/v1/auth/oauth-a/callback":                           publicRoute,
	"GET /api/v1/auth/github/callback":                            publicRoute,
	"GET /api/v1/auth/oauth-b":                                    publicRoute,
	"GET /api/v1/auth/google":                                     publicRoute,
	"GET /api/v1/auth/oauth-b/callback":                           publicRoute,
	"GET /api/v1/auth/google/callback":                            publicRoute,
	"GET /api/v1/users/me/identities":                             perch.ScopeRead,
	"DELETE /api/v1/users/me/identities/{provider}":               perch.ScopeManage,
	"GET /api/v1/auth/saml/metadata":                              publicRoute,
	"GET /api/v1/auth/saml/login":                                 publicRoute,
	"POST /api/v1/auth/saml/acs":                                  publicRoute,
	"POST /api/v1/auth/saml/discover":                             publicRoute,
	"GET /api/v1/admin/orgs/{id}/saml":                            perch.ScopeManage,
	"PUT /api/v1/admin/orgs/{id}/saml":                            perch.ScopeManage,
	"DELETE /api/v1/admin/orgs/{id}/saml":                         perch.ScopeManage,
	"POST /api/v1/admin/orgs/{id}/saml/test":                      perch.ScopeManage,
	"POST /api/v1/admin/orgs/{id}/saml/scim-token":                perch.ScopeManage,
	"GET /api/v1/org/saml":                                        perch.ScopeRead,
	"PUT /api/v1/org/saml":                                        perch.ScopeManage,
	"DELETE /api/v1/org/saml":                                     perch.ScopeManage,
	"POST /api/v1/org/saml/test":                                  perch.ScopeManage,
	"POST /api/v1/org/saml/scim-token":                            perch.ScopeManage,
	"POST /api/v1/org/saml/domains/verify":                        perch.ScopeManage,
	"GET /api/v1/admin/audit-log":                                 perch.ScopeManage,
	"GET /api/v1/admin/audit-log-v2":                              perch.ScopeManage,
	"GET /api/v1/org/audit-log":                                   perch.ScopeRead,
	"GET /api/v1/admin/features":                                  perch.ScopeManage,
	"PATCH /api/v1/admin/features/{key}":                          perch.ScopeManage,
	"GET /api/v1/admin/metrics/summary":                           perch.ScopeManage,
	"GET /api/v1/admin/metrics":                                   perch.ScopeManage,
	"GET /api/v1/admin/users":                                     perch.ScopeManage,
	"PATCH /api/v1/admin/users/{id}":                              perch.ScopeManage,
	"GET /api/v1/admin/orgs":                                      perch.ScopeManage,
	"GET /api/v1/admin/orgs/{id}":                                 perch.ScopeManage,
	"PATCH /api/v1/admin/orgs/{id}":                               perch.ScopeManage,
	"GET /api/v1/admin/plans":                                     perch.ScopeManage,
	"GET /api/v1/admin/email-config":                              perch.ScopeManage,
	"PUT /api/v1/admin/email-config":                              perch.ScopeManage,
	"POST /api/v1/admin/email-config/test":                        perch.ScopeManage,
	"GET /api/v1/admin/newsletter":                                perch.ScopeManage,
	"POST /api/v1/admin/newsletter":                               perch.ScopeManage,
	"POST /api/v1/newsletter/unsubscribe":                         publicRoute,
	"GET /api/v1/newsletter/unsubscribe":                          publicRoute,
	"POST /api/v1/unread-mail/unsubscribe":                        publicRoute,
	"GET /scim/v2/Users":                                          publicRoute,
	"POST /scim/v2/Users":                                         publicRoute,
	"GET /scim/v2/Users/{id}":                                     publicRoute,
	"PUT /scim/v2/Users/{id}":                                     publicRoute,
	"PATCH /scim/v2/Users/{id}":                                   publicRoute,
	"DELETE /scim/v2/Users/{id}":                                  publicRoute,
	"GET /scim/v2/Groups":                                         publicRoute,
	"POST /scim/v2/Groups":                                        publicRoute,
	"GET /scim/v2/Groups/{id}":                                    publicRoute,
	"PUT /scim/v2/Groups/{id}":                                    publicRoute,
	"PATCH /scim/v2/Groups/{id}":                                  publicRoute,
	"DELETE /scim/v2/Groups/{id}":                                 publicRoute,
	"GET /scim/v2/ServiceProviderConfig":                          publicRoute,
	"GET /scim/v2/ResourceTypes":                                  publicRoute,
	"GET /scim/v2/ResourceTypes/{id}":                             publicRoute,
	"GET /scim/v2/Schemas":                                        publicRoute,
	"GET /scim/v2/Schemas/{id}":                                   publicRoute,
	"GET /api/v1/openapi.json":                                    publicRoute,
	"GET /docs/api":                                               publicRoute,
	"/":                                                           publicRoute,
}

// mintRoutes make credentials, which an API token may not, whatever its
// scopes (signedInToMint): 403 to every token.
var mintRoutes = []string{"POST /api/v1/tokens", "POST /api/v1/webhook-tokens", "POST /api/v1/auth/device/complete"}

// routeMux resolves a request to the pattern routes.go serves it under.
func routeMux(tb testing.TB) *http.ServeMux {
	mux := http.NewServeMux()
	for _, p := range registeredRoutes(tb) {
		mux.Handle(p, http.NotFoundHandler())
	}
	return mux
}

// patternOf is the route case c is served by.
func patternOf(mux *http.ServeMux, w *world, c authzCase) string {
	_, pattern := mux.Handler(httptest.NewRequest(c.method, w.fill(c.path), nil))
	return pattern
}

// TestEveryRouteHasAScope: every route routes.go serves is in routeScopes
// (a new route cannot go unnoticed by the scopes), routeScopes names no
// route that is gone, and every route but the catch-all is walked by the
// authorization matrix.
func TestEveryRouteHasAScope(t *testing.T) {
	t.Parallel()
	routes := registeredRoutes(t)
	for _, r := range routes {
		if _, ok := routeScopes[r]; !ok {
			t.Errorf("%s has no entry in routeScopes: say which API token scope it needs (or publicRoute)", r)
		}
	}
	for r := range routeScopes {
		if !slices.Contains(routes, r) {
			t.Errorf("routeScopes names %s, which routes.go does not serve", r)
		}
	}
	// Any id resolves a path to its pattern.
	id := &account{ID: "x", OrgID: "x"}
	w := &world{owner: id, target: id, member: id, team: "x", invitation: "x", invitationToken: "x", ownerToken: "x",
		announcement: "x", workflow: "x", deviceSession: "x", webhookToken: "x", failedJob: "x", notification: "1", scheduled: "x"}
	mux := routeMux(t)
	walked := map[string]bool{}
	for _, c := range authzCases {
		walked[patternOf(mux, w, c)] = true
	}
	for _, r := range routes {
		if !walked[r] && r != "/" {
			t.Errorf("%s is in no case of the authorization matrix (authzCases)", r)
		}
	}
}

// The kinds of API token the scope matrix signs in with.
var tokenKinds = []struct {
	name    string
	scopes  []perch.TokenScope // nil: unscoped
	expired bool
}{
	{"unscoped", nil, false},
	{"read", []perch.TokenScope{perch.ScopeRead}, false},
	{"send", []perch.TokenScope{perch.ScopeRead, perch.ScopeSend}, false},
	{"manage", perch.TokenScopes, false},
	{"expired", nil, true},
}

// scopeRole is the role whose API tokens walk case c: the first of these
// the route lets through, so that a scope's refusal is seen where the role
// would have been allowed; the owner where none is.
func scopeRole(c authzCase) (role string, want int) {
	for _, role := range []string{"owner", "platform admin", "admin", "member", "outsider"} {
		if i := slices.Index(authzRoles, role); c.want[i] < 400 {
			return role, c.want[i]
		}
	}
	return "owner", c.want[slices.Index(authzRoles, "owner")]
}

// tokenWant is what a token of kind k gets on case c, which needs scope
// need and answers the token's role want.
func tokenWant(pattern string, need perch.TokenScope, scopes []perch.TokenScope, expired bool, want int) int {
	switch {
	case expired:
		return http.StatusUnauthorized
	case slices.Contains(mintRoutes, pattern):
		return http.StatusForbidden
	case scopes == nil || slices.Contains(scopes, need):
		return want
	}
	return http.StatusForbidden
}

// token is an API token of role's account in w of kind k, made once per
// world straight in the store (the API would refuse an expiry already
// past).
func (w *world) token(a *api, role string, kind int) string {
	a.t.Helper()
	key := fmt.Sprintf("%s/%d", role, kind)
	if raw, ok := w.tokens[key]; ok {
		return raw
	}
	k := tokenKinds[kind]
	lim := perch.APITokenLimits{Scopes: k.scopes}
	if k.expired {
		now := a.clock.Now()
		lim.ExpiresAt = &now
	}
	raw, hash := auth.NewToken(perch.APITokenPrefix)
	if _, err := a.store.CreateLimitedAPIToken(a.t.Context(), w.as(role).ID, "matrix "+k.name, auth.DisplayPrefix(raw), hash, lim); err != nil {
		a.t.Fatal(err)
	}
	if w.tokens == nil {
		w.tokens = map[string]string{}
	}
	w.tokens[key] = raw
	return raw
}

// TestTokenScopeMatrix walks every route that takes a user's credential
// with API tokens of every kind (unscoped, each scope, expired), as the
// role the route lets through: a token whose scopes hold what routeScopes
// says the route needs gets what that role gets, one without it 403, an
// expired one 401, and the routes that make credentials refuse every
// token. Dealt into parts as TestAuthorizationMatrix is, each part on a
// server and database of its own; cases that may change their world get
// a fresh one.
func TestTokenScopeMatrix(t *testing.T) {
	t.Parallel()
	mux := routeMux(t)
	for part := range authzParts {
		t.Run(fmt.Sprintf("part%d", part+1), func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t *testing.T, s *store.Store) {
				a, _ := newOAuthAPI(t, s)
				n, worlds := 0, 1
				shared := newWorld(a, 0)
				for ci, c := range authzCases {
					if ci%authzParts != part {
						continue
					}
					pattern := patternOf(mux, shared, c)
					need, ok := routeScopes[pattern]
					if !ok {
						t.Errorf("%s %s: route %q has no scope (TestEveryRouteHasAScope)", c.method, c.path, pattern)
						continue
					}
					if need == publicRoute {
						continue
					}
					role, roleWant := scopeRole(c)
					for kind, k := range tokenKinds {
						n++
						want := tokenWant(pattern, need, k.scopes, k.expired, roleWant)
						w := shared
						if c.changes(want) {
							worlds++
							w = newWorld(a, 1000+n)
						}
						res := a.call(c.method, w.fill(c.path), w.token(a, role, kind), fillBody(c, w))
						if res.Status != want {
							t.Errorf("%s %s with the %s's %s token: status %d, want %d: %s", c.method, c.path, role, k.name, res.Status, want, res.Raw)
						}
						// Where the role is let through, the refusal is the scope's, and says which it needs.
						refused := k.scopes != nil && !slices.Contains(k.scopes, need) && !slices.Contains(mintRoutes, pattern)
						if refused && roleWant < 400 && res.Status == want {
							if msg := res.ErrorMessage(); !strings.HasSuffix(msg, "it needs "+string(need)+".") {
								t.Errorf("%s %s with the %s's %s token: %q does not name the scope needed (%s)", c.method, c.path, role, k.name, msg, need)
							}
						}
					}
				}
				t.Logf("%d (route, token) cases in %d worlds", n, worlds)
			})
		})
	}
}
