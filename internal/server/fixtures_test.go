package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// whSenderOf maps a receiver path (spec name or alias) to the sender its webhook
// tokens are made for.
func whSenderOf(path string) (string, bool) {
	switch path {
	case "/webhooks/incidents", "/webhooks/pagerduty":
		return "incidents", true
	case "/webhooks/code-host", "/webhooks/github":
		return "code-host", true
	case "/webhooks/monitoring", "/webhooks/datadog":
		return "monitoring", true
	case "/webhooks/inbound":
		return "inbound", true
	}
	return "", false
}

// TestSharedFixturesThroughReceivers posts every payload listed in the shared
// EXPECTED.json to its receiver, with a webhook token for that receiver's
// sender, and checks the stored notification through the history API. The
// senders' published payloads are read in place, never copied here.
func TestSharedFixturesThroughReceivers(t *testing.T) {
	t.Parallel()
	dir, cases := testenv.WebhookCases(t)

	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		for _, c := range cases {
			t.Run(c.File, func(t *testing.T) {
				sender, ok := whSenderOf(c.Path)
				if !ok {
					t.Skipf("%s has no webhook-token sender yet (DESIGN.md §4 lists incidents, code-host, monitoring, inbound)", c.Path)
				}
				body, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.File)))
				if err != nil {
					t.Fatal(err)
				}
				// A token of its own per case: de-duplication keys are per
				// token, so no case can pass for another's redelivery.
				_, token := a.whToken(ada, sender, "user", "")
				var headers []string
				for k, v := range c.Headers {
					headers = append(headers, k, v)
				}
				before := a.whHistory(ada, "?limit=1")
				since := ""
				if len(before) == 1 {
					since = "?since=" + before[0].ID
				}

				res := expect(t, a.whDeliver(c.Path, token, string(body), headers...), 200)
				ans := whAnswerOf(t, res)
				created := a.whHistory(ada, since) // what this delivery added

				if c.Ignored {
					if ans.Ignored == "" || len(ans.IDs) != 0 {
						t.Fatalf("want ignored, got %s", res.Raw)
					}
					if len(created) != 0 {
						t.Fatalf("an ignored delivery created %+v", created)
					}
					return
				}
				if ans.Ignored != "" || ans.Duplicate || len(ans.IDs) != 1 {
					t.Fatalf("want one new notification, got %s", res.Raw)
				}
				if len(created) != 1 || created[0].ID != ans.IDs[0] {
					t.Fatalf("history gained %+v, want exactly notification %s", created, ans.IDs[0])
				}
				n := created[0]
				if n.Severity != c.Severity {
					t.Errorf("severity = %q, want %q", n.Severity, c.Severity)
				}
				if n.Tab != c.Tab {
					t.Errorf("tab = %q, want %q", n.Tab, c.Tab)
				}
				title := strings.ToLower(n.Title)
				for _, want := range c.TitleContains {
					if !strings.Contains(title, strings.ToLower(want)) {
						t.Errorf("title %q does not contain %q", n.Title, want)
					}
				}
				for _, not := range c.TitleExcludes {
					if strings.Contains(title, strings.ToLower(not)) {
						t.Errorf("title %q contains %q", n.Title, not)
					}
				}
				if c.URL != "" && n.URL != c.URL {
					t.Errorf("url = %q, want %q", n.URL, c.URL)
				}
				if n.Source != sender || n.Scope.Type != "user" || n.Scope.ID != ada.ID || n.Read {
					t.Errorf("source %q, scope %+v, read %v", n.Source, n.Scope, n.Read)
				}
			})
		}
	})
}
