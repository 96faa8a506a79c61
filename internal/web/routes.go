package web

// routes lists every page of the dashboard. Each is Public (no session
// needed) or Private (signed in, else sent to sign in and back); either way
// a form post must come from the dashboard's own origin.
func (d *Dashboard) routes() {
	m := d.mux
	m.Handle("GET /assets/", d.Public(d.asset))
	m.Handle("GET /{$}", d.Public(d.Home))
	m.Handle("GET /signin", d.Public(d.SignInPage))
	m.Handle("POST /signin", d.Public(d.SignIn))
	m.Handle("GET /signup", d.Public(d.SignUpPage))
	m.Handle("POST /signup", d.Public(d.SignUp))
	// The refresh cookie goes only to RefreshPath: to these two.
	m.Handle("POST /session/refresh", d.Public(d.RefreshSession))
	m.Handle("POST /session/signout", d.Public(d.SignOut))
	m.Handle("POST /signout", d.Public(d.SignOutMoved))
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
	m.Handle("POST /profile/newsletter", d.Private(d.SetNewsletter))
	m.Handle("GET /newsletter/unsubscribe", d.Public(d.UnsubscribePage))
	m.Handle("POST /newsletter/unsubscribe", d.Public(d.Unsubscribe))
	m.Handle("GET /plans", d.Private(d.Plans))

	// The Admin section, for platform admins (pages_admin*.go).
	m.Handle("GET /admin", d.Private(d.AdminOverview))
	m.Handle("GET /admin/users", d.Private(d.AdminUsers))
	m.Handle("POST /admin/users/{id}", d.Private(d.AdminUpdateUser))
	m.Handle("GET /admin/orgs", d.Private(d.AdminOrgs))
	m.Handle("GET /admin/orgs/{id}", d.Private(d.AdminOrg))
	m.Handle("POST /admin/orgs/{id}", d.Private(d.AdminUpdateOrg))
	m.Handle("GET /admin/features", d.Private(d.AdminFeatures))
	m.Handle("POST /admin/features/{key}", d.Private(d.AdminUpdateFeature))
	m.Handle("POST /admin/features/{key}/overrides", d.Private(d.AdminSetOverride))
	m.Handle("POST /admin/features/{key}/overrides/{orgId}/remove", d.Private(d.AdminRemoveOverride))
	m.Handle("GET /admin/audit", d.Private(d.AdminAudit))

	// Anything else is a page that does not exist.
	m.Handle("/", d.Public(d.notFound))
}
