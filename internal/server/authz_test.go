package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// The roles of the authorization matrix, in the order of authzCase.want.
var authzRoles = []string{"anonymous", "outsider", "member", "admin", "owner", "platform admin"}

// world is an organisation with one of everything, plus an outsider (the
// owner of another organisation) and a platform admin of a third.
type world struct {
	owner, admin, member, target, outsider, root *account
	team, invitation, invitationToken            string
	ownerToken, announcement, webhookToken       string            // webhookToken: the owner's, its id
	workflow                                     string            // the owner's organisation's, published
	failedJob                                    string            // a forward of the owner's organisation, given up
	scheduled                                    string            // a notification the owner's webhook token scheduled for tomorrow
	deviceSession                                string            // a pending desktop sign-in, its verifier rfcVerifier
	notification                                 string            // to the owner's organisation, with a view action a1
	smtpPort                                     int               // the test SMTP server's, for e-mail settings that keep mail flowing
	tokens                                       map[string]string // API tokens of the scope matrix, by role and kind (token)
}

func newWorld(a *api, n int) *world {
	a.t.Helper()
	w := &world{smtpPort: mailPort(a)}
	name := func(s string) string { return fmt.Sprintf("%s %d", s, n) }
	w.owner = a.register(name("Ada"))
	w.admin = a.invite(w.owner, name("Carol"), "admin")
	w.member = a.invite(w.owner, name("Bob"), "member")
	w.target = a.invite(w.owner, name("Dan"), "member")
	w.outsider = a.register(name("Eve"))
	w.root = a.register(name("Root"))
	if err := a.store.GrantAdmin(a.t.Context(), w.root.Email); err != nil {
		a.t.Fatal(err)
	}
	w.team = expect(a.t, a.call("POST", "/api/v1/org/teams", w.owner.Access, map[string]string{"name": "Ops"}), 201).Data()["id"].(string)
	expect(a.t, a.call("PUT", "/api/v1/org/teams/"+w.team+"/members/"+w.member.ID, w.owner.Access, nil), 204)
	frank := emailFor(name("Frank"))
	inv := expect(a.t, a.call("POST", "/api/v1/org/invitations", w.owner.Access, map[string]string{"email": frank}), 201).Data()
	w.invitation = inv["id"].(string)
	w.invitationToken = a.mailedToken(frank, "/invitations/accept")
	w.ownerToken = a.apiToken(w.owner, "laptop")
	w.webhookToken = expect(a.t, a.call("POST", "/api/v1/webhook-tokens", w.owner.Access,
		map[string]string{"label": "CI", "sender": "inbound", "scope": "user"}), 201).Data()["token"].(map[string]any)["id"].(string)
	w.scheduled = scheduledBy(a, w.owner, w.webhookToken)
	w.workflow = a.mustCreateWorkflow(w.owner, dropErrors("Quiet"))["id"].(string)
	expect(a.t, a.call("POST", "/api/v1/org/workflows/"+w.workflow+"/publish", w.owner.Access, nil), 200)
	w.failedJob = givenUpJob(a, w.owner.OrgID, w.workflow)
	w.announcement = expect(a.t, a.call("POST", "/api/v1/admin/announcements", w.root.Access, map[string]string{"title": "Hi", "body": "All"}), 201).Data()["id"].(string)
	w.deviceSession = expect(a.t, a.call("GET", "/api/v1/auth/device/authorize?port=53682&code_challenge="+perch.S256Challenge(rfcVerifier), "", nil), 200).Data()["session_id"].(string)
	w.notification = a.storeNotification(perch.Notification{Tab: "Inbound", Title: "Deploy", Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		Scope:   perch.Scope{Type: perch.ScopeOrg, ID: w.owner.OrgID},
		Actions: []perch.NotificationAction{{ID: "a1", Type: perch.ActionView, Label: "Open", URL: "https://example.com/deploys/1"}}}).ID
	return w
}

func (w *world) as(role string) *account {
	return map[string]*account{"outsider": w.outsider, "member": w.member, "admin": w.admin, "owner": w.owner, "platform admin": w.root}[role]
}

// secrets are what must never appear in a response to the outsider.
func (w *world) secrets() []string {
	return []string{w.owner.OrgID, w.owner.ID, w.owner.Email, w.member.Email, w.team, w.invitation, w.ownerToken}
}

type authzCase struct {
	method, path string
	body         any
	want         [6]int // by authzRoles
}

