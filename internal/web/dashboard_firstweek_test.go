package web_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/auth"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// The forms that set a password say the domain's rule, not one of their own.
func TestDashboardPasswordFormsSayTheDomainsRule(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	rule := []string{
		`minlength="` + strconv.Itoa(perch.MinPasswordLen) + `"`,
		`maxlength="` + strconv.Itoa(perch.MaxPasswordLen) + `"`,
		"At least " + strconv.Itoa(perch.MinPasswordLen) + " characters (at most " + strconv.Itoa(perch.MaxPasswordLen) + ").",
	}
	b.get("/signup").expect(t, 200, "").contains(t, rule...)
	signUpInBrowser(t, b, "Ada")
	b.get("/reset-password?token="+a.resetLink("ada@example.com")).contains(t, rule...)
	b.get("/profile").expect(t, 200, "").contains(t, rule...)

	// No template keeps a rule of its own: every new-password field has
	// its lengths from passwordRule, and no text counts characters.
	newPassword := regexp.MustCompile(`<input[^>]*new-password[^>]*>`)
	ownCount := regexp.MustCompile(`(?i)at least \d|\d+ characters`)
	filepath.WalkDir("templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, _ := os.ReadFile(path)
		for _, in := range newPassword.FindAll(raw, -1) {
			if !regexp.MustCompile(`minlength="\{\{\(passwordRule\)\.Min\}\}" maxlength="\{\{\(passwordRule\)\.Max\}\}"`).Match(in) {
				t.Errorf("%s: %s: take the lengths from passwordRule", path, in)
			}
		}
		if m := ownCount.Find(raw); m != nil {
			t.Errorf("%s: %q: say the rule with passwordRule", path, m)
		}
		return nil
	})
}

// The Webhooks page's "Try it" works for every sender as shown: its body
// and headers, posted to the receiver with the new token, make a
// notification; where the server checks signatures, the body is signed as
// the page says (openssl's HMAC-SHA256 of the body under the secret).
func TestDashboardTryItWorksForEverySender(t *testing.T) {
	t.Parallel()
	const secret = "s3cret"
	for _, signed := range []bool{false, true} {
		a := newSite(t, storetest.New(t, store.SQLite), func(o *server.Options) {
			if signed {
				o.Webhooks.GitHubSecret, o.Webhooks.PagerDutySecret = secret, secret
			}
		})
		b := newBrowser(t, a.ts)
		signUpInBrowser(t, b, "Ada")
		for _, sender := range []string{perch.SenderInbound, perch.SenderIncidents, perch.SenderCodeHost, perch.SenderMonitoring} {
			p := b.post("/webhook-tokens", url.Values{"label": {sender}, "sender": {sender}, "scope": {"user"}}).expect(t, 200, "")
			shown := regexp.MustCompile(`(?s)<pre class="copy mono" id="curl">(.*?)</pre>`).FindStringSubmatch(p.Body)
			if shown == nil {
				t.Fatalf("%s: no example on the page", sender)
			}
			target, headers, body := parseTryIt(t, html.UnescapeString(shown[1]), secret)
			wantSigned := signed && (sender == perch.SenderIncidents || sender == perch.SenderCodeHost)
			if strings.Contains(shown[1], "openssl") != wantSigned {
				t.Errorf("%s: the example signs = %v, want %v", sender, !wantSigned, wantSigned)
			}
			path := strings.TrimPrefix(target, "http://perch.test")
			res := expect(t, a.call("POST", path, "", body, headers...), 200)
			if res.Body["received"] != true || res.Body["ignored"] != nil {
				t.Fatalf("%s (signed %v): %s", sender, signed, res.Raw)
			}
		}
		var feed response
		res := b.get("/api/v1/notifications")
		if err := json.Unmarshal([]byte(res.Body), &feed.Body); err != nil || len(feed.List()) != 4 {
			t.Fatalf("signed %v: want 4 notifications, got %s", signed, res.Body)
		}
		// Inbound's example shows the rich notification's fields.
		for _, n := range feed.List() {
			if n["source"] != perch.SenderInbound {
				continue
			}
			acts, _ := n["actions"].([]any)
			if n["priority"] != float64(perch.PriorityHigh) || n["markdown"] != true || fmt.Sprint(n["tags"]) != "[tada test]" || len(acts) != 1 ||
				acts[0].(map[string]any)["url"] != "http://perch.test/notifications" {
				t.Errorf("inbound's example made %v", n)
			}
		}
	}
}

