package senders

import (
	"errors"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

func TestInbound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body []byte
		want perch.Event
	}{
		{"every field", mustRead(t, "inbound/full.json"), perch.Event{
			Tab: "Deploys", Title: "Deploy of api v2.3.1 finished", Severity: perch.SeverityWarning,
			Message: "Rolled out to 12 hosts in eu-west-1 by the release pipeline.", Source: perch.SourceInbound,
		}},
		{"title only: defaults", mustRead(t, "inbound/minimal.json"), perch.Event{
			Tab: perch.TabInbound, Title: "Nightly backup completed", Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		}},
		{"untidy text and extra members", mustRead(t, "inbound/untidy.json"), perch.Event{
			Tab: perch.TabInbound, Title: "Disk usage report ready", Message: "See the capacity dashboard.",
			Severity: perch.SeverityError, Source: perch.SourceInbound, Tags: []string{"ops"},
		}},
		{"null members read as absent", []byte(`{"title":"T","tab":null,"message":null,"severity":null}`), perch.Event{
			Tab: perch.TabInbound, Title: "T", Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		}},
		{"empty severity is the default", []byte(`{"title":"T","severity":""}`), perch.Event{
			Tab: perch.TabInbound, Title: "T", Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		}},
		{"limits are inclusive and count characters", []byte(`{"title":"` + strings.Repeat("é", 200) +
			`","tab":"` + strings.Repeat("ü", 50) + `","message":"` + strings.Repeat("ß", 4000) + `"}`), perch.Event{
			Tab: strings.Repeat("ü", 50), Title: strings.Repeat("é", 200), Message: strings.Repeat("ß", 4000),
			Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		}},
		{"member names in any case", []byte(`{"TITLE":"T","Severity":"warning"}`), perch.Event{
			Tab: perch.TabInbound, Title: "T", Severity: perch.SeverityWarning, Source: perch.SourceInbound,
		}},
		{"message keeps its lines and tabs", []byte(`{"title":"T","message":"line 1\r\nline 2\n\tindented"}`), perch.Event{
			Tab: perch.TabInbound, Title: "T", Message: "line 1\nline 2\n\tindented", Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		}},
		{"title and tab fold tabs and line breaks", []byte(`{"title":"a\tb\r\nc","tab":"x\ny"}`), perch.Event{
			Tab: "x y", Title: "a b c", Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		}},
		{"a link", []byte(`{"title":"T","url":" https://ci.example.com/builds/42?tab=log "}`), perch.Event{
			Tab: perch.TabInbound, Title: "T", URL: "https://ci.example.com/builds/42?tab=log", Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		}},
		{"message may hold bidirectional characters", []byte(`{"title":"T","message":"\u2067שלום\u2069 ok"}`), perch.Event{
			Tab: perch.TabInbound, Title: "T", Message: "\u2067שלום\u2069 ok", Severity: perch.SeverityInfo, Source: perch.SourceInbound,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Inbound(tt.body)
			checkResult(t, got, err, events(tt.want))
		})
	}
}

func TestInboundBadRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, message string
	}{
		{"empty body", "", "The body is empty; a JSON object is required."},
		{"blank body", " \n\t", "The body is empty; a JSON object is required."},
		{"not JSON", "title=hello", "The body is not valid JSON."},
		{"truncated JSON", `{"title": "hello"`, "The body is not valid JSON."},
		{"trailing data", `{"title": "hello"} {}`, "The body is not valid JSON."},
		{"array", `[{"title": "hello"}]`, "The body must be a JSON object."},
		{"string", `"hello"`, "The body must be a JSON object."},
		{"null", `null`, "The body must be a JSON object."},
		{"no title", `{"message": "body only"}`, "title is required."},
		{"empty object", `{}`, "title is required."},
		{"blank title", `{"title": " \n "}`, "title is required."},
		{"null title", `{"title": null}`, "title is required."},
		{"number title", `{"title": 42}`, "title must be a string."},
		{"object title", `{"title": {"text": "hi"}}`, "title must be a string."},
		{"array tab", `{"title": "T", "tab": ["a"]}`, "tab must be a string."},
		{"bool message", `{"title": "T", "message": true}`, "message must be a string."},
		{"number severity", `{"title": "T", "severity": 2}`, "severity must be a string."},
		{"unknown severity", `{"title": "T", "severity": "critical"}`, "severity must be info, warning or error."},
		{"long title", `{"title": "` + strings.Repeat("é", 201) + `"}`, "title must be at most 200 characters."},
		{"long message", `{"title": "T", "message": "` + strings.Repeat("m", 4001) + `"}`, "message must be at most 4000 characters."},
		{"long tab", `{"title": "T", "tab": "` + strings.Repeat("t", 51) + `"}`, "tab must be at most 50 characters."},
		{"every problem at once", `{"title": 1, "message": [], "severity": "fatal", "tab": {}}`,
			"title must be a string. message must be a string. severity must be info, warning or error. tab must be a string."},
		{"javascript link", `{"title": "T", "url": "javascript:alert(1)"}`, "url must be an http:// or https:// address."},
		{"relative link", `{"title": "T", "url": "/builds/42"}`, "url must be an http:// or https:// address."},
		{"file link", `{"title": "T", "url": "file:///etc/passwd"}`, "url must be an http:// or https:// address."},
		{"number link", `{"title": "T", "url": 42}`, "url must be a string."},
		{"long link", `{"title": "T", "url": "https://x.example/` + strings.Repeat("a", 4096) + `"}`, "url must be at most 4096 bytes."},
		{"NUL in title", `{"title": "a\u0000b"}`, "title must not contain control characters."},
		{"BEL in tab", `{"title": "T", "tab": "a\u0007"}`, "tab must not contain control characters."},
		{"DEL in message", `{"title": "T", "message": "a\u007fb"}`, "message must not contain control characters other than line breaks and tabs."},
		{"NEL in message", `{"title": "T", "message": "a\u0085b"}`, "message must not contain control characters other than line breaks and tabs."},
		{"escape in message", `{"title": "T", "message": "\u001b[31mred"}`, "message must not contain control characters other than line breaks and tabs."},
		{"right-to-left override in title", `{"title": "invoice\u202efdp.exe"}`, "title must not contain bidirectional override or isolate characters."},
		{"controls in every field", `{"title": "\u0000", "message": "\u0000", "tab": "\u0000", "severity": "\u0000"}`,
			"title must not contain control characters. message must not contain control characters other than line breaks and tabs. " +
				"severity must not contain control characters. tab must not contain control characters."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Inbound([]byte(tt.body))
			checkBadRequest(t, err, tt.message)
			checkFields(t, err, tt.message)
			if len(res.Events) != 0 {
				t.Errorf("events = %#v, want none", res.Events)
			}
		})
	}
}

// checkFields checks that an inbound bad request names in Fields each field
// its message names, with the same words.
func checkFields(t *testing.T, err error, message string) {
	t.Helper()
	e, _ := errors.AsType[*perch.Error](err)
	if e == nil || !strings.HasPrefix(message, "title ") && !strings.HasPrefix(message, "message ") &&
		!strings.HasPrefix(message, "tab ") && !strings.HasPrefix(message, "severity ") {
		return // a problem with the body as a whole
	}
	var want []string
	for field, what := range e.Fields {
		want = append(want, field+" "+what+".")
	}
	for _, sentence := range want {
		if !strings.Contains(message, sentence) {
			t.Errorf("fields %v do not match message %q", e.Fields, message)
		}
	}
	if len(want) == 0 || len(want) != strings.Count(message, ".") {
		t.Errorf("fields %v do not name each problem of %q", e.Fields, message)
	}
}
