package server

import (
	"net/http"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/senders"

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
	m.Handle("POST /api/v1/auth/forgot-password", s.perIP(s.handle(s.forgotPassword)))
	m.Handle("POST /api/v1/auth/reset-password", s.perIP(s.handle(s.resetPassword)))
	m.Handle("POST /api/v1/auth/verify-email", s.perIP(s.handle(s.verifyEmail)))
	m.Handle("POST /api/v1/auth/refresh", s.handle(s.refresh))
	m.Handle("POST /api/v1/auth/logout", s.handle(s.logout))

	// Desktop sign-in (device/PKCE flow).
	m.Handle("GET /api/v1/auth/device/authorize", s.perIP(s.handle(s.deviceAuthorize)))
	m.Handle("GET /api/v1/auth/device/requests/{session_id}", s.signedIn(s.deviceRequestInfo))
	m.Handle("POST /api/v1/auth/device/complete", s.signedIn(s.deviceComplete))
	m.Handle("POST /api/v1/auth/device/exchange", s.perIP(s.handle(s.deviceExchange)))
	m.Handle("GET /api/v1/auth/device/status/{session_id}", s.devicePolling(s.handle(s.deviceStatus)))

	// The signed-in user.
	m.Handle("GET /api/v1/users/me", s.signedIn(s.me))
	m.Handle("PATCH /api/v1/users/me", s.signedIn(s.updateMe))
	m.Handle("GET /api/v1/users/me/features", s.signedIn(s.features))

	// API tokens.
	m.Handle("GET /api/v1/tokens", s.signedIn(s.listAPITokens))
	m.Handle("POST /api/v1/tokens", s.signedIn(s.createAPIToken))
	m.Handle("PATCH /api/v1/tokens/{id}", s.signedIn(s.updateAPIToken))
	m.Handle("DELETE /api/v1/tokens/{id}", s.signedIn(s.deleteAPIToken))

	// The caller's organisation: members, teams, invitations.
	m.Handle("GET /api/v1/org", s.allowed(perch.ViewOrg, s.getOrg))
	m.Handle("PATCH /api/v1/org", s.allowed(perch.ManageOrg, s.updateOrg))
	m.Handle("GET /api/v1/org/members", s.allowed(perch.ViewOrg, s.listMembers))
	m.Handle("PATCH /api/v1/org/members/{userId}", s.allowed(perch.ManageMembers, s.updateMember))
	m.Handle("DELETE /api/v1/org/members/{userId}", s.allowed(perch.ViewOrg, s.removeMember)) // members may leave
	m.Handle("GET /api/v1/org/teams", s.allowed(perch.ViewOrg, s.listTeams))
	m.Handle("POST /api/v1/org/teams", s.allowed(perch.ManageTeams, s.createTeam))
	m.Handle("GET /api/v1/org/teams/{id}", s.allowed(perch.ViewOrg, s.getTeam))
	m.Handle("PATCH /api/v1/org/teams/{id}", s.allowed(perch.ManageTeams, s.updateTeam))
	m.Handle("DELETE /api/v1/org/teams/{id}", s.allowed(perch.ManageTeams, s.deleteTeam))
	m.Handle("PUT /api/v1/org/teams/{id}/members/{userId}", s.allowed(perch.ManageTeams, s.addTeamMember))
	m.Handle("DELETE /api/v1/org/teams/{id}/members/{userId}", s.allowed(perch.ManageTeams, s.removeTeamMember))
	m.Handle("GET /api/v1/org/invitations", s.allowed(perch.ManageInvitations, s.listInvitations))
	m.Handle("POST /api/v1/org/invitations", s.allowed(perch.ManageInvitations, s.createInvitation))
	m.Handle("DELETE /api/v1/org/invitations/{id}", s.allowed(perch.ManageInvitations, s.revokeInvitation))
	m.Handle("POST /api/v1/org/invitations/accept", s.allowed(perch.ViewOrg, s.acceptInvitation))

	// Events: webhook tokens, the receivers (spec path, then the real name),
	// the history and the live feed.
	m.Handle("GET /api/v1/webhook-tokens", s.signedIn(s.listWebhookTokens))
	m.Handle("POST /api/v1/webhook-tokens", s.signedIn(s.createWebhookToken))
	m.Handle("DELETE /api/v1/webhook-tokens/{id}", s.signedIn(s.deleteWebhookToken))
	m.Handle("POST /webhooks/inbound", s.receiver(perch.SenderInbound, parseInbound))
	m.Handle("POST /webhooks/incidents", s.receiver(perch.SenderIncidents, senders.PagerDuty))
	m.Handle("POST /webhooks/pagerduty", s.receiver(perch.SenderIncidents, senders.PagerDuty))
	m.Handle("POST /webhooks/code-host", s.receiver(perch.SenderCodeHost, senders.GitHub))
	m.Handle("POST /webhooks/github", s.receiver(perch.SenderCodeHost, senders.GitHub))
	m.Handle("POST /webhooks/monitoring", s.receiver(perch.SenderMonitoring, senders.Datadog))
	m.Handle("POST /webhooks/datadog", s.receiver(perch.SenderMonitoring, senders.Datadog))
	m.Handle("GET /api/v1/notifications", s.signedIn(s.listNotifications))
	m.Handle("POST /api/v1/notifications/read", s.signedIn(s.markRead))
	m.Handle("GET /ws", s.handle(s.websocket))

	// Plans and announcements.
	m.Handle("GET /api/v1/billing/plans", s.handle(s.listPlans))
	m.Handle("GET /api/v1/announcements", s.signedIn(s.listAnnouncements))
	m.Handle("POST /api/v1/admin/announcements", s.allowed(perch.PlatformAdmin, s.createAnnouncement))
	m.Handle("PATCH /api/v1/admin/announcements/{id}", s.allowed(perch.PlatformAdmin, s.updateAnnouncement))
	m.Handle("DELETE /api/v1/admin/announcements/{id}", s.allowed(perch.PlatformAdmin, s.deleteAnnouncement))

	// The API's description, for tools and for people.
	m.Handle("GET /api/v1/openapi.json", s.handle(s.openAPI))
	m.Handle("GET /docs/api", s.handle(s.apiDocs))

	// The dashboard (internal/web): pages outside /api/v1, rendered on the
	// server; every form post is checked for a cross-origin sender.
	d := s.web
	m.HandleFunc("GET /assets/", d.Assets)
	m.Handle("GET /{$}", d.Public(d.Home))
	m.Handle("GET /signin", d.Public(d.SignInPage))
	m.Handle("POST /signin", d.Public(d.SignIn))
	m.Handle("GET /signup", d.Public(d.SignUpPage))
	m.Handle("POST /signup", d.Public(d.SignUp))
	m.Handle("POST /signout", d.Public(d.SignOut))
	m.Handle("POST /session/refresh", d.Public(d.RefreshSession))
	m.Handle("GET /forgot-password", d.Public(d.ForgotPasswordPage))
	m.Handle("POST /forgot-password", d.Public(d.ForgotPassword))
	m.Handle("GET /reset-password", d.Public(d.ResetPasswordPage))
	m.Handle("POST /reset-password", d.Public(d.ResetPassword))
	m.Handle("GET /verify-email", d.Public(d.VerifyEmailPage))
	m.Handle("POST /verify-email", d.Public(d.VerifyEmail))
	m.Handle("GET /invitations/accept", d.Public(d.AcceptInvitationPage))
	m.Handle("POST /invitations/accept", d.Private(d.AcceptInvitation))
	m.Handle("GET /device", d.Private(d.DevicePage))
	m.Handle("POST /device", d.Private(d.AnswerDevice))
	m.Handle("GET /notifications", d.Private(d.Notifications))
	m.Handle("GET /webhook-tokens", d.Private(d.WebhookTokens))
	m.Handle("POST /webhook-tokens", d.Private(d.CreateWebhookToken))
	m.Handle("POST /webhook-tokens/{id}/delete", d.Private(d.DeleteWebhookToken))
	m.Handle("GET /api-tokens", d.Private(d.APITokens))
	m.Handle("POST /api-tokens", d.Private(d.CreateAPIToken))
	m.Handle("POST /api-tokens/{id}", d.Private(d.UpdateAPIToken))
	m.Handle("POST /api-tokens/{id}/delete", d.Private(d.DeleteAPIToken))
	m.Handle("GET /org", d.Private(d.Org))
	m.Handle("POST /org", d.Private(d.UpdateOrg))
	m.Handle("POST /org/members/{userId}/role", d.Private(d.SetMemberRole))
	m.Handle("POST /org/members/{userId}/remove", d.Private(d.RemoveMember))
	m.Handle("POST /org/teams", d.Private(d.CreateTeam))
	m.Handle("POST /org/teams/{id}/delete", d.Private(d.DeleteTeam))
	m.Handle("POST /org/teams/{id}/members", d.Private(d.AddTeamMember))
	m.Handle("POST /org/teams/{id}/members/{userId}/remove", d.Private(d.RemoveTeamMember))
	m.Handle("POST /org/invitations", d.Private(d.Invite))
	m.Handle("POST /org/invitations/{id}/revoke", d.Private(d.RevokeInvitation))
	m.Handle("GET /profile", d.Private(d.Profile))
	m.Handle("POST /profile", d.Private(d.UpdateProfile))
	m.Handle("POST /profile/password", d.Private(d.ChangePassword))
	m.Handle("GET /plans", d.Private(d.Plans))

	// Anything else: 404, or 405 when the path exists for another method.
	m.Handle("/", s.handle(s.unmatched))
}

// signedIn serves h to a signed-in user, within their rate limit.
func (s *Server) signedIn(h handlerFunc) http.Handler {
	return s.authenticate(s.perUser(s.handle(h)))
}

// allowed serves h to signed-in users whom perch.Authorize lets take a.
func (s *Server) allowed(a perch.Action, h handlerFunc) http.Handler {
	return s.signedIn(func(w http.ResponseWriter, r *http.Request) error {
		if err := perch.Authorize(principal(r).User, a); err != nil {
			return err
		}
		return h(w, r)
	})
}