var authzCases = []authzCase{
	{"GET", "/healthz", nil, [6]int{200, 200, 200, 200, 200, 200}},
	{"GET", "/readyz", nil, [6]int{200, 200, 200, 200, 200, 200}},
	{"GET", "/metrics", nil, [6]int{200, 200, 200, 200, 200, 200}},
	{"GET", "/api/v1/billing/plans", nil, [6]int{200, 200, 200, 200, 200, 200}},
	// Billing is off in the matrix's server: those allowed get 503.
	{"POST", "/api/v1/billing/checkout", map[string]string{"plan": "team"}, [6]int{401, 503, 403, 503, 503, 503}},
	{"POST", "/api/v1/billing/portal", nil, [6]int{401, 503, 403, 503, 503, 503}},
	// The payment receivers take signatures, not credentials; without
	// their secrets configured they take nothing.
	{"POST", "/webhooks/payments-a", map[string]string{"id": "evt_1"}, [6]int{503, 503, 503, 503, 503, 503}},
	{"POST", "/webhooks/stripe", map[string]string{"id": "evt_1"}, [6]int{503, 503, 503, 503, 503, 503}},
	{"POST", "/webhooks/payments-b", map[string]string{"event_id": "evt_1"}, [6]int{503, 503, 503, 503, 503, 503}},
	{"POST", "/webhooks/paddle", map[string]string{"event_id": "evt_1"}, [6]int{503, 503, 503, 503, 503, 503}},
	{"GET", "/api/v1/regions", nil, [6]int{200, 200, 200, 200, 200, 200}},
	{"GET", "/api/v1/openapi.json", nil, [6]int{200, 200, 200, 200, 200, 200}},
	{"GET", "/docs/api", nil, [6]int{200, 200, 200, 200, 200, 200}},
	{"GET", "/ws", nil, [6]int{401, 426, 426, 426, 426, 426}}, // not a handshake: refused before any upgrade
	{"POST", "/api/v1/auth/reset-password/check", map[string]string{"token": "pem_x"}, [6]int{400, 400, 400, 400, 400, 400}},
	{"POST", "/api/v1/auth/invitation/check", map[string]string{"token": "inv_x"}, [6]int{400, 400, 400, 400, 400, 400}},
	{"POST", "/api/v1/auth/forgot-password", map[string]string{"email": "who@example.com"}, [6]int{202, 202, 202, 202, 202, 202}},
	{"POST", "/api/v1/auth/refresh", map[string]string{"refresh_token": "prf_x"}, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/api/v1/auth/verify-email", map[string]string{"token": "pem_x"}, [6]int{400, 400, 400, 400, 400, 400}},
	{"GET", "/api/v1/auth/device/authorize?port=8080&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", nil, [6]int{200, 200, 200, 200, 200, 200}},
	{"GET", "/api/v1/auth/device/status/{deviceSession}?code_verifier={deviceVerifier}", nil, [6]int{200, 200, 200, 200, 200, 200}},
	{"POST", "/api/v1/auth/device/exchange", map[string]string{"session_id": "{deviceSession}", "code": "dvc_x", "code_verifier": "{deviceVerifier}"}, [6]int{409, 409, 409, 409, 409, 409}},
	{"GET", "/api/v1/auth/device/requests/{deviceSession}", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"POST", "/api/v1/auth/device/complete", map[string]string{"session_id": "{deviceSession}"}, [6]int{401, 200, 200, 200, 200, 200}},
	// Sign-in with GitHub and Google (the matrix's server has both): a
	// redirect to the provider for everyone, and back to sign-in from a
	// callback without a flow of its own.
	{"GET", "/api/v1/auth/oauth-a?redirect=/org", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"GET", "/api/v1/auth/github", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"GET", "/api/v1/auth/oauth-a/callback?code=x&state=y", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"GET", "/api/v1/auth/github/callback?error=access_denied&state=y", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"GET", "/api/v1/auth/oauth-b?device_session={deviceSession}", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"GET", "/api/v1/auth/google", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"GET", "/api/v1/auth/oauth-b/callback?code=x&state=y", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"GET", "/api/v1/auth/google/callback?code=x", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"GET", "/api/v1/users/me/identities", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"DELETE", "/api/v1/users/me/identities/github", nil, [6]int{401, 404, 404, 404, 404, 404}},
	{"GET", "/api/v1/users/me", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"PATCH", "/api/v1/users/me", map[string]string{"name": "Renamed"}, [6]int{401, 200, 200, 200, 200, 200}},
	{"GET", "/api/v1/users/me/features", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"GET", "/api/v1/users/me/preferences", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"PUT", "/api/v1/users/me/preferences", map[string]any{"muted": []map[string]string{{"tab": "Code"}}}, [6]int{401, 200, 200, 200, 200, 200}},
	// The matrix's server has a platform admin: no setup code works.
	{"GET", "/api/v1/setup", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"POST", "/api/v1/setup/admin", map[string]string{"code": "pst_x"}, [6]int{401, 403, 403, 403, 403, 403}},
	{"GET", "/api/v1/tokens", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"POST", "/api/v1/tokens", map[string]string{"label": "x"}, [6]int{401, 201, 201, 201, 201, 201}},
	{"PATCH", "/api/v1/tokens/{ownerToken}", map[string]string{"label": "x"}, [6]int{401, 404, 404, 404, 200, 404}},
	{"DELETE", "/api/v1/tokens/{ownerToken}", nil, [6]int{401, 404, 404, 404, 204, 404}},
	{"GET", "/api/v1/announcements", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"POST", "/api/v1/admin/announcements", map[string]string{"title": "T", "body": "B"}, [6]int{401, 403, 403, 403, 403, 201}},
	{"PATCH", "/api/v1/admin/announcements/{announcement}", map[string]string{"title": "T"}, [6]int{401, 403, 403, 403, 403, 200}},
	{"DELETE", "/api/v1/admin/announcements/{announcement}", nil, [6]int{401, 403, 403, 403, 403, 204}},
	{"GET", "/api/v1/admin/features", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"PATCH", "/api/v1/admin/features/digest_email", map[string]any{"rollout_percent": 10}, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/admin/metrics/summary", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/admin/metrics?metric=signups", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/admin/users?q=dan&limit=2", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"PATCH", "/api/v1/admin/users/{target}", map[string]bool{"disabled": true}, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/admin/orgs?limit=2", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/admin/orgs/{org}", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"PATCH", "/api/v1/admin/orgs/{org}", map[string]string{"status": "active"}, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/admin/plans", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/org", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"PATCH", "/api/v1/org", map[string]string{"name": "Renamed"}, [6]int{401, 200, 403, 200, 200, 200}},
	{"GET", "/api/v1/org/members", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"PATCH", "/api/v1/org/members/{target}", map[string]string{"role": "admin"}, [6]int{401, 404, 403, 200, 200, 404}},
	{"PATCH", "/api/v1/org/members/{owner}", map[string]string{"role": "member"}, [6]int{401, 404, 403, 403, 409, 404}},
	{"DELETE", "/api/v1/org/members/{target}", nil, [6]int{401, 404, 403, 204, 204, 404}},
	{"DELETE", "/api/v1/org/members/{owner}", nil, [6]int{401, 404, 403, 403, 409, 404}},
	{"GET", "/api/v1/org/teams", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"POST", "/api/v1/org/teams", map[string]string{"name": "New"}, [6]int{401, 201, 403, 201, 201, 201}},
	{"GET", "/api/v1/org/teams/{team}", nil, [6]int{401, 404, 200, 200, 200, 404}},
	{"PATCH", "/api/v1/org/teams/{team}", map[string]string{"name": "Renamed"}, [6]int{401, 404, 403, 200, 200, 404}},
	{"DELETE", "/api/v1/org/teams/{team}", nil, [6]int{401, 404, 403, 204, 204, 404}},
	{"PUT", "/api/v1/org/teams/{team}/members/{target}", nil, [6]int{401, 404, 403, 204, 204, 404}},
	{"DELETE", "/api/v1/org/teams/{team}/members/{member}", nil, [6]int{401, 404, 403, 204, 204, 404}},
	{"GET", "/api/v1/org/invitations", nil, [6]int{401, 200, 403, 200, 200, 200}},
	{"POST", "/api/v1/org/invitations", map[string]string{"email": "new.person@example.com"}, [6]int{401, 201, 403, 201, 201, 201}},
	{"POST", "/api/v1/org/invitations", map[string]string{"email": "new.owner@example.com", "role": "owner"}, [6]int{401, 201, 403, 403, 201, 201}},
	{"DELETE", "/api/v1/org/invitations/{invitation}", nil, [6]int{401, 404, 403, 204, 204, 404}},
	{"GET", "/api/v1/admin/audit-log", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/admin/audit-log-v2?from=2026-11-01T00:00:00Z&to=2026-12-01T00:00:00Z", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/org/audit-log", nil, [6]int{401, 200, 403, 200, 200, 200}},
	{"POST", "/api/v1/org/invitations/accept", map[string]string{"token": "{invitationToken}"}, [6]int{401, 403, 403, 403, 403, 403}},
	{"GET", "/api/v1/admin/email-config", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"PUT", "/api/v1/admin/email-config", func(w *world) any {
		return map[string]any{"host": "127.0.0.1", "port": w.smtpPort, "from": "perch@example.com", "tls": "none"}
	}, [6]int{401, 403, 403, 403, 403, 200}},
	{"POST", "/api/v1/admin/email-config/test", map[string]string{"to": "someone@example.com"}, [6]int{401, 403, 403, 403, 403, 200}},
	{"GET", "/api/v1/admin/newsletter", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"POST", "/api/v1/admin/newsletter", map[string]string{"subject": "S", "body": "B"}, [6]int{401, 403, 403, 403, 403, 202}},
	{"POST", "/api/v1/newsletter/unsubscribe?token=x.y", nil, [6]int{404, 404, 404, 404, 404, 404}},
	{"GET", "/api/v1/newsletter/unsubscribe?token=x.y", nil, [6]int{303, 303, 303, 303, 303, 303}},
	{"POST", "/api/v1/unread-mail/unsubscribe?token=x.y", nil, [6]int{404, 404, 404, 404, 404, 404}},
	{"GET", "/api/v1/auth/saml/metadata?org_id={org}", nil, [6]int{404, 404, 404, 404, 404, 404}},
	{"GET", "/api/v1/auth/saml/login?org_id={org}", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"POST", "/api/v1/auth/saml/acs", nil, [6]int{302, 302, 302, 302, 302, 302}},
	{"POST", "/api/v1/auth/saml/discover", map[string]string{"org": "nobody"}, [6]int{404, 404, 404, 404, 404, 404}},
	{"GET", "/api/v1/admin/orgs/{org}/saml", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"PUT", "/api/v1/admin/orgs/{org}/saml", samlSettingsBody, [6]int{401, 403, 403, 403, 403, 200}},
	{"DELETE", "/api/v1/admin/orgs/{org}/saml", nil, [6]int{401, 403, 403, 403, 403, 404}},
	{"POST", "/api/v1/admin/orgs/{org}/saml/test", nil, [6]int{401, 403, 403, 403, 403, 200}},
	{"POST", "/api/v1/admin/orgs/{org}/saml/scim-token", nil, [6]int{401, 403, 403, 403, 403, 201}},
	{"GET", "/api/v1/org/saml", nil, [6]int{401, 200, 403, 403, 200, 200}},
	{"PUT", "/api/v1/org/saml", samlSettingsBody, [6]int{401, 200, 403, 403, 200, 200}},
	{"DELETE", "/api/v1/org/saml", nil, [6]int{401, 404, 403, 403, 404, 404}},
	{"POST", "/api/v1/org/saml/test", nil, [6]int{401, 200, 403, 403, 200, 200}},
	{"POST", "/api/v1/org/saml/scim-token", nil, [6]int{401, 201, 403, 403, 201, 201}},
	// SCIM takes the organisation's SCIM token only: no user's credential,
	// whatever the role, is one (scim_test.go checks the tokens).
	{"GET", "/scim/v2/Users", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/scim/v2/Users", map[string]string{"userName": "x@example.com"}, [6]int{401, 401, 401, 401, 401, 401}},
	{"GET", "/scim/v2/Users/{member}", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"PUT", "/scim/v2/Users/{member}", map[string]string{"userName": "x@example.com"}, [6]int{401, 401, 401, 401, 401, 401}},
	{"PATCH", "/scim/v2/Users/{member}", map[string]any{"Operations": []any{map[string]any{"op": "replace", "path": "active", "value": false}}}, [6]int{401, 401, 401, 401, 401, 401}},
	{"DELETE", "/scim/v2/Users/{member}", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"GET", "/scim/v2/Groups", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/scim/v2/Groups", map[string]string{"displayName": "Ops 2"}, [6]int{401, 401, 401, 401, 401, 401}},
	{"GET", "/scim/v2/Groups/{team}", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"PUT", "/scim/v2/Groups/{team}", map[string]string{"displayName": "Ops 2"}, [6]int{401, 401, 401, 401, 401, 401}},
	{"PATCH", "/scim/v2/Groups/{team}", map[string]any{"Operations": []any{map[string]any{"op": "remove", "path": "members"}}}, [6]int{401, 401, 401, 401, 401, 401}},
	{"DELETE", "/scim/v2/Groups/{team}", nil, [6]int{401, 401, 401, 401, 401, 401}},
	// Workflows: members read and try, owners and admins write. The
	// owner's workflow is published, so others may install and fork it;
	// its own organisation forks it but cannot install it.
	{"GET", "/api/v1/org/workflows", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"POST", "/api/v1/org/workflows", dropErrors("New"), [6]int{401, 201, 403, 201, 201, 201}},
	{"GET", "/api/v1/org/workflows/{workflow}", nil, [6]int{401, 404, 200, 200, 200, 404}},
	{"PATCH", "/api/v1/org/workflows/{workflow}", map[string]string{"name": "Renamed"}, [6]int{401, 404, 403, 200, 200, 404}},
	{"DELETE", "/api/v1/org/workflows/{workflow}", nil, [6]int{401, 404, 403, 204, 204, 404}},
	{"GET", "/api/v1/org/workflows/{workflow}/runs", nil, [6]int{401, 404, 200, 200, 200, 404}},
	{"GET", "/api/v1/org/workflows/failed-deliveries", nil, [6]int{401, 200, 403, 200, 200, 200}},
	{"POST", "/api/v1/org/workflows/failed-deliveries/{failedJob}/retry", nil, [6]int{401, 404, 403, 200, 200, 404}},
	{"POST", "/api/v1/org/workflows/{workflow}/test", nil, [6]int{401, 404, 200, 200, 200, 404}},
	{"POST", "/api/v1/org/workflows/{workflow}/publish", nil, [6]int{401, 404, 403, 200, 200, 404}},
	{"POST", "/api/v1/org/workflows/{workflow}/install", nil, [6]int{401, 201, 403, 409, 409, 201}},
	{"POST", "/api/v1/org/workflows/{workflow}/fork", nil, [6]int{401, 201, 403, 201, 201, 201}},
	{"GET", "/api/v1/marketplace/workflows", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"GET", "/scim/v2/ServiceProviderConfig", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"GET", "/scim/v2/ResourceTypes", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"GET", "/scim/v2/ResourceTypes/User", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"GET", "/scim/v2/ResourceTypes/Group", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"GET", "/scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:Group", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"GET", "/scim/v2/Schemas", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"GET", "/scim/v2/Schemas/urn:ietf:params:scim:schemas:core:2.0:User", nil, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/api/v1/org/saml/domains/verify", nil, [6]int{401, 404, 403, 403, 404, 404}},
	// Sign-in refusals, the same for every caller.
	{"POST", "/api/v1/auth/register", map[string]string{"email": "new@example.com"}, [6]int{422, 422, 422, 422, 422, 422}},
	{"POST", "/api/v1/auth/login", map[string]string{"email": "nobody@example.com", "password": "not the password"}, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/api/v1/auth/reset-password", map[string]string{"token": "pem_x", "password": "a new password 2026"}, [6]int{400, 400, 400, 400, 400, 400}},
	{"POST", "/api/v1/auth/logout", map[string]string{}, [6]int{422, 422, 422, 422, 422, 422}},
	// Webhook tokens: everyone makes their own; the owner's is the owner's.
	{"GET", "/api/v1/webhook-tokens", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"POST", "/api/v1/webhook-tokens", map[string]string{"label": "CI", "sender": "inbound", "scope": "user"}, [6]int{401, 201, 201, 201, 201, 201}},
	{"DELETE", "/api/v1/webhook-tokens/{webhookToken}", nil, [6]int{401, 404, 404, 404, 204, 404}},
	// The receivers take a webhook token, never a user's credential.
	{"POST", "/webhooks/inbound?token=whk_x", map[string]string{"title": "T"}, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/webhooks/incidents?token=whk_x", map[string]string{}, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/webhooks/pagerduty?token=whk_x", map[string]string{}, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/webhooks/code-host?token=whk_x", map[string]string{}, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/webhooks/github?token=whk_x", map[string]string{}, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/webhooks/monitoring?token=whk_x", map[string]string{}, [6]int{401, 401, 401, 401, 401, 401}},
	{"POST", "/webhooks/datadog?token=whk_x", map[string]string{}, [6]int{401, 401, 401, 401, 401, 401}},
	// History and read state: each user's own.
	{"GET", "/api/v1/notifications", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"POST", "/api/v1/notifications/read", map[string]bool{"all": true}, [6]int{401, 200, 200, 200, 200, 200}},
	// Running an action: whoever sees the notification (the owner's
	// organisation); a view action has nothing to run.
	{"POST", "/api/v1/notifications/{notification}/actions/a1", nil, [6]int{401, 404, 409, 409, 409, 404}},
	// The organisation's integrations: owners and admins, each their own.
	{"GET", "/api/v1/org/integrations/pagerduty", nil, [6]int{401, 200, 403, 200, 200, 200}},
	{"PUT", "/api/v1/org/integrations/pagerduty", map[string]string{"api_key": "u+abc_123", "from_email": "ops@example.com"}, [6]int{401, 200, 403, 200, 200, 200}},
	{"DELETE", "/api/v1/org/integrations/pagerduty", nil, [6]int{401, 404, 403, 404, 404, 404}},
	{"GET", "/api/v1/org/integrations/actions", nil, [6]int{401, 200, 403, 200, 200, 200}},
	// Scheduled notifications: each user lists and cancels what their
	// own webhook tokens scheduled.
	{"GET", "/api/v1/notifications/scheduled", nil, [6]int{401, 200, 200, 200, 200, 200}},
	{"DELETE", "/api/v1/notifications/scheduled/{scheduled}", nil, [6]int{401, 404, 404, 404, 204, 404}},
}

// samlSettingsBody is SAML settings over a fixed identity provider's
// metadata.
func samlSettingsBody(*world) any {
	return map[string]any{"idp_metadata_xml": testIDPMetadata(), "enabled": true}
}

func (w *world) fill(s string) string {
	return strings.NewReplacer("{ownerToken}", w.ownerToken, "{webhookToken}", w.webhookToken, "{announcement}", w.announcement, "{target}", w.target.ID,
		"{owner}", w.owner.ID, "{org}", w.owner.OrgID, "{member}", w.member.ID, "{team}", w.team, "{invitation}", w.invitation, "{workflow}", w.workflow, "{failedJob}", w.failedJob, "{notification}", w.notification, "{scheduled}", w.scheduled,
		"{invitationToken}", w.invitationToken, "{deviceSession}", w.deviceSession, "{deviceVerifier}", rfcVerifier).Replace(s)
}

// changes reports whether the case, as a caller expected to get want,
// may change the world it runs in: a request other than GET or HEAD that
// is expected to succeed (or redirect). Such a case runs in a world of its
// own; every other case shares one world per backend. A refusal changes
// nothing unless the refusal itself is wrong, and then the case fails.
func (c authzCase) changes(want int) bool {
	return c.method != "GET" && c.method != "HEAD" && want < 400
}

// TestAuthorizationMatrix walks every route as every kind of caller and
// checks the status; and that nothing answered to the outsider names the
// other organisation. Cases that may change their world get a fresh one;
// the rest share one. The cases are dealt into authzParts parts, each run
// in parallel on a server and database of its own (per backend), in the
// order they are listed: what one case does to its server can reach only
// the cases after it in its part.
func TestAuthorizationMatrix(t *testing.T) {
	t.Parallel()
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
					for i, role := range authzRoles {
						n++
						w := shared
						if c.changes(c.want[i]) {
							worlds++
							w = newWorld(a, n)
						}
						checkAuthz(t, a, c, w, role, c.want[i])
					}
				}
				t.Logf("%d (route, role) cases in %d worlds", n, worlds)
			})
		})
	}
}

// authzParts is how many parts the matrix's cases are dealt into.
const authzParts = 4

// fillBody is case c's body for world w.
func fillBody(c authzCase, w *world) any {
	if f, ok := c.body.(func(*world) any); ok {
		return f(w)
	}
	if m, ok := c.body.(map[string]string); ok {
		filled := map[string]string{}
		for k, v := range m {
			filled[k] = w.fill(v)
		}
		return filled
	}
	return c.body
}

// checkAuthz sends case c as role in world w and checks the answer.
func checkAuthz(t *testing.T, a *api, c authzCase, w *world, role string, want int) {
	t.Helper()
	path := w.fill(c.path)
	token := ""
	if acc := w.as(role); acc != nil {
		token = acc.Access
	}
	res := a.call(c.method, path, token, fillBody(c, w))
	if res.Status != want {
		t.Errorf("%s %s as %s: status %d, want %d: %s", c.method, c.path, role, res.Status, want, res.Raw)
	}
	if role == "outsider" {
		for _, secret := range w.secrets() {
			if strings.Contains(res.Raw, secret) {
				t.Errorf("%s %s as outsider: the answer contains %q of the other organisation", c.method, c.path, secret)
			}
		}
	}
}
