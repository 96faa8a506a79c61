package perch

import (
	"strings"
	"time"
	"unicode/utf8"
)

// Member is a user as their organisation sees them.
type Member struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	Email    string    `json:"email"`
	Role     string    `json:"role"`
	JoinedAt time.Time `json:"joined_at"`
	Teams    []TeamRef `json:"teams"`
	// Disabled: the account is disabled (by a platform admin, or by the
	// organisation's identity provider deactivating or deleting it); it
	// stays a member and cannot sign in.
	Disabled bool `json:"disabled"`
}

// TeamRef names a team.
type TeamRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Team is a group of members inside an organisation.
type Team struct {
	ID          string       `json:"id"`
	OrgID       string       `json:"-"`
	Name        string       `json:"name"`
	Description string       `json:"description"`
	MemberCount int          `json:"member_count"`
	CreatedAt   time.Time    `json:"created_at"`
	Members     []TeamMember `json:"members,omitempty"`
}

// TeamMember is a member of a team.
type TeamMember struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Email   string    `json:"email"`
	AddedAt time.Time `json:"added_at"`
}

// TeamUpdate changes a team; nil fields stay as they are.
type TeamUpdate struct {
	Name        *string
	Description *string
}

// Team limits.
const (
	MaxTeamNameLen        = 100
	MaxTeamDescriptionLen = 500
	MaxOrgNameLen         = 100
)

// ValidateTeam records problems with a team's name (single-line) and
// description (multi-line, optional).
func ValidateTeam(p Problems, name, description string) {
	validateText(p, "name", name, MaxTeamNameLen, SingleLine)
	if utf8.RuneCountInString(description) > MaxTeamDescriptionLen {
		p.Add("description", "must be at most 500 characters")
	}
	CheckText(p, "description", description, MultiLine)
}

// ValidateOrgName records a problem with an organisation's name.
func ValidateOrgName(p Problems, name string) {
	validateText(p, "name", name, MaxOrgNameLen, SingleLine)
}

// ValidRole reports whether role is an organisation role.
func ValidRole(role string) bool {
	return role == RoleOwner || role == RoleAdmin || role == RoleMember
}

// Invitation states. A pending invitation past its expiry reads as expired.
const (
	InvitationPending  = "pending"
	InvitationAccepted = "accepted"
	InvitationRevoked  = "revoked"
	InvitationExpired  = "expired"
)

// Lifetimes of the single-use links Perch mails.
const (
	InvitationTTL    = 7 * 24 * time.Hour
	PasswordResetTTL = time.Hour
	VerifyEmailTTL   = 48 * time.Hour
)

// EmailLinkTTL is how long the single-use link that mail of kind carries
// stays valid: 0 for kinds whose link is no credential (a test message,
// the newsletter, a workflow's mail). Mail waiting in the outbox expires
// with its link.
func EmailLinkTTL(kind string) time.Duration {
	switch kind {
	case EmailVerify, EmailChange:
		return VerifyEmailTTL
	case EmailPasswordReset:
		return PasswordResetTTL
	case EmailInvitation:
		return InvitationTTL
	}
	return 0
}

// Prefixes of the raw single-use link tokens.
const (
	InvitationTokenPrefix = "inv_"
	EmailTokenPrefix      = "pem_"
)

// Kinds of e-mail Perch sends; the first three carry single-use links of
// the same kind (an invitation's link is the invitation's own token).
const (
	EmailVerify        = "verify_email"
	EmailChange        = "email_change"
	EmailPasswordReset = "password_reset"
	EmailInvitation    = "invitation"
	EmailTest          = "email_test" // an admin's check of the e-mail settings
	EmailNewsletter    = "newsletter"
)

// Invitation is an offer to join an organisation, mailed as a link.
type Invitation struct {
	ID         string     `json:"id"`
	OrgID      string     `json:"-"`
	Email      string     `json:"email"`
	Role       string     `json:"role"`
	Status     string     `json:"status"`
	InvitedBy  *TeamRef   `json:"invited_by"` // the inviter's id and name; nil once they are gone
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	AcceptedAt *time.Time `json:"accepted_at"`
}

// InvitationPreview is what an invitation's link shows whoever holds it,
// before they sign up or sign in: the organisation, who invited them, the
// role and the address it is for. The link is the credential: only a live
// one (pending, unexpired) shows anything.
type InvitationPreview struct {
	OrgName   string    `json:"org_name"`
	InvitedBy string    `json:"invited_by"` // the inviter's name; "" once their account is gone
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	ExpiresAt time.Time `json:"expires_at"`
}

// OrgNameFor is the name of the organisation a new account gets.
func OrgNameFor(userName string) string {
	return strings.TrimSpace(userName) + "'s organisation"
}
