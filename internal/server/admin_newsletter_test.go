package server

import (
	"encoding/csv"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/apitest"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// subscribe opts acc in to the newsletter (or out) and checks the answer.
func (a *api) subscribe(acc *account, on bool) {
	a.t.Helper()
	a.clock.Advance(time.Second) // opt-ins never share an instant
	got := expect(a.t, a.call("PATCH", "/api/v1/users/me", acc.Access, map[string]bool{"newsletter": on}), 200).Data()
	if got["newsletter"] != on {
		a.t.Fatalf("PATCH newsletter %v answered %v", on, got["newsletter"])
	}
}

// oneClick posts RFC 8058's one-click unsubscribe to link as a mail
// provider does: a form body, and no credential or cookie.
func (a *api) oneClick(link string) *response {
	a.t.Helper()
	req := httptest.NewRequest("POST", link, strings.NewReader("List-Unsubscribe=One-Click"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	a.srv.ServeHTTP(rec, req)
	return apitest.NewResponse(a.t, "POST "+link, rec.Code, rec.Header(), rec.Body.Bytes())
}

// subscriberIDs lists the subscribers' ids as the admin sees them, a page
// of limit at a time, and the total the first page gave.
func (a *api) subscriberIDs(root *account, limit int) (ids []string, total float64) {
	a.t.Helper()
	cursor := ""
	for range 20 {
		path := "/api/v1/admin/newsletter?limit=" + strconv.Itoa(limit)
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		res := expect(a.t, a.call("GET", path, root.Access, nil), 200)
		d := res.Data()
		if cursor == "" {
			total = d["subscribers"].(float64)
		}
		for _, it := range d["items"].([]any) {
			ids = append(ids, it.(map[string]any)["user_id"].(string))
		}
		next, _ := res.Body["next_cursor"].(string)
		if next == "" {
			return ids, total
		}
		cursor = next
	}
	a.t.Fatal("the pages never ended")
	return nil, 0
}

func TestNewsletterOptInListExportAndSend(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		ada, bob, eve := a.register("Ada"), a.register("Bob"), a.register("Eve")
		a.verifyEmail(ada)
		a.verifyEmail(bob)

		if got := expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200).Data(); got["newsletter"] != false {
			t.Fatalf("a new user takes the newsletter: %v", got["newsletter"])
		}
		a.subscribe(ada, true)
		a.subscribe(bob, true)
		a.subscribe(eve, true) // unconfirmed: not sent to
		if got := expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200).Data(); got["newsletter"] != true {
			t.Fatalf("GET /users/me after opting in: newsletter %v", got["newsletter"])
		}

		ids, total := a.subscriberIDs(root, 1)
		if total != 2 || !slices.Equal(ids, []string{bob.ID, ada.ID}) {
			t.Fatalf("subscribers = %v (total %v), want Bob then Ada", ids, total)
		}
		expect(t, a.call("GET", "/api/v1/admin/newsletter?cursor=nonsense", root.Access, nil), 400)

		// The export: every subscriber, as CSV.
		res := expect(t, a.call("GET", "/api/v1/admin/newsletter?limit=1", root.Access, nil, "Accept", "text/csv"), 200)
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
			t.Fatalf("Content-Type = %q", ct)
		}
		rows, err := csv.NewReader(strings.NewReader(res.Raw)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 || !slices.Equal(rows[0], []string{"user_id", "email", "name", "subscribed_at"}) ||
			rows[1][0] != bob.ID || rows[2][1] != ada.Email || rows[2][2] != "Ada" {
			t.Fatalf("CSV = %v", rows)
		}
		if _, err := time.Parse(time.RFC3339, rows[1][3]); err != nil {
			t.Errorf("subscribed_at %q: %v", rows[1][3], err)
		}

		// The send: one message to each subscriber, with one-click unsubscribe.
		res = expect(t, a.call("POST", "/api/v1/admin/newsletter", root.Access,
			map[string]string{"subject": "  Spring news  ", "body": "Hello,\n\nPerch has news."}), 202)
		if res.Data()["queued"] != float64(2) {
			t.Fatalf("queued = %v, want 2", res.Data()["queued"])
		}
		links := map[string]string{}
		for _, acc := range []*account{ada, bob} {
			m := a.mail.WaitFor(t, acc.Email)
			if text := strings.ReplaceAll(m.Text, "\r\n", "\n"); m.Subject != "Spring news" || !strings.HasPrefix(text, "Hello,\n\nPerch has news.") {
				t.Errorf("to %s: %q\n%s", acc.Email, m.Subject, m.Text)
			}
			if got := m.Header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
				t.Errorf("to %s: List-Unsubscribe-Post = %q", acc.Email, got)
			}
			header := m.Header.Get("List-Unsubscribe")
			link := strings.TrimSuffix(strings.TrimPrefix(header, "<"), ">")
			if !strings.HasPrefix(header, "<http://perch.test/api/v1/newsletter/unsubscribe?token=") || link == header {
				t.Fatalf("to %s: List-Unsubscribe = %q", acc.Email, header)
			}
			page := strings.Replace(link, "/api/v1/newsletter/", "/newsletter/", 1)
			if !strings.Contains(m.Text, page) {
				t.Errorf("to %s: the body does not link to %s:\n%s", acc.Email, page, m.Text)
			}
			links[acc.ID] = link
		}
		a.srv.mailing.Wait()
		if n := a.mail.Count(eve.Email); n != 1 { // her verification mail alone
			t.Errorf("Eve, unconfirmed, got %d messages", n)
		}
		for _, acc := range []*account{ada, bob} {
			if n := a.mail.Count(acc.Email); n != 2 { // verification, newsletter
				t.Errorf("%s got %d messages, want the newsletter once", acc.Email, n)
			}
		}

		// One click, with no credential: Ada is off the list.
		res = expect(t, a.oneClick(links[ada.ID]), 200)
		if d := res.Data(); d["unsubscribed"] != true || d["email"] != ada.Email {
			t.Errorf("one-click answer = %v", d)
		}
		if ids, total := a.subscriberIDs(root, 50); total != 1 || !slices.Equal(ids, []string{bob.ID}) {
			t.Errorf("subscribers after Ada left = %v (total %v)", ids, total)
		}
		if got := expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200).Data(); got["newsletter"] != false {
			t.Errorf("Ada still takes the newsletter")
		}
		expect(t, a.oneClick(links[ada.ID]), 200) // again: harmless

		// A browser opening the link is sent to the page that asks first.
		res = expect(t, a.call("GET", strings.TrimPrefix(links[bob.ID], "http://perch.test"), "", nil), 303)
		if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, "/newsletter/unsubscribe?token=") {
			t.Errorf("Location = %q", loc)
		}
		if ids, _ := a.subscriberIDs(root, 50); !slices.Equal(ids, []string{bob.ID}) {
			t.Errorf("a GET unsubscribed: %v", ids)
		}

		// Audited: the send by the admin, the leaving by the subscriber, once.
		sent, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditNewsletterSent})
		if err != nil || len(sent) != 1 || sent[0].Changes["subject"] != "Spring news" || sent[0].Changes["recipients"] != float64(2) ||
			sent[0].Actor.Type != perch.ActorAdmin {
			t.Fatalf("audit of the send: %+v, %v", sent, err)
		}
		left, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditNewsletterLeft})
		if err != nil || len(left) != 1 || left[0].Actor.Type != perch.ActorUser || left[0].Actor.ID != ada.ID ||
			left[0].Target.ID != ada.ID || left[0].OrgID != ada.OrgID {
			t.Fatalf("audit of the leaving: %+v, %v", left, err)
		}
		updated, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditUserUpdated, ActorID: ada.ID})
		if err != nil || len(updated) != 1 || updated[0].Changes["newsletter"] != true {
			t.Fatalf("audit of the opt-in: %+v, %v", updated, err)
		}
	})
}

