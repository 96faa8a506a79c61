package senders

import (
	"net/http"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/testenv"
)

// checkParsed is the property every parser keeps on any input: a bad request
// with a message, or a result whose events can be stored and shown as they
// are.
func checkParsed(t *testing.T, res Result, err error, source string) {
	t.Helper()
	if err != nil {
		if code := perch.ErrorCode(err); code != perch.EBADREQUEST {
			t.Fatalf("error code = %q (%v), want %q", code, err, perch.EBADREQUEST)
		}
		if perch.ErrorMessage(err) == "" {
			t.Fatal("bad request without a message")
		}
		if len(res.Events) != 0 || res.Ignored != "" {
			t.Fatalf("error %v came with a result %#v", err, res)
		}
		return
	}
	if res.Ignored != "" {
		if len(res.Events) != 0 {
			t.Fatalf("ignored %q yet %d events", res.Ignored, len(res.Events))
		}
		return
	}
	if len(res.Events) == 0 {
		t.Fatal("neither events nor a reason to ignore")
	}
	for i, e := range res.Events {
		switch {
		case !perch.ValidSeverity(e.Severity):
			t.Errorf("event %d: severity %q", i, e.Severity)
		case strings.TrimSpace(e.Title) == "":
			t.Errorf("event %d: empty title", i)
		case strings.TrimSpace(e.Tab) == "":
			t.Errorf("event %d: empty tab", i)
		case e.Source != source:
			t.Errorf("event %d: source %q, want %q", i, e.Source, source)
		case utf8.RuneCountInString(e.Title) > maxTitle:
			t.Errorf("event %d: title of %d characters", i, utf8.RuneCountInString(e.Title))
		case utf8.RuneCountInString(e.Message) > maxMessage:
			t.Errorf("event %d: message of %d characters", i, utf8.RuneCountInString(e.Message))
		case strings.ContainsFunc(e.Title+e.Tab, unicode.IsControl):
			t.Errorf("event %d: control character in title %q or tab %q", i, e.Title, e.Tab)
		case strings.ContainsRune(e.Message, 0):
			t.Errorf("event %d: NUL in message %q", i, e.Message)
		case strings.ContainsRune(e.URL+e.DeliveryID, 0) || !utf8.ValidString(e.Title+e.Tab+e.Message+e.URL+e.DeliveryID):
			t.Errorf("event %d: a NUL or invalid UTF-8, which PostgreSQL cannot store, in %#v", i, e)
		case e.URL != "" && webURL(e.URL) != e.URL:
			t.Errorf("event %d: url %q is not a web link", i, e.URL)
		}
	}
}

func FuzzInbound(f *testing.F) {
	for _, b := range testenv.Seeds(f, "inbound") {
		f.Add(b)
	}
	for _, s := range []string{``, `{}`, `[]`, `null`, `{"title":1}`, `{"title":"t","severity":"fatal"}`, `{"title":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := Inbound(body)
		checkParsed(t, res, err, perch.SourceInbound)
	})
}

func FuzzPagerDuty(f *testing.F) {
	for _, b := range testenv.Seeds(f, "pagerduty") {
		f.Add("", b)
		f.Add("hdr-1", b)
	}
	f.Add("", []byte(`{"event":{"event_type":"incident.x","data":null}}`))
	f.Add("", []byte(`{"messages":[{"event":"incident.trigger","incident":{}}]}`))
	f.Fuzz(func(t *testing.T, webhookID string, body []byte) {
		h := http.Header{}
		h.Set("X-Webhook-Id", webhookID)
		res, err := PagerDuty(h, body)
		checkParsed(t, res, err, perch.SourceIncidents)
	})
}

func FuzzGitHub(f *testing.F) {
	for name, b := range testenv.Seeds(f, "github") {
		kind, _, _ := strings.Cut(name, ".")
		f.Add(kind, false, b)
	}
	f.Add("pull_request", true, []byte("payload=%7B%22action%22%3A%22opened%22%2C%22pull_request%22%3A%7B%7D%7D"))
	f.Add("", false, []byte(`{}`))
	f.Fuzz(func(t *testing.T, kind string, form bool, body []byte) {
		h := http.Header{}
		h.Set("X-GitHub-Event", kind)
		h.Set("X-GitHub-Delivery", "d-1")
		if form {
			h.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		res, err := GitHub(h, body)
		checkParsed(t, res, err, perch.SourceCodeHost)
	})
}

func FuzzDatadog(f *testing.F) {
	for _, b := range testenv.Seeds(f, "datadog") {
		f.Add(b)
	}
	for _, s := range []string{`{"title":"[Triggered on {a:b}]"}`, `{"title":"[[]]"}`, `{"title":"[é] [No Data"}`, `{"title":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := Datadog(http.Header{}, body)
		checkParsed(t, res, err, perch.SourceMonitor)
	})
}
