package perch

import "strings"

// Action is something a signed-in user may or may not do. Authorize is the
// one place that decides by the user's role, and actionScopes the one that
// decides by an API token's scopes; routes.go names the action each
// authenticated route needs (every one names one), and the store keeps
// every query inside the caller's own organisation.
type Action int

// Actions, by who may take them and the API token scope they need.
const (
	ViewOrg                Action = iota // every member: the organisation, its members and teams (read)
	ManageOrg                            // owners and admins: rename (manage)
	ManageMembers                        // owners and admins: change roles (manage; see AuthorizeMemberChange)
	ManageTeams                          // owners and admins: create, edit, delete teams and their members (manage)
	ManageInvitations                    // owners and admins: send and revoke invitations (manage)
	ViewOrgAudit                         // owners and admins: the organisation's audit log (read)
	ManageSSO                            // owners: single sign-on (SAML), its domains and the SCIM token (manage)
	ManageBilling                        // owners and admins: checkout and the payment provider's portal (manage)
	ViewWorkflows                        // every member: the organisation's workflows and their runs, and trying them (read)
	ManageWorkflows                      // owners and admins: create, edit, delete, install, fork and publish workflows (manage)
	PlatformAdmin                        // platform admins: /admin (manage, reads included)
	ViewAccount                          // every user: their own account, features, tokens' list, announcements (read)
	ManageAccount                        // every user: change their account, its identities, approve a desktop sign-in, redeem a setup link (manage)
	ManageTokens                         // every user: make, change and delete their API and webhook tokens (manage)
	ReadNotifications                    // every user: their notifications, their read state and the live feed (read)
	LeaveOrg                             // every member: leave the organisation; removing others is ManageMembers (manage)
	JoinOrg                              // every user: accept an invitation (manage)
	ViewInvitations                      // owners and admins: the pending invitations (read)
	ViewSSO                              // owners: the single sign-on settings (read)
	ViewDeliveries                       // owners and admins: the workflows' failed deliveries (read)
	RunNotificationActions               // every user: run an action of a notification they can see (send)
	ViewIntegrations                     // owners and admins: whether the organisation's integrations (PagerDuty) are set up (read)
	ManageIntegrations                   // owners and admins: store and remove the integrations' credentials, read the actions' signing secret (manage)
	CancelScheduled                      // every user: cancel what their webhook tokens scheduled (send)
	actionCount                          // the number of actions; keep it last
)

// actionScopes is the API token scope each action needs: a token limited to
// scopes without it is refused (AuthorizeScopes). Reading is read, whatever
// the role it takes; changing anything is manage; sending notifications
// and running actions is send. The platform's administration is manage,
// its reads too: a read token of a platform admin reads what the admin's
// organisation may, not every account on the server. An action left out
// here needs a scope no token has (TestEveryActionHasAScope fails first).
var actionScopes = [actionCount]TokenScope{
	ViewOrg:           ScopeRead,
	ManageOrg:         ScopeManage,
	ManageMembers:     ScopeManage,
	ManageTeams:       ScopeManage,
	ManageInvitations: ScopeManage,
	ViewOrgAudit:      ScopeRead,
	ManageSSO:         ScopeManage,
	ManageBilling:     ScopeManage,
	ViewWorkflows:     ScopeRead,
	ManageWorkflows:   ScopeManage,
	PlatformAdmin:     ScopeManage,
	ViewAccount:       ScopeRead,
	ManageAccount:     ScopeManage,
	ManageTokens:      ScopeManage,
	ReadNotifications: ScopeRead,
	LeaveOrg:          ScopeManage,
	JoinOrg:           ScopeManage,
	ViewInvitations:   ScopeRead,
	ViewSSO:           ScopeRead,
	ViewDeliveries:    ScopeRead,

	RunNotificationActions: ScopeSend,
	ViewIntegrations:       ScopeRead,
	ManageIntegrations:     ScopeManage,
	CancelScheduled:        ScopeSend,
}

// Scope is the API token scope a needs ("" for an action without one,
// which no scoped token may take).
func (a Action) Scope() TokenScope {
	if a < 0 || a >= actionCount {
		return ""
	}
	return actionScopes[a]
}

// AuthorizePrincipal returns nil when p may take action a: its user by
// their role (Authorize), and its credential by its scopes (AuthorizeScopes).
func AuthorizePrincipal(p *Principal, a Action) error {
	if err := Authorize(p.User, a); err != nil {
		return err
	}
	return AuthorizeScopes(p.Scopes, a)
}

// AuthorizeScopes returns nil when a credential limited to scopes (nil:
// not limited, as access tokens and unscoped API tokens are) may take a,
// or an EFORBIDDEN error naming the scope a needs.
func AuthorizeScopes(scopes []TokenScope, a Action) error {
	if scopes == nil {
		return nil
	}
	need := a.Scope()
	for _, s := range scopes {
		if need != "" && s == need {
			return nil
		}
	}
	if need == "" {
		return Errorf(EFORBIDDEN, "An API token with scopes cannot do this; use an unscoped token or sign in.")
	}
	names := make([]string, len(scopes))
	for i, s := range scopes {
		names[i] = string(s)
	}
	return Errorf(EFORBIDDEN, "This API token's scopes (%s) do not allow this; it needs %s.", strings.Join(names, ", "), need)
}

var errOrgAdminsOnly = Errorf(EFORBIDDEN, "Only owners and admins of the organisation may do this.")

// Authorize returns nil when u may take action a, or an EFORBIDDEN error.
func Authorize(u *User, a Action) error {
	switch a {
	case ViewOrg, ViewWorkflows, ViewAccount, ManageAccount, ManageTokens, ReadNotifications, LeaveOrg, JoinOrg, RunNotificationActions, CancelScheduled:
		return nil
	case ManageOrg, ManageMembers, ManageTeams, ManageInvitations, ViewInvitations, ViewOrgAudit, ManageBilling, ManageWorkflows, ViewDeliveries,
		ViewIntegrations, ManageIntegrations:
		if u.IsOrgAdmin() {
			return nil
		}
		return errOrgAdminsOnly
	case ManageSSO, ViewSSO:
		if u.OrgRole == RoleOwner {
			return nil
		}
		return Errorf(EFORBIDDEN, "Only owners of the organisation may set up single sign-on.")
	case PlatformAdmin:
		if u.IsAdmin {
			return nil
		}
		return Errorf(EFORBIDDEN, "Only platform admins may do this.")
	}
	return Errorf(EFORBIDDEN, "Not allowed.")
}

// AuthorizeMemberChange decides whether actor may give target the role
// newRole, or remove them when newRole is "". Anyone may leave; only owners
// may touch owners or make new ones. Whether the organisation keeps an owner
// is for the store to check, inside its transaction.
func AuthorizeMemberChange(actor *User, target *Member, newRole string) error {
	if newRole == "" && actor.ID == target.ID {
		return nil
	}
	if err := Authorize(actor, ManageMembers); err != nil {
		return err
	}
	if (target.Role == RoleOwner || newRole == RoleOwner) && actor.OrgRole != RoleOwner {
		return Errorf(EFORBIDDEN, "Only owners may remove owners, change their role or make new ones.")
	}
	return nil
}

// AuthorizeInvite decides whether actor may invite someone with role.
func AuthorizeInvite(actor *User, role string) error {
	if err := Authorize(actor, ManageInvitations); err != nil {
		return err
	}
	if role == RoleOwner && actor.OrgRole != RoleOwner {
		return Errorf(EFORBIDDEN, "Only owners may invite owners.")
	}
	return nil
}