// parseTryIt reads the URL, headers and body out of a Try it command,
// signing the body as its openssl line would when it has one.
func parseTryIt(t *testing.T, cmd, secret string) (target string, headers []string, body string) {
	t.Helper()
	if m := regexp.MustCompile(`(?m)^body='([^']*)'$`).FindStringSubmatch(cmd); m != nil {
		body = m[1]
	}
	if m := regexp.MustCompile(`--data-binary '([^']*)'`).FindStringSubmatch(cmd); m != nil {
		body = m[1]
	}
	m := regexp.MustCompile(`curl -w '\\n' -X POST '([^']*)'`).FindStringSubmatch(cmd)
	if m == nil || body == "" {
		t.Fatalf("cannot read the example:\n%s", cmd)
	}
	target = m[1]
	for _, h := range regexp.MustCompile(`-H ['"]([^:]+): ([^'"]*)['"]`).FindAllStringSubmatch(cmd, -1) {
		v := h[2]
		if strings.Contains(v, "$signature") {
			if !strings.Contains(cmd, `openssl dgst -sha256 -hmac`) {
				t.Fatalf("a signature without openssl:\n%s", cmd)
			}
			mac := hmac.New(sha256.New, []byte(secret))
			mac.Write([]byte(body))
			v = strings.ReplaceAll(v, "$signature", hex.EncodeToString(mac.Sum(nil)))
		}
		if h[1] != "Content-Type" {
			headers = append(headers, h[1], v)
		}
	}
	return target, headers, body
}

// A platform admin is told while token-less deliveries are broadcast, and
// how to stop it; others are not, and nobody is once it is off.
func TestDashboardTellsAdminsAboutBroadcasts(t *testing.T) {
	t.Parallel()
	const notice = "PERCH_ANONYMOUS_BROADCAST=false"
	for _, on := range []bool{true, false} {
		a := newSite(t, storetest.New(t, store.SQLite), func(o *server.Options) { o.Webhooks.AnonymousBroadcast = on })
		admin, member := newBrowser(t, a.ts), newBrowser(t, a.ts)
		signUpInBrowser(t, admin, "root") // root@example.com is in AdminEmails, once confirmed
		link, _ := url.Parse(a.mail.WaitFor(t, "root@example.com").Link())
		admin.post("/verify-email", url.Values{"token": {link.Query().Get("token")}}).expect(t, 303, "/profile")
		signUpInBrowser(t, member, "Ada")
		p := admin.get("/webhook-tokens").expect(t, 200, "")
		if strings.Contains(p.Body, notice) != on {
			t.Errorf("broadcast %v: the admin's page says %q: %v", on, notice, !on)
		}
		if strings.Contains(member.get("/webhook-tokens").expect(t, 200, "").Body, notice) {
			t.Errorf("broadcast %v: a member is told about it", on)
		}
	}
}

// Pages say that mail was sent only when a mail server is set; without one
// they say it waits for the operator's perch admin outbox.
func TestDashboardIsHonestAboutMail(t *testing.T) {
	t.Parallel()
	for _, outbox := range []bool{false, true} {
		a := newSite(t, storetest.New(t, store.SQLite), func(o *server.Options) {
			if outbox {
				o.Mailer = nil
			}
		})
		b := newBrowser(t, a.ts)
		sent, waits := "We sent", "perch admin outbox"
		if outbox {
			sent, waits = waits, "We sent"
		}
		check := func(what string, p *page) {
			t.Helper()
			p.contains(t, sent)
			if strings.Contains(p.Body, waits) {
				t.Errorf("outbox %v: %s says %q", outbox, what, waits)
			}
		}
		b.post("/signup", url.Values{"name": {"Ada"}, "email": {emailFor("Ada")}, "password": {goodPassword}}).expect(t, 303, "/notifications")
		check("sign-up", b.get("/notifications"))
		b.post("/profile", url.Values{"name": {"Ada"}, "email": {"ada@new.example.com"}, "current_password": {goodPassword}}).expect(t, 303, "/profile")
		check("the e-mail change", b.get("/profile"))
		check("the invitation", b.post("/org/invitations", url.Values{"email": {"grace@example.com"}, "role": {"member"}}).expect(t, 200, ""))

		other := newBrowser(t, a.ts)
		if outbox {
			sent = "perch admin outbox"
		} else {
			sent = "on its way"
		}
		check("forgot-password", other.post("/forgot-password", url.Values{"email": {emailFor("Ada")}}).expect(t, 200, ""))
	}
}

