package server

import (
	"net/http"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/senders"
)

// routes lists the whole HTTP surface of Perch.
func (s *Server) routes() {
	m := s.mux
	// Operations, at the root.
	m.Handle("GET /healthz", s.handle(s.healthz))
	m.Handle("GET /readyz", s.handle(s.readyz))
	if !s.opts.Metrics.Separate {
		m.Handle("GET /metrics", s.handle(s.serveMetrics))
	}

	// Sign-in, limited per client IP, each kind in a bucket of its own (see
	// perIP): the spec's 10 per 15 minutes is login's and register's.
	auth, user := s.opts.Limits.Auth, s.opts.Limits.User
	m.Handle("POST /api/v1/auth/register", s.perIP("signin", auth, s.register))
	m.Handle("POST /api/v1/auth/login", s.perIP("signin", auth, s.login))
	m.Handle("POST /api/v1/auth/forgot-password", s.perIP("account-mail", auth, s.forgotPassword))
	m.Handle("POST /api/v1/auth/reset-password", s.perIP("account-mail", auth, s.resetPassword))
	m.Handle("POST /api/v1/auth/reset-password/check", s.perIP("account-mail", auth, s.checkResetLink))
	m.Handle("POST /api/v1/auth/verify-email", s.perIP("account-mail", auth, s.verifyEmail))
	m.Handle("POST /api/v1/auth/invitation/check", s.perIP("invitation", auth, s.checkInvitation))
	m.Handle("POST /api/v1/auth/refresh", s.perIP("session", user, s.refresh))
	m.Handle("POST /api/v1/auth/logout", s.perIP("session", user, s.logout))

	// Desktop sign-in (device/PKCE flow). The app polls the status every few
	// seconds: that has the per-user allowance.
	m.Handle("GET /api/v1/auth/device/authorize", s.perIP("device", auth, s.deviceAuthorize))
	m.Handle("GET /api/v1/auth/device/requests/{session_id}", s.allowed(perch.ViewAccount, s.deviceRequestInfo))
	m.Handle("POST /api/v1/auth/device/complete", s.allowed(perch.ManageAccount, s.deviceComplete))
	m.Handle("POST /api/v1/auth/device/exchange", s.perIP("device", auth, s.deviceExchange))
	m.Handle("GET /api/v1/auth/device/status/{session_id}", s.perIP("device-poll", user, s.deviceStatus))

	// The signed-in user.
	m.Handle("GET /api/v1/users/me", s.allowed(perch.ViewAccount, s.me))
	m.Handle("PATCH /api/v1/users/me", s.allowed(perch.ManageAccount, s.updateMe))
	m.Handle("GET /api/v1/users/me/features", s.allowed(perch.ViewAccount, s.features))
	m.Handle("GET /api/v1/users/me/preferences", s.allowed(perch.ViewAccount, s.preferences))
	m.Handle("PUT /api/v1/users/me/preferences", s.allowed(perch.ManageAccount, s.updatePreferences))

	// The first platform admin: a setup link's code, redeemed by a signed-in
	// user, limited per client address as sign-in is (admin_setup.go).
	m.Handle("GET /api/v1/setup", s.allowed(perch.ViewAccount, s.setupStatus))
	m.Handle("POST /api/v1/setup/admin", s.ipLimited("setup", auth, s.allowed(perch.ManageAccount, s.redeemSetupCode)))

	// API tokens.
	m.Handle("GET /api/v1/tokens", s.allowed(perch.ViewAccount, s.listAPITokens))
	m.Handle("POST /api/v1/tokens", s.allowed(perch.ManageTokens, s.createAPIToken))
	m.Handle("PATCH /api/v1/tokens/{id}", s.allowed(perch.ManageTokens, s.updateAPIToken))
	m.Handle("DELETE /api/v1/tokens/{id}", s.allowed(perch.ManageTokens, s.deleteAPIToken))

	// The caller's organisation: members, teams, invitations.
	m.Handle("GET /api/v1/org", s.allowed(perch.ViewOrg, s.getOrg))
	m.Handle("PATCH /api/v1/org", s.allowed(perch.ManageOrg, s.updateOrg))
	m.Handle("GET /api/v1/org/members", s.allowed(perch.ViewOrg, s.listMembers))
	m.Handle("PATCH /api/v1/org/members/{userId}", s.allowed(perch.ManageMembers, s.updateMember))
	m.Handle("DELETE /api/v1/org/members/{userId}", s.allowed(perch.LeaveOrg, s.removeMember)) // members may leave
	m.Handle("GET /api/v1/org/teams", s.allowed(perch.ViewOrg, s.listTeams))
	m.Handle("POST /api/v1/org/teams", s.allowed(perch.ManageTeams, s.createTeam))
	m.Handle("GET /api/v1/org/teams/{id}", s.allowed(perch.ViewOrg, s.getTeam))
	m.Handle("PATCH /api/v1/org/teams/{id}", s.allowed(perch.ManageTeams, s.updateTeam))
	m.Handle("DELETE /api/v1/org/teams/{id}", s.allowed(perch.ManageTeams, s.deleteTeam))
	m.Handle("PUT /api/v1/org/teams/{id}/members/{userId}", s.allowed(perch.ManageTeams, s.addTeamMember))
	m.Handle("DELETE /api/v1/org/teams/{id}/members/{userId}", s.allowed(perch.ManageTeams, s.removeTeamMember))
	m.Handle("GET /api/v1/org/invitations", s.allowed(perch.ViewInvitations, s.listInvitations))
	m.Handle("POST /api/v1/org/invitations", s.allowed(perch.ManageInvitations, s.createInvitation))
	m.Handle("DELETE /api/v1/org/invitations/{id}", s.allowed(perch.ManageInvitations, s.revokeInvitation))
	m.Handle("POST /api/v1/org/invitations/accept", s.allowed(perch.JoinOrg, s.acceptInvitation))

	// The organisation's integrations (org_integrations.go): the PagerDuty
	// key native actions use, and the secret its http actions are signed
	// with, for owners and admins.
	m.Handle("GET /api/v1/org/integrations/pagerduty", s.allowed(perch.ViewIntegrations, s.getPagerDuty))
	m.Handle("PUT /api/v1/org/integrations/pagerduty", s.allowed(perch.ManageIntegrations, s.putPagerDuty))
	m.Handle("DELETE /api/v1/org/integrations/pagerduty", s.allowed(perch.ManageIntegrations, s.deletePagerDuty))
	m.Handle("GET /api/v1/org/integrations/actions", s.allowed(perch.ManageIntegrations, s.getActionSigning))

	// Workflows and the marketplace (workflow_*.go):
	// members read, try and see the runs of their organisation's workflows;
	// owners and admins change, install, fork and publish them, and list
	// and retry the failed deliveries (workflow_deliveries.go). Each route
	// also needs its feature flags (gated: 403 feature_disabled when off);
	// forking a marketplace workflow checks `marketplace` inside.
	wf, mk := featureWorkflows, featureMarketplace
	m.Handle("GET /api/v1/org/workflows", s.allowed(perch.ViewWorkflows, s.gated(s.listWorkflows, wf)))
	m.Handle("POST /api/v1/org/workflows", s.allowed(perch.ManageWorkflows, s.gated(s.createWorkflow, wf)))
	m.Handle("GET /api/v1/org/workflows/{id}", s.allowed(perch.ViewWorkflows, s.gated(s.getWorkflow, wf)))
	m.Handle("PATCH /api/v1/org/workflows/{id}", s.allowed(perch.ManageWorkflows, s.gated(s.updateWorkflow, wf)))
	m.Handle("DELETE /api/v1/org/workflows/{id}", s.allowed(perch.ManageWorkflows, s.gated(s.deleteWorkflow, wf)))
	m.Handle("GET /api/v1/org/workflows/{id}/runs", s.allowed(perch.ViewWorkflows, s.gated(s.listWorkflowRuns, wf)))
	m.Handle("GET /api/v1/org/workflows/failed-deliveries", s.allowed(perch.ViewDeliveries, s.gated(s.listFailedDeliveries, wf)))
	m.Handle("POST /api/v1/org/workflows/failed-deliveries/{job_id}/retry", s.allowed(perch.ManageWorkflows, s.gated(s.retryDelivery, wf)))
	m.Handle("POST /api/v1/org/workflows/{id}/test", s.allowed(perch.ViewWorkflows, s.gated(s.tryWorkflow, wf)))
	m.Handle("POST /api/v1/org/workflows/{id}/fork", s.allowed(perch.ManageWorkflows, s.gated(s.forkWorkflow, wf)))
	m.Handle("POST /api/v1/org/workflows/{id}/install", s.allowed(perch.ManageWorkflows, s.gated(s.installWorkflow, wf, mk)))
	m.Handle("POST /api/v1/org/workflows/{id}/publish", s.allowed(perch.ManageWorkflows, s.gated(s.publishWorkflow, wf, mk)))
	m.Handle("GET /api/v1/marketplace/workflows", s.allowed(perch.ViewWorkflows, s.gated(s.listMarketplace, mk)))

	// Events: webhook tokens, the receivers (spec path, then the real name),
	// the history and the live feed.
	m.Handle("GET /api/v1/webhook-tokens", s.allowed(perch.ViewAccount, s.listWebhookTokens))
	m.Handle("POST /api/v1/webhook-tokens", s.allowed(perch.ManageTokens, s.createWebhookToken))
	m.Handle("DELETE /api/v1/webhook-tokens/{id}", s.allowed(perch.ManageTokens, s.deleteWebhookToken))
	m.Handle("POST /webhooks/inbound", s.receiver(perch.SenderInbound, parseInbound))
	m.Handle("POST /webhooks/incidents", s.receiver(perch.SenderIncidents, senders.PagerDuty))
	m.Handle("POST /webhooks/pagerduty", s.receiver(perch.SenderIncidents, senders.PagerDuty))
	m.Handle("POST /webhooks/code-host", s.receiver(perch.SenderCodeHost, senders.GitHub))
	m.Handle("POST /webhooks/github", s.receiver(perch.SenderCodeHost, senders.GitHub))
	m.Handle("POST /webhooks/monitoring", s.receiver(perch.SenderMonitoring, senders.Datadog))
	m.Handle("POST /webhooks/datadog", s.receiver(perch.SenderMonitoring, senders.Datadog))
	m.Handle("GET /api/v1/notifications", s.allowed(perch.ReadNotifications, s.listNotifications))
	m.Handle("POST /api/v1/notifications/read", s.allowed(perch.ReadNotifications, s.markRead))
	// Running a notification's action (notification_actions.go): scope
	// send, limited per user on top of the allowance.
	m.Handle("POST /api/v1/notifications/{id}/actions/{action_id}", s.allowed(perch.RunNotificationActions, s.runAction))
	m.Handle("GET /api/v1/notifications/scheduled", s.allowed(perch.ReadNotifications, s.listScheduled))
	m.Handle("DELETE /api/v1/notifications/scheduled/{id}", s.allowed(perch.CancelScheduled, s.cancelScheduled))
	m.Handle("GET /ws", s.handle(s.websocket))

	// Plans, regions and announcements.
	m.Handle("GET /api/v1/billing/plans", s.handle(s.listPlans))
	m.Handle("POST /api/v1/billing/checkout", s.allowed(perch.ManageBilling, s.checkout))
	m.Handle("POST /api/v1/billing/portal", s.allowed(perch.ManageBilling, s.portal))
	// The payment receivers authenticate by the provider's signature,
	// limited per client address in a bucket of their own, with an
	// allowance no provider comes near (DefaultPaymentLimit).
	payments := s.opts.Billing.PaymentLimit
	m.Handle("POST /webhooks/payments-a", s.perIP("payments", payments, s.paymentReceiver(stripeSender)))
	m.Handle("POST /webhooks/stripe", s.perIP("payments", payments, s.paymentReceiver(stripeSender)))
	m.Handle("POST /webhooks/payments-b", s.perIP("payments", payments, s.paymentReceiver(paddleSender)))
	m.Handle("POST /webhooks/paddle", s.perIP("payments", payments, s.paymentReceiver(paddleSender)))
	m.Handle("GET /api/v1/regions", s.handle(s.listRegions))
	m.Handle("GET /api/v1/announcements", s.allowed(perch.ViewAccount, s.listAnnouncements))
	m.Handle("POST /api/v1/admin/announcements", s.allowed(perch.PlatformAdmin, s.createAnnouncement))
	m.Handle("PATCH /api/v1/admin/announcements/{id}", s.allowed(perch.PlatformAdmin, s.updateAnnouncement))
	m.Handle("DELETE /api/v1/admin/announcements/{id}", s.allowed(perch.PlatformAdmin, s.deleteAnnouncement))

	// Sign-in with GitHub (oauth-a) and Google (oauth-b): the spec's paths
	// and the real names, each a redirect to the provider and the callback
	// it sends the browser back to, in a bucket of their own with the
	// per-user allowance (the provider checks the person; a sign-in is two
	// requests, and offices share an address); and the identities linked
	// to the signed-in user's account.
	github, google := perch.ProviderGitHub, perch.ProviderGoogle
	m.Handle("GET /api/v1/auth/oauth-a", s.perIP("oauth", user, s.oauthStart(github)))
	m.Handle("GET /api/v1/auth/github", s.perIP("oauth", user, s.oauthStart(github)))
	m.Handle("GET /api/v1/auth/oauth-a/callback", s.perIP("oauth", user, s.oauthCallback(github)))
	m.Handle("GET /api/v1/auth/github/callback", s.perIP("oauth", user, s.oauthCallback(github)))
	m.Handle("GET /api/v1/auth/oauth-b", s.perIP("oauth", user, s.oauthStart(google)))
	m.Handle("GET /api/v1/auth/google", s.perIP("oauth", user, s.oauthStart(google)))
	m.Handle("GET /api/v1/auth/oauth-b/callback", s.perIP("oauth", user, s.oauthCallback(google)))
	m.Handle("GET /api/v1/auth/google/callback", s.perIP("oauth", user, s.oauthCallback(google)))
	m.Handle("GET /api/v1/users/me/identities", s.allowed(perch.ViewAccount, s.listIdentities))
	m.Handle("DELETE /api/v1/users/me/identities/{provider}", s.allowed(perch.ManageAccount, s.deleteIdentity))

	// Single sign-on: SAML per organisation (saml*.go). The service
	// provider's routes are public, limited per client address with the
	// per-user allowance (an office signs in from one address); the
	// settings are for the organisation's owners and for platform admins.
	m.Handle("GET /api/v1/auth/saml/metadata", s.perIP("sso", user, s.samlMetadata))
	m.Handle("GET /api/v1/auth/saml/login", s.perIP("sso", user, s.samlLogin))
	m.Handle("POST /api/v1/auth/saml/acs", s.perIP("sso", user, s.samlACS))
	m.Handle("POST /api/v1/auth/saml/discover", s.perIP("sso", user, s.samlDiscover))
	m.Handle("GET /api/v1/admin/orgs/{id}/saml", s.allowed(perch.PlatformAdmin, s.getSAML))
	m.Handle("PUT /api/v1/admin/orgs/{id}/saml", s.allowed(perch.PlatformAdmin, s.putSAML))
	m.Handle("DELETE /api/v1/admin/orgs/{id}/saml", s.allowed(perch.PlatformAdmin, s.deleteSAML))
	m.Handle("POST /api/v1/admin/orgs/{id}/saml/test", s.allowed(perch.PlatformAdmin, s.testSAML))
	m.Handle("POST /api/v1/admin/orgs/{id}/saml/scim-token", s.allowed(perch.PlatformAdmin, s.createSCIMToken))
	m.Handle("GET /api/v1/org/saml", s.allowed(perch.ViewSSO, s.getSAML))
	m.Handle("PUT /api/v1/org/saml", s.allowed(perch.ManageSSO, s.putSAML))
	m.Handle("DELETE /api/v1/org/saml", s.allowed(perch.ManageSSO, s.deleteSAML))
	m.Handle("POST /api/v1/org/saml/test", s.allowed(perch.ManageSSO, s.testSAML))
	m.Handle("POST /api/v1/org/saml/scim-token", s.allowed(perch.ManageSSO, s.createSCIMToken))
	m.Handle("POST /api/v1/org/saml/domains/verify", s.allowed(perch.ManageSSO, s.verifySAMLDomains))

	// The audit log: the whole of it for platform admins, an organisation's
	// own for its owners and admins.
	m.Handle("GET /api/v1/admin/audit-log", s.allowed(perch.PlatformAdmin, s.adminAuditLog))
	m.Handle("GET /api/v1/admin/audit-log-v2", s.allowed(perch.PlatformAdmin, s.adminAuditLogV2))
	m.Handle("GET /api/v1/org/audit-log", s.allowed(perch.ViewOrgAudit, s.orgAuditLog))

	// Administration: feature flags and metrics.
	m.Handle("GET /api/v1/admin/features", s.allowed(perch.PlatformAdmin, s.listFeatures))
	m.Handle("PATCH /api/v1/admin/features/{key}", s.allowed(perch.PlatformAdmin, s.updateFeature))
	m.Handle("GET /api/v1/admin/metrics/summary", s.allowed(perch.PlatformAdmin, s.metricsSummary))
	m.Handle("GET /api/v1/admin/metrics", s.allowed(perch.PlatformAdmin, s.metricSeries))

	// Administration: users, organisations and plans.
	m.Handle("GET /api/v1/admin/users", s.allowed(perch.PlatformAdmin, s.adminListUsers))
	m.Handle("PATCH /api/v1/admin/users/{id}", s.allowed(perch.PlatformAdmin, s.adminUpdateUser))
	m.Handle("GET /api/v1/admin/orgs", s.allowed(perch.PlatformAdmin, s.adminListOrgs))
	m.Handle("GET /api/v1/admin/orgs/{id}", s.allowed(perch.PlatformAdmin, s.adminGetOrg))
	m.Handle("PATCH /api/v1/admin/orgs/{id}", s.allowed(perch.PlatformAdmin, s.adminUpdateOrg))
	m.Handle("GET /api/v1/admin/plans", s.allowed(perch.PlatformAdmin, s.adminListPlans))

	// E-mail settings, the newsletter and the unread mail. The unsubscribe
	// links work with no credential but their tokens; mail providers post
	// to them from shared addresses, so they have the per-user allowance,
	// per address.
	m.Handle("GET /api/v1/admin/email-config", s.allowed(perch.PlatformAdmin, s.getEmailConfig))
	m.Handle("PUT /api/v1/admin/email-config", s.allowed(perch.PlatformAdmin, s.putEmailConfig))
	m.Handle("POST /api/v1/admin/email-config/test", s.allowed(perch.PlatformAdmin, s.testEmailConfig))
	m.Handle("GET /api/v1/admin/newsletter", s.allowed(perch.PlatformAdmin, s.listNewsletter))
	m.Handle("POST /api/v1/admin/newsletter", s.allowed(perch.PlatformAdmin, s.sendNewsletter))
	m.Handle("POST /api/v1/newsletter/unsubscribe", s.perIP("unsubscribe", user, s.unsubscribe))
	m.Handle("GET /api/v1/newsletter/unsubscribe", s.perIP("unsubscribe", user, s.unsubscribePage))
	m.Handle("POST /api/v1/unread-mail/unsubscribe", s.perIP("unsubscribe", user, s.unsubscribeUnread))

	// SCIM 2.0 (scim*.go): an organisation's identity provider manages its
	// members and their teams (Groups) with the organisation's SCIM token, within the per-user
	// allowance per token. Other paths under /scim/v2 answer SCIM errors.
	m.Handle("GET /scim/v2/Users", s.scimHandler(s.scimListUsers))
	m.Handle("POST /scim/v2/Users", s.scimHandler(s.scimCreateUser))
	m.Handle("GET /scim/v2/Users/{id}", s.scimHandler(s.scimGetUser))
	m.Handle("PUT /scim/v2/Users/{id}", s.scimHandler(s.scimReplaceUser))
	m.Handle("PATCH /scim/v2/Users/{id}", s.scimHandler(s.scimPatchUser))
	m.Handle("DELETE /scim/v2/Users/{id}", s.scimHandler(s.scimDeleteUser))
	m.Handle("GET /scim/v2/Groups", s.scimHandler(s.scimListGroups))
	m.Handle("POST /scim/v2/Groups", s.scimHandler(s.scimCreateGroup))
	m.Handle("GET /scim/v2/Groups/{id}", s.scimHandler(s.scimGetGroup))
	m.Handle("PUT /scim/v2/Groups/{id}", s.scimHandler(s.scimReplaceGroup))
	m.Handle("PATCH /scim/v2/Groups/{id}", s.scimHandler(s.scimPatchGroup))
	m.Handle("DELETE /scim/v2/Groups/{id}", s.scimHandler(s.scimDeleteGroup))
	m.Handle("GET /scim/v2/ServiceProviderConfig", s.scimHandler(s.scimServiceProviderConfig))
	m.Handle("GET /scim/v2/ResourceTypes", s.scimHandler(s.scimResourceTypes))
	m.Handle("GET /scim/v2/ResourceTypes/{id}", s.scimHandler(s.scimResourceType))
	m.Handle("GET /scim/v2/Schemas", s.scimHandler(s.scimSchemas))
	m.Handle("GET /scim/v2/Schemas/{id}", s.scimHandler(s.scimSchema))

	// The API's description, for tools and for people.
	m.Handle("GET /api/v1/openapi.json", s.handle(s.openAPI))
	m.Handle("GET /docs/api", s.handle(s.apiDocs))

	// Anything else: 404, or 405 when the path exists for another method.
	m.Handle("/", s.handle(s.unmatched))
}

// allowed serves h to signed-in users whom perch.AuthorizePrincipal lets
// take a: by their role, and by their API token's scopes when they sign in
// with a scoped one. It is the one way to serve an authenticated route, so
// no route can leave out the action it takes, nor the scope that needs
// (TestEveryRouteHasAScope checks the routes against what they should need).
func (s *Server) allowed(a perch.Action, h handlerFunc) http.Handler {
	return s.authenticate(s.perUser(s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if err := perch.AuthorizePrincipal(principal(r), a); err != nil {
			return err
		}
		return h(w, r)
	})))
}
