package perch

import "time"

// AdminUser is a user as the platform's operators see them
// (GET /api/v1/admin/users).
type AdminUser struct {
	ID            string `json:"id"`
	Email         string `json:"email"`
	Name          string `json:"name"`
	OrgID         string `json:"org_id"`
	OrgName       string `json:"org_name"`
	Role          string `json:"role"`           // in their organisation
	PlatformAdmin bool   `json:"platform_admin"` // granted, or listed in PERCH_ADMIN_EMAILS with the mailbox proven
	EmailVerified bool   `json:"email_verified"` // the mailbox proven by a round trip of Perch's own
	// EmailAssertedBy is the organisation whose identity provider (SCIM, or
	// a first SAML sign-in) asserted the address; "" for none. An
	// assertion never proves the mailbox.
	EmailAssertedBy string     `json:"email_asserted_by"`
	Disabled        bool       `json:"disabled"`
	CreatedAt       time.Time  `json:"created_at"`
	LastSeenAt      *time.Time `json:"last_seen_at"`

	// Granted is the grant kept in the store (perch admin grant, or an
	// admin's change); PlatformAdmin adds the configured addresses to it.
	Granted bool `json:"-"`
}

// AdminUserUpdate is an operator's change to a user; nil fields stay as
// they are. PlatformAdmin changes only the grant kept in the store.
type AdminUserUpdate struct {
	Disabled      *bool
	PlatformAdmin *bool
}

// AdminOrg is an organisation in the operators' list
// (GET /api/v1/admin/orgs). Status is its plan status.
type AdminOrg struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Plan      string    `json:"plan"`
	Status    string    `json:"status"`
	SeatCount int       `json:"seat_count"` // members
	MaxSeats  int       `json:"max_seats"`  // the plan's cap
	CreatedAt time.Time `json:"created_at"`
}

// AdminOrgDetail is one organisation as an operator looks into it.
type AdminOrgDetail struct {
	AdminOrg
	Slug               string     `json:"slug"`
	TrialEndsAt        *time.Time `json:"trial_ends_at"`
	PendingInvitations int        `json:"pending_invitations"`
	Teams              int        `json:"teams"`
	Owners             []OrgOwner `json:"owners"`
}

// OrgOwner names an owner of an organisation, for the operators.
type OrgOwner struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// AdminOrgUpdate is an operator's change to an organisation's plan; nil
// fields stay as they are. TrialEndsAt is set (nil clears it) only when
// SetTrialEndsAt is.
type AdminOrgUpdate struct {
	Plan           *string
	Status         *string
	SetTrialEndsAt bool
	TrialEndsAt    *time.Time
}

// AdminPlan is a plan with how many organisations subscribe to it: those
// on the plan in any status but canceled.
type AdminPlan struct {
	Plan
	Subscribers int `json:"subscribers"`
}
