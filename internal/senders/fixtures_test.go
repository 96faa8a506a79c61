package senders

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/testenv"
)

// TestSharedFixtures feeds every payload listed in the shared EXPECTED.json
// through the parser for its receiver and checks what the notification shows.
func TestSharedFixtures(t *testing.T) {
	t.Parallel()
	// The senders' own published payloads, read in place, never copied here.
	sharedFixtures, cases := testenv.WebhookCases(t)

	for _, c := range cases {
		t.Run(c.File, func(t *testing.T) {
			parse, ok := parserFor(c.Path)
			if !ok {
				t.Skipf("%s is not served by a parser of this package", c.Path)
			}
			body, err := os.ReadFile(filepath.Join(sharedFixtures, filepath.FromSlash(c.File)))
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			for k, v := range c.Headers {
				h.Set(k, v)
			}
			res, err := parse(h, body)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}

			if c.Ignored {
				if res.Ignored == "" || len(res.Events) != 0 {
					t.Fatalf("want ignored, got %+v", res)
				}
				return
			}
			if res.Ignored != "" || len(res.Events) != 1 {
				t.Fatalf("want one event, got %+v", res)
			}
			e := res.Events[0]
			if e.Severity != c.Severity {
				t.Errorf("severity = %q, want %q", e.Severity, c.Severity)
			}
			if e.Tab != c.Tab {
				t.Errorf("tab = %q, want %q", e.Tab, c.Tab)
			}
			for _, s := range c.TitleContains {
				if !strings.Contains(strings.ToLower(e.Title), strings.ToLower(s)) {
					t.Errorf("title %q does not contain %q", e.Title, s)
				}
			}
			for _, s := range c.TitleExcludes {
				if strings.Contains(strings.ToLower(e.Title), strings.ToLower(s)) {
					t.Errorf("title %q contains %q", e.Title, s)
				}
			}
			if c.URL != "" && e.URL != c.URL {
				t.Errorf("url = %q, want %q", e.URL, c.URL)
			}
			t.Logf("%s | %s | %s | %q", e.Severity, e.Title, e.URL, e.Message)
		})
	}
}

// parserFor returns the parser behind a receiver path (spec name or alias).
func parserFor(path string) (func(http.Header, []byte) (Result, error), bool) {
	switch path {
	case "/webhooks/incidents", "/webhooks/pagerduty":
		return PagerDuty, true
	case "/webhooks/code-host", "/webhooks/github":
		return GitHub, true
	case "/webhooks/monitoring", "/webhooks/datadog":
		return Datadog, true
	case "/webhooks/inbound":
		return func(_ http.Header, body []byte) (Result, error) { return Inbound(body) }, true
	}
	return nil, false
}
