package perch

import (
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Org roles, from most to least powerful.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// User is an account. Every user belongs to exactly one organisation.
type User struct {
	ID            string    `json:"id"`
	Email         string    `json:"email"`
	Name          string    `json:"name"`
	EmailVerified bool      `json:"email_verified"`
	OrgID         string    `json:"org_id"`
	OrgRole       string    `json:"org_role"`
	IsAdmin       bool      `json:"is_admin"`   // platform admin: granted in the store or listed in PERCH_ADMIN_EMAILS
	Newsletter    bool      `json:"newsletter"` // takes the newsletter (opted in; off by default)
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`

	// LastSeenAt is when the user last signed in, renewed a sign-in or was
	// authenticated, to the minute; nil until then. Admins see it.
	LastSeenAt *time.Time `json:"-"`
	// Disabled: a platform admin or the organisation's identity provider
	// disabled the account, which nothing signs in to or resets then.
	Disabled bool `json:"-"`
}

// IsOrgAdmin reports whether u may manage their organisation.
func (u *User) IsOrgAdmin() bool { return u.OrgRole == RoleOwner || u.OrgRole == RoleAdmin }

// Org is an organisation: the unit of membership, billing and scope.
type Org struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	Slug        string     `json:"slug"`
	Plan        string     `json:"plan"`
	PlanStatus  string     `json:"plan_status"`
	TrialEndsAt *time.Time `json:"trial_ends_at"`
	CreatedAt   time.Time  `json:"created_at"`

	SeatCount          int `json:"seat_count"`          // members
	PendingInvitations int `json:"pending_invitations"` // each holds a seat until it ends
	MaxSeats           int `json:"max_seats"`           // the plan's cap on both together

	// Subscription is the organisation's billing state (docs/DESIGN.md,
	// Billing): its plan and status again, with the paid period and the
	// provider.
	Subscription *Subscription `json:"subscription"`
}

// Plan statuses of an organisation: on its trial, paying, behind with a
// payment, ended, or paused by the operators.
const (
	PlanTrialing = "trialing"
	PlanActive   = "active"
	PlanPastDue  = "past_due"
	PlanCanceled = "canceled"
	PlanPaused   = "paused"
)

// ValidPlanStatus reports whether s is a plan status an organisation may have.
func ValidPlanStatus(s string) bool {
	switch s {
	case PlanTrialing, PlanActive, PlanPastDue, PlanCanceled, PlanPaused, PlanNone:
		return true
	}
	return false
}

// TrialDays is how long a new organisation's team-plan trial lasts.
const TrialDays = 14

// NewUser is what registration needs to create an account.
type NewUser struct {
	Name     string
	Email    string
	Password string
}

// Password rules: 10 to 128 characters, not the e-mail address, not one
// repeated character.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 128
	MaxNameLen     = 100
	MaxEmailLen    = 254
)

// NormalizeEmail returns the form of an address that uniqueness is decided on.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// Validate checks a registration and reports every problem at once.
func (n *NewUser) Validate() error {
	p := Problems{}
	ValidateName(p, n.Name)
	ValidateEmail(p, n.Email)
	ValidatePassword(p, "password", n.Password, n.Email)
	return p.Err()
}

// ValidateName records a problem with a display name: blank, over 100
// characters, or not single-line text (see TextProblem).
func ValidateName(p Problems, name string) {
	validateText(p, "name", name, MaxNameLen, SingleLine)
}

// ValidateEmail records a problem with an e-mail address. Display names and
// comments ("Ann <ann@example.com>") are refused: an address is wanted. So
// are control and bidirectional characters, which net/mail lets through
// outside ASCII.
func ValidateEmail(p Problems, email string) {
	email = strings.TrimSpace(email)
	if email == "" {
		p.Add("email", "is required")
		return
	}
	if problem := TextProblem(email, SingleLine); problem != "" {
		p.Add("email", problem)
		return
	}
	a, err := mail.ParseAddress(email)
	at := strings.LastIndexByte(email, '@')
	if err != nil || a.Address != email || len(email) > MaxEmailLen || at < 1 || !strings.Contains(email[at+1:], ".") {
		p.Add("email", "must be a valid e-mail address")
	}
}

// ValidatePassword records a problem with a password under field.
func ValidatePassword(p Problems, field, password, email string) {
	n := utf8.RuneCountInString(password)
	switch bad := PasswordProblem(password); {
	case bad != "":
		p.Add(field, bad)
	case n < MinPasswordLen:
		p.Add(field, "must be at least "+strconv.Itoa(MinPasswordLen)+" characters")
	case n > MaxPasswordLen:
		p.Add(field, "must be at most "+strconv.Itoa(MaxPasswordLen)+" characters")
	case strings.EqualFold(strings.TrimSpace(password), strings.TrimSpace(email)):
		p.Add(field, "must not be your e-mail address")
	case oneRepeatedRune(password):
		p.Add(field, "must not be one character repeated")
	}
}

// PasswordProblem returns what makes password one that no password may be,
// whatever its length, or "": invalid UTF-8 or a control character. Any
// other character is allowed, bidirectional ones too, since a password is
// never shown. A control character cannot be typed into a password field,
// so a password holding one was not meant; a NUL would be cut off by some
// tools. Sign-in refuses them too, before looking anything up.
func PasswordProblem(password string) string {
	if printableASCII(password) {
		return ""
	}
	if !utf8.ValidString(password) {
		return problemUTF8
	}
	if strings.ContainsFunc(password, unicode.IsControl) {
		return problemControl
	}
	return ""
}

func oneRepeatedRune(s string) bool {
	first, _ := utf8.DecodeRuneInString(s)
	for _, r := range s {
		if r != first {
			return false
		}
	}
	return true
}

// UserUpdate is a change to one's own profile; nil fields stay as they are.
type UserUpdate struct {
	Name            *string
	Password        *string
	CurrentPassword string
}
