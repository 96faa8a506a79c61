package mail

import (
	"html"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

func TestTemplatesRenderEveryKind(t *testing.T) {
	t.Parallel()
	const (
		evil = `<script>alert("x")</script>`
		link = "https://perch.example.com/t/abc?x=1&y=2"
	)
	tests := []struct {
		kind string
		msg  Message
		want []string // in both bodies
	}{
		{perch.EmailVerify, VerifyEmail("ada@example.org", evil, link), nil},
		{perch.EmailChange, EmailChange("new@example.org", evil, link), []string{"new@example.org"}},
		{perch.EmailPasswordReset, PasswordReset("ada@example.org", evil, link), []string{"1 hour"}},
		{perch.EmailInvitation, Invitation("bob@example.org", evil, "Acme & Co", "admin", link),
			[]string{"as an admin", "7 days"}},
		{perch.EmailTest, TestMessage("ada@example.org", evil, link), []string{"test message"}},
		{perch.EmailNewsletter, Newsletter("ada@example.org", "News & more", evil+"\r\nSecond line", link, "https://perch.example.com/u"),
			[]string{"Second line", "subscribed"}},
		{WorkflowKind, WorkflowNotification("ada@example.org", evil, "Disk full\r\non db-1", "error", "monitoring", link, "Deploys & alerts"),
			[]string{"on db-1", "error", "monitoring", "Sent by the workflow", "Deploys & alerts"}},
		{UnreadKind, Unread("ada@example.org", "Ada", []UnreadItem{{Title: evil, Tab: "Ops & on-call", Priority: "high", Link: "https://db.example/1"},
			{Title: "Disk\r\nfull", Priority: "urgent"}}, 3, "30 minutes", link, "https://perch.example.com/u"),
			[]string{"5 notifications you have not read", "30 minutes", "[high] Ops & on-call: ", "https://db.example/1", "[urgent] Disk full", "and 3 more"}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			m := tt.msg
			seen[m.Kind] = true
			if m.Kind != tt.kind || m.Link != link || m.To == "" || m.Subject == "" {
				t.Errorf("message = kind %q, link %q, to %q, subject %q", m.Kind, m.Link, m.To, m.Subject)
			}
			if !strings.Contains(m.Text, link) {
				t.Errorf("text lacks the link:\n%s", m.Text)
			}
			// Once in the button, once as text the reader can copy.
			if n := strings.Count(m.HTML, html.EscapeString(link)); n < 3 {
				t.Errorf("HTML shows the link %d times, want href twice and the text once:\n%s", n, m.HTML)
			}
			for _, w := range tt.want {
				if !strings.Contains(m.Text, w) || !strings.Contains(m.HTML, html.EscapeString(w)) {
					t.Errorf("a body lacks %q", w)
				}
			}
			// The name reaches the reader intact, but never as markup.
			if !strings.Contains(m.Text, evil) {
				t.Errorf("text lacks the name %q:\n%s", evil, m.Text)
			}
			if strings.Contains(m.HTML, "<script") {
				t.Errorf("HTML contains an unescaped <script>:\n%s", m.HTML)
			}
			if !strings.Contains(m.HTML, "&lt;script&gt;") {
				t.Errorf("HTML lacks the escaped name:\n%s", m.HTML)
			}
		})
	}
	for kind := range templates {
		if !seen[kind] {
			t.Errorf("kind %q has templates but no test", kind)
		}
	}
}

func TestSubjectIsOneLine(t *testing.T) {
	t.Parallel()
	m := Invitation("bob@example.org", "Eve\r\nBcc: victim@example.org", "Acme", "member", "https://x.test/i")
	if strings.ContainsAny(m.Subject, "\r\n") {
		t.Errorf("Subject = %q, want a single line", m.Subject)
	}
}

func TestUnsafeLinkIsNeutralised(t *testing.T) {
	t.Parallel()
	m := VerifyEmail("ada@example.org", "Ada", "javascript:alert(1)")
	if strings.Contains(m.HTML, `href="javascript:`) {
		t.Errorf("HTML links to javascript:\n%s", m.HTML)
	}
}

func TestOptionalFields(t *testing.T) {
	t.Parallel()
	m := VerifyEmail("ada@example.org", "", "https://x.test/v")
	if !strings.HasPrefix(m.Text, "Hi,\n") {
		t.Errorf("text without a name starts %q", strings.SplitN(m.Text, "\n", 2)[0])
	}
	m = Invitation("bob@example.org", "", "Acme", "", "https://x.test/i")
	if !strings.Contains(m.Subject, "Someone invited you") || strings.Contains(m.Text, " as ") {
		t.Errorf("invitation without inviter or role: %q\n%s", m.Subject, m.Text)
	}
}

func TestNewsletterCarriesItsLines(t *testing.T) {
	t.Parallel()
	m := Newsletter("ada@example.org", "Spring", "First line\n\nThird line", "https://x.test/page", "https://x.test/api")
	if m.Unsubscribe != "https://x.test/api" || m.Link != "https://x.test/page" {
		t.Errorf("links = %q and %q", m.Link, m.Unsubscribe)
	}
	if !strings.HasPrefix(m.Text, "First line\n\nThird line\n") {
		t.Errorf("text starts %q, want the body as written", m.Text)
	}
	if !strings.Contains(m.HTML, "First line<br><br>Third line") {
		t.Errorf("HTML does not keep the lines:\n%s", m.HTML)
	}
	if strings.Contains(m.HTML, "Or copy this link") {
		t.Error("the newsletter shows the button footer of the account mails")
	}
}