func TestNewsletterUnsubscribeRefusesBadTokens(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.verifyEmail(ada)
		a.subscribe(ada, true)
		good := a.srv.unsubscribeToken(ada.ID)
		id, mac, _ := strings.Cut(good, ".")
		tampered := []byte(mac)
		tampered[0] ^= 1
		for _, token := range []string{
			"x", "x.y", id, id + ".", id + "." + string(tampered), "nosuchuser0000000000." + mac,
			a.srv.unsubscribeToken("nosuchuser0000000000"), // signed, but no such user
		} {
			res := expect(t, a.oneClick("/api/v1/newsletter/unsubscribe?token="+url.QueryEscape(token)), 404)
			if res.ErrorMessage() == "" {
				t.Errorf("token %q: no message", token)
			}
		}
		expect(t, a.oneClick("/api/v1/newsletter/unsubscribe"), 400)

		// A token signed under another key is no token here.
		b := newAPI(t, s)
		expect(t, b.oneClick("/api/v1/newsletter/unsubscribe?token="+url.QueryEscape(good)), 404)

		if got := expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200).Data(); got["newsletter"] != true {
			t.Error("a bad token unsubscribed Ada")
		}
		expect(t, a.oneClick("/api/v1/newsletter/unsubscribe?token="+url.QueryEscape(good)), 200)
	})
}

func TestNewsletterSendIsValidated(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		res := expect(t, a.call("POST", "/api/v1/admin/newsletter", root.Access, map[string]string{"subject": "two\nlines", "body": " "}), 422)
		if f := res.Fields(); f["subject"] == nil || f["body"] == nil {
			t.Errorf("fields = %v", f)
		}
		expect(t, a.call("POST", "/api/v1/admin/newsletter", root.Access, map[string]string{"subject": strings.Repeat("s", 201), "body": "b"}), 422)
		expect(t, a.call("POST", "/api/v1/admin/newsletter", root.Access, `{"subject": 1}`), 400)
		expect(t, a.call("PATCH", "/api/v1/users/me", root.Access, `{"newsletter": "yes"}`), 400)
		if sent, _, _ := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditNewsletterSent}); len(sent) != 0 {
			t.Errorf("refused sends were audited: %+v", sent)
		}
	})
}

func TestNewsletterUnsubscribeIsLimitedPerAddress(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.Limits.User = perch.Limit{Count: 2, Period: time.Minute} })
		for range 2 {
			expect(t, a.oneClick("/api/v1/newsletter/unsubscribe?token=x.y"), 404)
		}
		res := expect(t, a.oneClick("/api/v1/newsletter/unsubscribe?token=x.y"), 429)
		if res.Header.Get("Retry-After") == "" {
			t.Error("a 429 without Retry-After")
		}
		expect(t, a.call("GET", "/api/v1/newsletter/unsubscribe?token=x.y", "", nil), 429)
		// Another address has its own allowance.
		expect(t, a.call("POST", "/api/v1/newsletter/unsubscribe?token=x.y", "", nil, "RemoteAddr", "198.51.100.7:1234"), 404)
	})
}