// The dashboard's 404, 429 and 500 are pages for people: HTML in the
// dashboard's layout, saying what happened in words, and nothing internal.
func TestDashboardErrorPagesAreForPeople(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite), func(o *server.Options) {
		o.Limits.Auth = perch.Limit{Count: 1, Period: time.Minute}
	})
	b := newBrowser(t, a.ts)
	html := func(p *page) {
		t.Helper()
		p.contains(t, "<!doctype html>", `<link rel="stylesheet" href="/assets/style.css">`)
		if strings.Contains(p.Body, `"error"`) || strings.Contains(p.Body, "rate_limited") {
			t.Fatalf("an error page shows the API's answer: %.800s", p.Body)
		}
	}
	html(b.get("/no/such/page").expect(t, 404, "").contains(t, "Page not found"))

	wrong := url.Values{"email": {"nobody@example.com"}, "password": {"wrong password"}}
	b.post("/signin", wrong).expect(t, 401, "")
	p := b.do("POST", "/signin", wrong)
	html(p.expect(t, 429, "").contains(t, "Please wait 60 seconds, then try again."))
	if strings.Contains(p.Body, "Retry-After") {
		t.Errorf("the 429 page says Retry-After to a person: %.800s", p.Body)
	}

	// A database gone away is a 500 that says so without internals.
	s := storetest.New(t, store.SQLite)
	broken := newSite(t, s)
	ada := newBrowser(t, broken.ts)
	signUpInBrowser(t, ada, "Ada")
	s.Close()
	p = ada.get("/webhook-tokens").expect(t, 500, "").contains(t, "Something went wrong on our side")
	html(p)
	if strings.Contains(p.Body, "sql") || strings.Contains(p.Body, "closed") {
		t.Errorf("the 500 page shows internals: %.800s", p.Body)
	}
}

// resetLink makes a live password-reset link's token for the account with
// email, as forgot-password would mail it.
func (a *site) resetLink(email string) string {
	a.t.Helper()
	u, _, err := a.store.UserCredentials(a.t.Context(), email)
	if err != nil {
		a.t.Fatal(err)
	}
	raw, hash := auth.NewToken(perch.EmailTokenPrefix)
	if err := a.store.CreateEmailToken(a.t.Context(), u.ID, perch.EmailPasswordReset, u.Email, hash, a.clock.Now().Add(perch.PasswordResetTTL)); err != nil {
		a.t.Fatal(err)
	}
	return raw
}

// TestDashboardResetLinkSaysAtOnceWhenItIsDead: a reset page opened with a
// missing, used or expired link says so before anyone types a password,
// and offers a new link.
func TestDashboardResetLinkSaysAtOnceWhenItIsDead(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s)
		b := newBrowser(t, a.ts)
		signUpInBrowser(t, b, "Ada")
		anon := newBrowser(t, a.ts)
		anon.get("/reset-password").expect(t, 400, "").contains(t, "incomplete", `href="/forgot-password"`)
		anon.get("/reset-password?token=pem_never_issued").expect(t, 400, "").contains(t, "already used or has expired", `href="/forgot-password"`)

		link := a.resetLink("ada@example.com")
		page := anon.get("/reset-password?token="+link).expect(t, 200, "").contains(t, "For ada@example.com", `name="password"`)
		if strings.Contains(page.Body, "already used") {
			t.Fatal("a live link is called dead")
		}
		anon.post("/reset-password", url.Values{"token": {link}, "password": {"a brand new password"}}).expect(t, 303, "/signin")
		// Spent: the same link now says so at once.
		dead := anon.get("/reset-password?token="+link).expect(t, 400, "").contains(t, "already used or has expired")
		if strings.Contains(dead.Body, `name="password"`) {
			t.Fatal("a dead link still offers the form")
		}
	})
}
