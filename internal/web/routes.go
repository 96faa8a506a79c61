package web

import "net/http"

// routes lists every page of the dashboard. Each is Public (no session
// needed) or Private (signed in, else sent to sign in and back); either way
// a form post must come from the dashboard's own origin.
func (d *Dashboard) routes() {
	m := d.mux
	m.Handle("GET /assets/", d.Public(d.asset))
	m.Handle("GET /{$}", d.Public(d.Home))
	m.Handle("GET /signin", d.Public(d.SignInPage))
	m.Handle("POST /signin", d.Public(d.SignIn))
	m.Handle("GET /signin/sso", d.Public(d.SSOSignInPage))
	m.Handle("POST /signin/sso", d.Public(d.SSOSignIn))
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
	// The setup link that makes the first platform admin (pages_setup.go):
	// the page is public, so that its script can keep the code through a
	// sign-in or sign-up.
	m.Handle("GET /setup", d.Public(d.SetupPage))
	m.Handle("POST /setup", d.Private(d.RedeemSetup))
	m.Handle("GET /device", d.Private(d.DevicePage))
	m.Handle("POST /device", d.Private(d.AnswerDevice))
	m.Handle("GET /notifications", d.Private(d.Notifications))
	// What the feed's script asks for (pages_feed.go): Markdown rendered
	// here, and http actions run through the API.
	m.Handle("GET /feed/history", d.Script(d.FeedHistory))
	m.Handle("GET /feed/notifications/{id}/body", d.Script(d.NotificationBody))
	m.Handle("POST /feed/notifications/{id}/actions/{action}", d.Script(d.RunAction))
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
	m.Handle("GET /org/sso", d.Private(d.OrgSSO))
	m.Handle("POST /org/sso", d.Private(d.SaveOrgSSO))
	m.Handle("POST /org/sso/test", d.Private(d.TestOrgSSO))
	m.Handle("POST /org/sso/domains/verify", d.Private(d.VerifyOrgSSODomains))
	m.Handle("POST /org/sso/scim-token", d.Private(d.CreateOrgSCIMToken))
	m.Handle("POST /org/sso/delete", d.Private(d.DeleteOrgSSO))
	m.Handle("GET /profile", d.Private(d.Profile))
	m.Handle("POST /profile", d.Private(d.UpdateProfile))
	m.Handle("POST /profile/password", d.Private(d.ChangePassword))
	m.Handle("POST /profile/newsletter", d.Private(d.SetNewsletter))
	m.Handle("POST /profile/identities/{provider}/remove", d.Private(d.RemoveIdentity))
	// Preferences (pages_preferences.go): what pops up on every client.
	m.Handle("GET /preferences", d.Private(d.Preferences))
	m.Handle("POST /preferences", d.Private(d.SavePreferences))
	m.Handle("POST /preferences/mutes", d.Private(d.AddMute))
	m.Handle("POST /preferences/mutes/{i}/remove", d.Private(d.RemoveMute))
	m.Handle("POST /preferences/snooze", d.Private(d.Snooze))
	m.Handle("GET /newsletter/unsubscribe", d.Public(d.UnsubscribePage))
	m.Handle("POST /newsletter/unsubscribe", d.Public(d.Unsubscribe))
	m.Handle("GET /plans", http.RedirectHandler("/org/billing", http.StatusMovedPermanently))
	m.Handle("GET /org/billing", d.Private(d.Billing))
	m.Handle("POST /org/billing/checkout", d.Private(d.Checkout))
	m.Handle("POST /org/billing/portal", d.Private(d.Portal))

	// Workflows and the marketplace (pages_workflows.go, pages_marketplace.go).
	m.Handle("GET /org/workflows", d.Private(d.Workflows))
	m.Handle("POST /org/workflows", d.Private(d.CreateWorkflow))
	m.Handle("GET /org/workflows/new", d.Private(d.NewWorkflowPage))
	m.Handle("GET /org/workflows/{id}", d.Private(d.WorkflowPage))
	m.Handle("POST /org/workflows/{id}", d.Private(d.SaveWorkflow))
	m.Handle("POST /org/workflows/{id}/test", d.Private(d.TryWorkflow))
	m.Handle("POST /org/workflows/{id}/enabled", d.Private(d.SetWorkflowEnabled))
	m.Handle("POST /org/workflows/{id}/publish", d.Private(d.PublishWorkflow))
	m.Handle("POST /org/workflows/{id}/withdraw", d.Private(d.WithdrawWorkflow))
	m.Handle("POST /org/workflows/{id}/update", d.Private(d.UpdateWorkflow))
	m.Handle("POST /org/workflows/{id}/delete", d.Private(d.DeleteWorkflow))
	m.Handle("GET /org/workflows/{id}/runs", d.Private(d.WorkflowRuns))
	m.Handle("GET /org/workflows/failed-deliveries", d.Private(d.FailedDeliveries)) // pages_deliveries.go
	m.Handle("POST /org/workflows/failed-deliveries/{id}/retry", d.Private(d.RetryDelivery))
	m.Handle("GET /marketplace", d.Private(d.Marketplace))
	m.Handle("POST /marketplace/{id}/install", d.Private(d.InstallWorkflow))
	m.Handle("POST /marketplace/{id}/fork", d.Private(d.ForkWorkflow))

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
	m.Handle("GET /admin/email", d.Private(d.AdminEmail))
	m.Handle("POST /admin/email", d.Private(d.AdminSaveEmail))
	m.Handle("POST /admin/email/test", d.Private(d.AdminTestEmail))
	m.Handle("GET /admin/newsletter", d.Private(d.AdminNewsletter))
	m.Handle("POST /admin/newsletter", d.Private(d.AdminSendNewsletter))
	m.Handle("GET /admin/newsletter/subscribers.csv", d.Private(d.AdminNewsletterCSV))

	// Anything else is a page that does not exist.
	m.Handle("/", d.Public(d.notFound))
}
