package senders

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

// mustRead returns a payload from testdata.
func mustRead(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(name)))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// checkResult fails t unless a parser answered want without error.
func checkResult(t *testing.T, got Result, err error, want Result) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if got.Ignored != want.Ignored {
		t.Errorf("ignored = %q, want %q", got.Ignored, want.Ignored)
	}
	if len(got.Events) != len(want.Events) {
		t.Fatalf("got %d events, want %d:\n got %#v\nwant %#v", len(got.Events), len(want.Events), got.Events, want.Events)
	}
	for i := range want.Events {
		if !reflect.DeepEqual(got.Events[i], want.Events[i]) {
			t.Errorf("event %d:\n got %#v\nwant %#v", i, got.Events[i], want.Events[i])
		}
	}
}

// checkBadRequest fails t unless err is a *perch.Error with code bad_request
// and the given message.
func checkBadRequest(t *testing.T, err error, message string) {
	t.Helper()
	e, ok := errors.AsType[*perch.Error](err)
	if !ok {
		t.Fatalf("error = %v, want a *perch.Error", err)
	}
	if e.Code != perch.EBADREQUEST {
		t.Errorf("code = %q, want %q", e.Code, perch.EBADREQUEST)
	}
	if e.Message != message {
		t.Errorf("message = %q, want %q", e.Message, message)
	}
}

// The constructors below fill the fields fixed by the receiver, so that the
// tables spell out only what each payload decides.

func incidentEvent(e perch.Event) perch.Event {
	e.Tab, e.Source = perch.TabIncidents, perch.SourceIncidents
	return e
}

func codeEvent(e perch.Event) perch.Event {
	e.Tab, e.Source = perch.TabCode, perch.SourceCodeHost
	return e
}

func monitorEvent(e perch.Event) perch.Event {
	e.Tab, e.Source = perch.TabMonitoring, perch.SourceMonitor
	return e
}

func events(e ...perch.Event) Result { return Result{Events: e} }

func TestMultiLine(t *testing.T) {
	t.Parallel()
	if got, want := multiLine("a\r\nb\x00c\td\x1b[0m"), "a\nbc\td[0m"; got != want {
		t.Errorf("multiLine = %q, want %q", got, want)
	}
}

func TestWebURL(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"https://github.com/acme/widgets/pull/1": "https://github.com/acme/widgets/pull/1",
		" http://example.com/x ":                 "http://example.com/x",
		"javascript:alert(1)":                    "",
		"file:///etc/passwd":                     "",
		"/relative/path":                         "",
		"https://":                               "",
		"not a url at all":                       "",
		"":                                       "",
		"https://example.com/" + strings.Repeat("a", perch.MaxURL): "",
	}
	for in, want := range tests {
		if got := webURL(in); got != want {
			t.Errorf("webURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDeliveryID(t *testing.T) {
	t.Parallel()
	if got := deliveryID(" abc\x00def\xff "); got != "abc def" {
		t.Errorf("deliveryID = %q", got)
	}
	if got := deliveryID(strings.Repeat("x", 500)); len(got) != 200 {
		t.Errorf("deliveryID kept %d bytes, want 200", len(got))
	}
}
