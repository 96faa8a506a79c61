package perch

// Action is something a signed-in user may or may not do. Authorize is the
// one place that decides; routes.go names the action each route needs, and
// the store keeps every query inside the caller's own organisation.
type Action int

// Actions, by who may take them.
const (
	ViewOrg           Action = iota // every member: the organisation, its members and teams
	ManageOrg                       // owners and admins: rename
	ManageMembers                   // owners and admins: remove members, change roles (see AuthorizeMemberChange)
	ManageTeams                     // owners and admins: create, edit, delete teams and their members
	ManageInvitations               // owners and admins: list, send and revoke invitations
	ViewOrgAudit                    // owners and admins: the organisation's audit log
	ManageSSO                       // owners: single sign-on (SAML), its domains and the SCIM token
	ManageBilling                   // owners and admins: checkout and the payment provider's portal
	ViewWorkflows                   // every member: the organisation's workflows and their runs, and trying them
	ManageWorkflows                 // owners and admins: create, edit, delete, install, fork and publish workflows
	PlatformAdmin                   // platform admins: /admin
)

var errOrgAdminsOnly = Errorf(EFORBIDDEN, "Only owners and admins of the organisation may do this.")

// Authorize returns nil when u may take action a, or an EFORBIDDEN error.
func Authorize(u *User, a Action) error {
	switch a {
	case ViewOrg, ViewWorkflows:
		return nil
	case ManageOrg, ManageMembers, ManageTeams, ManageInvitations, ViewOrgAudit, ManageBilling, ManageWorkflows:
		if u.IsOrgAdmin() {
			return nil
		}
		return errOrgAdminsOnly
	case ManageSSO:
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
