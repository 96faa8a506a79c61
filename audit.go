package perch

import (
	"regexp"
	"strings"
	"time"
)

// AuditEntry is one line of the audit log: who did what to what, from
// where. Entries are appended and never changed; retention prunes the old.
type AuditEntry struct {
	ID        string         `json:"id"`
	At        time.Time      `json:"at"`
	Action    string         `json:"action"` // dotted: org.member.role_changed
	Actor     AuditActor     `json:"actor"`
	Target    AuditTarget    `json:"target"`
	OrgID     string         `json:"org_id"` // the organisation the change belongs to; "" for none
	IP        string         `json:"ip"`
	UserAgent string         `json:"user_agent"`
	RequestID string         `json:"request_id"`
	Changes   map[string]any `json:"changes"` // what changed (new values, or {from, to}); never a secret
}

// AuditActor is who acted.
type AuditActor struct {
	Type  string `json:"type"` // one of the Actor* kinds
	ID    string `json:"id"`
	Email string `json:"email"`
}

// AuditTarget is what was acted on.
type AuditTarget struct {
	Type string `json:"type"` // user, org, team, invitation, api_token, …
	ID   string `json:"id"`
}

// Kinds of actor.
const (
	ActorUser     = "user"     // a signed-in user, or someone signing in
	ActorAdmin    = "admin"    // a platform admin, through /api/v1/admin
	ActorSystem   = "system"   // Perch itself: jobs, the command line
	ActorSCIM     = "scim"     // an identity provider, through SCIM
	ActorProvider = "provider" // a payment or sign-in provider's callback
)

// Audited actions. Each is a change of state or a security event.
const (
	AuditRegistered          = "auth.registered"
	AuditSignedIn            = "auth.signed_in"
	AuditSignInFailed        = "auth.sign_in_failed"
	AuditSignedOut           = "auth.signed_out"
	AuditRefreshReused       = "auth.refresh_token_reused" // a spent refresh token came back: the sign-in was ended
	AuditPasswordResetAsked  = "auth.password_reset_requested"
	AuditPasswordReset       = "auth.password_reset"
	AuditEmailVerified       = "auth.email_verified"
	AuditDeviceApproved      = "auth.device_approved"
	AuditDeviceDenied        = "auth.device_denied"
	AuditIdentityLinked      = "auth.identity_linked"  // a GitHub or Google account linked to a Perch account
	AuditIdentityRemoved     = "auth.identity_removed" // and unlinked
	AuditUserUpdated         = "user.updated"
	AuditPasswordChanged     = "user.password_changed"
	AuditEmailChangeAsked    = "user.email_change_requested"
	AuditEmailChanged        = "user.email_changed"
	AuditPreferencesUpdated  = "user.preferences.updated" // mutes, quiet hours, snooze or the unread mail
	AuditAPITokenCreated     = "api_token.created"
	AuditAPITokenUpdated     = "api_token.updated"
	AuditAPITokenDeleted     = "api_token.deleted"
	AuditWebhookTokenCreated = "webhook_token.created"
	AuditWebhookTokenDeleted = "webhook_token.deleted"
	AuditScheduledCancelled  = "notification.scheduled_cancelled" // a scheduled notification cancelled by its webhook token's owner
	AuditOrgUpdated          = "org.updated"
	AuditMemberRoleChanged   = "org.member.role_changed"
	AuditMemberRemoved       = "org.member.removed"
	AuditMemberLeft          = "org.member.left"
	AuditTeamCreated         = "org.team.created"
	AuditTeamUpdated         = "org.team.updated"
	AuditTeamDeleted         = "org.team.deleted"
	AuditTeamMemberAdded     = "org.team.member_added"
	AuditTeamMemberRemoved   = "org.team.member_removed"
	AuditInvitationCreated   = "org.invitation.created"
	AuditInvitationRevoked   = "org.invitation.revoked"
	AuditInvitationAccepted  = "org.invitation.accepted"
	AuditAnnouncementCreated = "announcement.created"
	AuditAnnouncementUpdated = "announcement.updated"
	AuditAnnouncementDeleted = "announcement.deleted"
	AuditAdminGranted        = "admin.granted" // platform admin, by any path: perch admin grant, an admin, PERCH_ADMIN_EMAILS
	AuditAdminRevoked        = "admin.revoked" // and withdrawn
	AuditAdminUserUpdated    = "admin.user.updated"
	AuditAdminOrgUpdated     = "admin.org.updated"
	AuditAdminFeatureUpdated = "admin.feature.updated"
	AuditEmailConfigUpdated  = "admin.email_config.updated"
	AuditEmailConfigTested   = "admin.email_config.tested"
	AuditNewsletterSent      = "admin.newsletter.sent"
	AuditNewsletterLeft      = "user.newsletter_unsubscribed"
	AuditLogExported         = "audit.exported"
	AuditSAMLUpdated         = "org.saml.updated"             // the organisation's SAML settings stored
	AuditSAMLDeleted         = "org.saml.deleted"             // and removed
	AuditSAMLTested          = "org.saml.tested"              // the settings checked
	AuditSAMLDomainVerified  = "org.saml.domain_verified"     // a domain's DNS record found
	AuditSCIMTokenCreated    = "org.scim_token.created"       // a new SCIM token, which replaces the old
	AuditSSOSignInsEnded     = "org.saml.sign_ins_ended"      // enforced single sign-on ended a member's earlier sign-ins and switched their API tokens off
	AuditSAMLProvisioned     = "auth.saml.provisioned"        // an account made at its first SAML sign-in (jit_provisioning)
	AuditSCIMUserCreated     = "scim.user.created"            // an identity provider made an account in the organisation
	AuditSCIMUserUpdated     = "scim.user.updated"            // changed its names, addresses or ids
	AuditSCIMUserDeactivated = "scim.user.deactivated"        // deactivated it: every sign-in ended
	AuditSCIMUserReactivated = "scim.user.reactivated"        // lifted its deactivation
	AuditSCIMUserDeleted     = "scim.user.deleted"            // deprovisioned it: disabled, kept in the organisation, no longer shown to SCIM
	AuditSCIMUserRestored    = "scim.user.restored"           // a POST brought a deleted one back: the same account
	AuditSCIMRefused         = "scim.user.refused"            // asked for what it may not do: a platform admin, an address outside the verified domains
	AuditCheckoutStarted     = "billing.checkout_started"     // an owner or admin went to the provider's checkout
	AuditSubscriptionChanged = "billing.subscription_changed" // a provider's event changed the subscription
	AuditTrialExpired        = "billing.trial_expired"        // a trial ended unpaid: solo, status none
	AuditSeatsUpdated        = "billing.seats_updated"        // the provider's subscription quantity set to the member count
	AuditBillingRefused      = "billing.event_refused"        // an event of another provider than the organisation's: not applied
	AuditWorkflowCreated     = "workflow.created"             // target type "workflow", as for every workflow action
	AuditWorkflowUpdated     = "workflow.updated"             // name, description, enabled, condition or steps changed
	AuditWorkflowDeleted     = "workflow.deleted"
	AuditWorkflowInstalled   = "workflow.installed" // installed from the marketplace, or updated to its source's version
	AuditWorkflowForked      = "workflow.forked"
	AuditWorkflowPublished   = "workflow.published"
	AuditWorkflowWithdrawn   = "workflow.withdrawn" // taken out of the marketplace
	// AuditWorkflowDeliveryRetried: a failed delivery (forward or e-mail)
	// queued again by an owner or admin; target type "delivery".
	AuditWorkflowDeliveryRetried = "workflow.delivery.retried"
	// AuditNotificationAction: someone ran an action of a notification
	// (target type "notification"), with the action's id and label and
	// its outcome; never what an http action sends, nor where.
	AuditNotificationAction = "notification.action"
	// AuditIntegrationUpdated and AuditIntegrationRemoved: an
	// organisation's integration (PagerDuty) stored or removed, target type
	// "integration" with its kind; never its key.
	AuditIntegrationUpdated = "org.integration.updated"
	AuditIntegrationRemoved = "org.integration.removed"
)

