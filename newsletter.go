package perch

import (
	"strings"
	"time"
)

// Subscriber is a user who takes the newsletter: opted in, with a
// confirmed address.
type Subscriber struct {
	UserID       string    `json:"user_id"`
	Email        string    `json:"email"`
	Name         string    `json:"name"`
	SubscribedAt time.Time `json:"subscribed_at"`
}

// NewsletterIssue is what an admin sends to every subscriber: plain text.
type NewsletterIssue struct {
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// Limits of a newsletter issue.
const (
	MaxNewsletterSubjectLen = 200
	MaxNewsletterBodyLen    = 100_000
)

// Validate reports every problem at once: a subject of 1 to 200 characters
// on one line, a body of 1 to 100,000 characters (line breaks and tabs
// allowed). Both are trimmed.
func (n *NewsletterIssue) Validate() error {
	n.Subject, n.Body = strings.TrimSpace(n.Subject), strings.TrimSpace(n.Body)
	p := Problems{}
	validateText(p, "subject", n.Subject, MaxNewsletterSubjectLen, SingleLine)
	validateText(p, "body", n.Body, MaxNewsletterBodyLen, MultiLine)
	return p.Err()
}
