package web_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// The feed's script routes: the history with each Markdown message
// rendered, one message as HTML for a notification that arrived live, both
// only for notifications the user sees; errors in the API's shape, 401 when
// signed out, and the cross-origin check on the action run.
func TestFeedScriptRoutes(t *testing.T) {
	t.Parallel()
	a := newSite(t, storetest.New(t, store.SQLite))
	b := newBrowser(t, a.ts)
	signUpInBrowser(t, b, "Ada")
	ada := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": emailFor("Ada"), "password": goodPassword}), 200).Data()["access_token"].(string)
	grace := a.register("Grace")
	deliver := func(token string, body map[string]any) string {
		t.Helper()
		hook := expect(t, a.call("POST", "/api/v1/webhook-tokens", token, map[string]string{"label": "t", "sender": "inbound"}), 201).Data()["raw_token"].(string)
		res := expect(t, a.call("POST", "/webhooks/inbound?token="+url.QueryEscape(hook), "", body), 200)
		return res.Body["ids"].([]any)[0].(string)
	}
	md := deliver(ada, map[string]any{"title": "Deploy", "message": "**done** [log](javascript:alert(1)) <b>x</b>", "markdown": true})
	plain := deliver(ada, map[string]any{"title": "Plain", "message": "**not markdown** <b>x</b>"})
	other := deliver(grace.Access, map[string]any{"title": "Grace's", "message": "*hers*", "markdown": true})

	// The history: the API's, with HTML for the Markdown one only.
	p := b.get("/feed/history?limit=10").expect(t, 200, "")
	var hist struct {
		Data []map[string]any `json:"data"`
	}
	if err := json.Unmarshal([]byte(p.Body), &hist); err != nil || len(hist.Data) != 2 {
		t.Fatalf("history %v: %s", err, p.Body)
	}
	for _, n := range hist.Data {
		html, _ := n["html"].(string)
		switch n["id"] {
		case md:
			if html != "<p><strong>done</strong> log &lt;b&gt;x&lt;/b&gt;</p>\n" || n["message"] == nil {
				t.Errorf("the Markdown one: html %q", html)
			}
		case plain:
			if _, ok := n["html"]; ok {
				t.Errorf("the plain one has html %q", html)
			}
		}
	}
	if b.get("/feed/history?limit=0").Status != 400 {
		t.Error("a bad limit is not the API's 400")
	}

	// One message, as HTML: rendered when Markdown, escaped when not.
	for id, want := range map[string]string{md: "<strong>done</strong>", plain: "**not markdown** &lt;b&gt;x&lt;/b&gt;"} {
		p := b.get("/feed/notifications/"+id+"/body").expect(t, 200, "")
		if !strings.Contains(p.Body, want) || strings.Contains(p.Body, "<b>") {
			t.Errorf("body of %s: %q, want it to hold %q", id, p.Body, want)
		}
	}
	for _, id := range []string{other, "0", "abc", "-1", "01", "99999"} {
		p := b.get("/feed/notifications/" + id + "/body")
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		json.Unmarshal([]byte(p.Body), &e)
		if p.Status != 404 || e.Error.Code != "not_found" {
			t.Errorf("body of %s: %d %s, want 404 not_found", id, p.Status, p.Body)
		}
	}

	// Signed out: 401 in the API's shape, for the script to renew.
	out := newBrowser(t, a.ts)
	if p := out.get("/feed/history"); p.Status != 401 || !strings.Contains(p.Body, `"unauthorized"`) {
		t.Errorf("signed out: %d %s", p.Status, p.Body)
	}
	// Running an action from another site is refused before anything runs.
	cross := []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}
	if p := b.post("/feed/notifications/"+md+"/actions/a1", nil, cross...); p.Status != 403 {
		t.Errorf("cross-origin action run: %d %s", p.Status, p.Body)
	}
}
