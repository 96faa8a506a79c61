package perch

import (
	"slices"
	"time"
)

// Senders a webhook token is made for; each has its receiver.
const (
	SenderIncidents  = "incidents"
	SenderCodeHost   = "code-host"
	SenderMonitoring = "monitoring"
	SenderInbound    = "inbound"
)

// ValidSender reports whether s names a sender a token can be made for.
func ValidSender(s string) bool {
	return s == SenderIncidents || s == SenderCodeHost || s == SenderMonitoring || s == SenderInbound
}

// WebhookToken authenticates one sender's deliveries and decides who gets
// them: its creator alone, a team, or the whole organisation.
type WebhookToken struct {
	ID          string     `json:"id"`
	UserID      string     `json:"-"`
	OrgID       string     `json:"-"`
	Label       string     `json:"label"`
	Sender      string     `json:"sender"`
	Scope       string     `json:"scope"`
	TeamID      *string    `json:"team_id"`
	TokenPrefix string     `json:"token_prefix"`
	CreatedAt   time.Time  `json:"created_at"`
	LastUsedAt  *time.Time `json:"last_used_at"`
}

// Audience is the scope a token's notifications are addressed to.
func (t *WebhookToken) Audience() Scope {
	switch t.Scope {
	case ScopeTeam:
		return Scope{Type: ScopeTeam, ID: *t.TeamID}
	case ScopeOrg:
		return Scope{Type: ScopeOrg, ID: t.OrgID}
	}
	return Scope{Type: ScopeUser, ID: t.UserID}
}

// Audience is everything a signed-in user's clients receive: notifications
// of scope user for them, team for their teams, org for their organisation,
// and all.
type Audience struct {
	UserID  string   `json:"user_id"`
	OrgID   string   `json:"org_id"`
	TeamIDs []string `json:"team_ids"`
	// Joined is when the account was made: broadcasts from before it were
	// for the people there then, and are not in its history.
	Joined time.Time `json:"joined"`
}

// Equal reports whether a and b reach the same notifications: the same
// user, organisation and set of teams.
func (a Audience) Equal(b Audience) bool {
	if a.UserID != b.UserID || a.OrgID != b.OrgID || len(a.TeamIDs) != len(b.TeamIDs) {
		return false
	}
	for _, t := range a.TeamIDs {
		if !slices.Contains(b.TeamIDs, t) {
			return false
		}
	}
	return true
}

// Includes reports whether a notification of scope s reaches the audience.
func (a *Audience) Includes(s Scope) bool {
	switch s.Type {
	case ScopeAll:
		return true
	case ScopeUser:
		return s.ID == a.UserID
	case ScopeOrg:
		return s.ID == a.OrgID
	case ScopeTeam:
		for _, id := range a.TeamIDs {
			if id == s.ID {
				return true
			}
		}
	}
	return false
}
