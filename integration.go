package perch

import (
	"strings"
	"time"
	"unicode"
)

// Integrations an organisation may set up: credentials Perch keeps (sealed)
// to act on a source system for its members.
const (
	// IntegrationPagerDuty is a PagerDuty REST API key and the address of
	// the PagerDuty user it acts as: the notifications of PagerDuty
	// incidents then carry Acknowledge and Resolve.
	IntegrationPagerDuty = "pagerduty"
)

// MaxIntegrationKey is the longest API key an integration takes, in bytes.
const MaxIntegrationKey = 200

// PagerDutyIntegration is what an organisation stores to act on PagerDuty:
// a REST API key (sealed by the server before it is stored, never answered)
// and the e-mail address of a PagerDuty user, which PagerDuty's REST API
// needs in From on every change it makes for an account-level key.
type PagerDutyIntegration struct {
	APIKey    string `json:"api_key"`
	FromEmail string `json:"from_email"`
}

// Validate reports every problem of the integration at once: the key must
// be given, at most MaxIntegrationKey printable ASCII characters with no
// spaces; the address must be a valid e-mail address.
func (p *PagerDutyIntegration) Validate() error {
	probs := Problems{}
	p.APIKey = strings.TrimSpace(p.APIKey)
	switch {
	case p.APIKey == "":
		probs.Add("api_key", "is required")
	case len(p.APIKey) > MaxIntegrationKey:
		probs.Add("api_key", "must be at most 200 characters")
	case strings.IndexFunc(p.APIKey, func(r rune) bool { return r > unicode.MaxASCII || !unicode.IsPrint(r) || r == ' ' }) >= 0:
		probs.Add("api_key", "must be printable characters without spaces, as PagerDuty gives it")
	}
	p.FromEmail = strings.TrimSpace(p.FromEmail)
	mail := Problems{}
	ValidateEmail(mail, p.FromEmail)
	if problem, ok := mail["email"]; ok {
		probs.Add("from_email", problem)
	}
	return probs.Err()
}

// IntegrationStatus is how an integration is shown: whether it is set up,
// with what, since when. It never holds the credential.
type IntegrationStatus struct {
	Configured bool       `json:"configured"`
	FromEmail  string     `json:"from_email,omitempty"`
	UpdatedAt  *time.Time `json:"updated_at,omitempty"`
}
