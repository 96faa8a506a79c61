package web_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/server"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

const newsletterBox = `name="newsletter" type="checkbox" value="on"`

// A person turns the newsletter on from their profile, and leaves it from
// the link in an issue without signing in.
func TestDashboardNewsletterOptInAndUnsubscribe(t *testing.T) {
	t.Parallel()
	box, err := secrets.New(secrets.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	a := newSite(t, storetest.New(t, store.SQLite), func(o *server.Options) { o.Secrets = box })
	ada := newBrowser(t, a.ts)
	signUpInBrowser(t, ada, "Ada")
	link, _ := url.Parse(a.mail.WaitFor(t, emailFor("Ada")).Link())
	ada.post("/verify-email", url.Values{"token": {link.Query().Get("token")}}).expect(t, 303, "/profile")

	p := ada.get("/profile").expect(t, 200, "").contains(t, "Newsletter", newsletterBox+` aria-describedby`)
	if strings.Contains(p.Body, newsletterBox+" checked") {
		t.Fatal("the newsletter is on for a new account")
	}
	ada.post("/profile/newsletter", url.Values{"newsletter": {"on"}}).expect(t, 303, "/profile")
	ada.get("/profile").expect(t, 200, "").contains(t, newsletterBox+" checked", "You will get Perch&#39;s newsletter.")

	root := a.register("Root")
	if err := a.store.GrantAdmin(t.Context(), root.Email); err != nil {
		t.Fatal(err)
	}
	expect(t, a.call("POST", "/api/v1/admin/newsletter", root.Access, map[string]string{"subject": "News", "body": "Hello."}), 202)
	page := a.mail.WaitFor(t, emailFor("Ada")).Link()
	path, ok := strings.CutPrefix(page, "http://perch.test/newsletter/unsubscribe?token=")
	if !ok {
		t.Fatalf("the issue links to %q", page)
	}
	token, _ := url.QueryUnescape(path)

	// Someone signed out opens the link: a page that asks first.
	anon := newBrowser(t, a.ts)
	anon.get("/newsletter/unsubscribe?token="+url.QueryEscape(token)).expect(t, 200, "").
		contains(t, "Leave the newsletter", `name="token" value="`+token+`"`)
	if !strings.Contains(ada.get("/profile").Body, newsletterBox+" checked") {
		t.Fatal("opening the page unsubscribed")
	}
	anon.post("/newsletter/unsubscribe", url.Values{"token": {token}}).expect(t, 200, "").
		contains(t, "You have left the newsletter", emailFor("Ada"))
	if strings.Contains(ada.get("/profile").Body, newsletterBox+" checked") {
		t.Fatal("the newsletter is still on after unsubscribing")
	}
	anon.post("/newsletter/unsubscribe", url.Values{"token": {"x.y"}}).expect(t, 404, "").contains(t, "not valid")

	// On again, and off from the profile: an unticked box is not sent.
	ada.post("/profile/newsletter", url.Values{"newsletter": {"on"}}).expect(t, 303, "/profile")
	ada.post("/profile/newsletter", url.Values{}).expect(t, 303, "/profile")
	ada.get("/profile").expect(t, 200, "").contains(t, "You have left the newsletter.")
	if strings.Contains(ada.get("/profile").Body, newsletterBox+" checked") {
		t.Fatal("the newsletter is still on after unticking it")
	}
}