// AuditFilter selects audit entries: newest first, those before Cursor (an
// entry id), within [From, To) when set.
type AuditFilter struct {
	From, To time.Time
	Action   string // a prefix: "org." matches org.member.role_changed
	ActorID  string
	OrgID    string
	Page
}

// MaxAuditSpan is the longest time range one query of the log may cover.
const MaxAuditSpan = 366 * 24 * time.Hour

// DefaultAuditRetention is how long entries are kept unless configured.
const DefaultAuditRetention = 365 * 24 * time.Hour

// secretKeys are substrings of change keys whose values are never
// recorded, whatever a caller passes.
var secretKeys = []string{"password", "secret", "token", "hash", "private_key", "verifier", "cookie"}

// rawCredential matches the raw value of a Perch credential (see token.go):
// its prefix and at least 16 of the random characters that follow (the
// display prefix of a token, 8 of them, is not a secret and is kept).
var rawCredential = regexp.MustCompile(`(` + strings.Join([]string{APITokenPrefix, AccessTokenPrefix, RefreshTokenPrefix,
	WebhookTokenPrefix, EmailTokenPrefix, InvitationTokenPrefix, DeviceCodePrefix, SCIMTokenPrefix, SetupCodePrefix}, "|") + `)[A-Za-z0-9_-]{16,}`)

// Redacted is what stands in the log for a secret.
const Redacted = "[redacted]"

// RedactChanges returns changes with every value that is, or might be, a
// secret replaced by Redacted: keys that name one (password, token, secret,
// …), and within any string, a Perch credential's raw value (a pasted token,
// a receiver URL with ?token=). Nested maps and lists are redacted too. It is the audit log's last line of defence: handlers record
// labels, roles and flags, never credentials.
func RedactChanges(changes map[string]any) map[string]any {
	if len(changes) == 0 {
		return nil
	}
	out := make(map[string]any, len(changes))
	for k, v := range changes {
		if secretKey(k) {
			// A flag (password_changed: true) says whether, never what.
			if _, flag := v.(bool); !flag && v != nil && v != "" {
				v = Redacted
			}
			out[k] = v
			continue
		}
		out[k] = redactValue(v)
	}
	return out
}

func redactValue(v any) any {
	switch v := v.(type) {
	case string:
		return rawCredential.ReplaceAllString(v, "${1}"+Redacted)
	case map[string]any:
		return RedactChanges(v)
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = redactValue(x)
		}
		return out
	case []string:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = redactValue(x)
		}
		return out
	}
	return v
}

// secretKey reports whether a change key names a secret. "password_set"
// and other flags that only say whether one exists are kept.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	if strings.HasSuffix(k, "_set") || k == "token_prefix" || k == "label" {
		return false
	}
	for _, s := range secretKeys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return k == "code" || strings.HasSuffix(k, "_code") // a device or user code
}
