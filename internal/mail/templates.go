package mail

import (
	"embed"
	"fmt"
	htemplate "html/template"
	"strings"
	ttemplate "text/template"
	"time"

	"github.com/perch-dev/perch"
)

// How long the links in password resets and invitations stay valid. The code
// that issues those tokens should use the same values; the messages quote
// them.
const (
	PasswordResetValidity = time.Hour
	InvitationValidity    = 7 * 24 * time.Hour
)

// Each kind has kind.txt, defining "subject" and "body", and kind.html,
// defining the parts that layout.html arranges: "preheader", "heading",
// "intro", "action" and "note"; or, in place of the last two and the
// button, a "footer" of its own (the newsletter's).
//
//go:embed templates
var templateFS embed.FS

type kindTemplates struct {
	text *ttemplate.Template
	html *htemplate.Template
}

// templates are parsed once at start-up: a broken template is a bug, and the
// tests render every kind.
var templates = parseTemplates(perch.EmailVerify, perch.EmailChange, perch.EmailPasswordReset, perch.EmailInvitation,
	perch.EmailTest, perch.EmailNewsletter, WorkflowKind, UnreadKind)

func parseTemplates(kinds ...string) map[string]kindTemplates {
	m := make(map[string]kindTemplates, len(kinds))
	for _, kind := range kinds {
		m[kind] = kindTemplates{
			text: ttemplate.Must(ttemplate.ParseFS(templateFS, "templates/"+kind+".txt")),
			html: htemplate.Must(htemplate.ParseFS(templateFS, "templates/layout.html", "templates/"+kind+".html")),
		}
	}
	return m
}

// data is what the templates see. Fields a kind does not use stay empty.
type data struct {
	To       string // recipient, shown in the e-mail change message
	Name     string // recipient's name; may be empty
	Link     string
	Inviter  string
	Org      string
	Role     string // with its article: "an admin", "a member"
	Validity string // "1 hour", "7 days"
	By       string // who asked for a test message
	Subject  string // the newsletter's, as its admin wrote them
	Body     string
	Lines    []string // Body, line by line, for the HTML part
	Severity string   // a workflow's notification: its severity, source and workflow
	Source   string
	Workflow string
	Items    []UnreadItem // the unread mail's notifications, and how many more there are
	More     int
}

// VerifyEmail is sent after registration: link confirms the address to.
func VerifyEmail(to, name, link string) Message {
	return render(perch.EmailVerify, data{To: to, Name: name, Link: link})
}

// EmailChange is sent to the new address when a user changes theirs.
func EmailChange(to, name, link string) Message {
	return render(perch.EmailChange, data{To: to, Name: name, Link: link})
}

// PasswordReset carries a single-use link valid for PasswordResetValidity.
func PasswordReset(to, name, link string) Message {
	return render(perch.EmailPasswordReset, data{
		To: to, Name: name, Link: link, Validity: humanDuration(PasswordResetValidity),
	})
}

// Invitation invites to to join org with role (owner, admin or member), on
// behalf of inviter; link is valid for InvitationValidity.
func Invitation(to, inviter, org, role, link string) Message {
	return render(perch.EmailInvitation, data{
		To: to, Link: link, Inviter: inviter, Org: org,
		Role: withArticle(role), Validity: humanDuration(InvitationValidity),
	})
}

// TestMessage is the message an admin sends to check the e-mail settings,
// at by's request; link opens Perch.
func TestMessage(to, by, link string) Message {
	return render(perch.EmailTest, data{To: to, By: by, Link: link})
}

// Newsletter is one issue of the newsletter to one subscriber: subject and
// body are plain text as the admin wrote them. page is the unsubscribe page
// the body links to; unsubscribe is the one-click URL mail clients POST to
// (List-Unsubscribe, RFC 8058).
func Newsletter(to, subject, body, page, unsubscribe string) Message {
	body = strings.ReplaceAll(strings.TrimSpace(body), "\r\n", "\n")
	m := render(perch.EmailNewsletter, data{To: to, Subject: subject, Body: body, Lines: strings.Split(body, "\n"), Link: page})
	m.Unsubscribe = unsubscribe
	return m
}

func render(kind string, d data) Message {
	t := templates[kind]
	var subject, text, html strings.Builder
	for _, err := range []error{
		t.text.ExecuteTemplate(&subject, "subject", d),
		t.text.ExecuteTemplate(&text, "body", d),
		t.html.ExecuteTemplate(&html, "layout", d),
	} {
		if err != nil {
			// The data is a fixed struct of strings, so only a broken
			// template can fail here, and the tests render every kind.
			panic(fmt.Sprintf("mail: render %s: %v", kind, err))
		}
	}
	return Message{
		To: d.To,
		// Names come from users: a line break would end the header early.
		Subject: strings.Join(strings.Fields(subject.String()), " "),
		Text:    strings.TrimSpace(text.String()) + "\n",
		HTML:    html.String(),
		Kind:    kind,
		Link:    d.Link,
	}
}

// withArticle returns "an admin", "a member", "an owner"; "" stays "".
func withArticle(role string) string {
	switch {
	case role == "":
		return ""
	case strings.ContainsRune("aeiouAEIOU", rune(role[0])):
		return "an " + role
	}
	return "a " + role
}

// humanDuration spells d in whole days or hours: "1 hour", "7 days".
func humanDuration(d time.Duration) string {
	n, unit := int(d/time.Hour), "hour"
	if d%(24*time.Hour) == 0 {
		n, unit = int(d/(24*time.Hour)), "day"
	}
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}
