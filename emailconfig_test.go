package perch

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

func fieldsOf(err error) []string {
	var pe *Error
	if !errors.As(err, &pe) {
		return nil
	}
	return slices.Sorted(maps.Keys(pe.Fields))
}

func TestEmailSettingsValidate(t *testing.T) {
	t.Parallel()
	pw := func(s string) *string { return &s }
	good := EmailSettings{Host: "smtp.example.com", Port: 587, Username: "perch", Password: pw("secret"), From: "Perch <perch@example.com>", TLS: MailTLSStartTLS}
	tests := []struct {
		name   string
		change func(*EmailSettings)
		want   []string // the fields refused
	}{
		{"good", func(*EmailSettings) {}, nil},
		{"IPv4 host", func(e *EmailSettings) { e.Host = "192.0.2.7" }, nil},
		{"IPv6 host", func(e *EmailSettings) { e.Host = "2001:db8::25" }, nil},
		{"implicit TLS", func(e *EmailSettings) { e.TLS = MailTLSImplicit; e.Port = 465 }, nil},
		{"no sign-in without TLS", func(e *EmailSettings) { e.TLS = MailTLSNone; e.Username = ""; e.Password = nil }, nil},
		{"sign-in without TLS to localhost", func(e *EmailSettings) { e.TLS = MailTLSNone; e.Host = "localhost" }, nil},
		{"bare From address", func(e *EmailSettings) { e.From = "perch@example.com" }, nil},
		{"From at localhost", func(e *EmailSettings) { e.From = "Perch <perch@localhost>" }, nil},
		{"password omitted", func(e *EmailSettings) { e.Password = nil }, nil},
		{"everything missing", func(e *EmailSettings) { *e = EmailSettings{} }, []string{"from", "host", "port", "tls"}},
		{"host with a scheme", func(e *EmailSettings) { e.Host = "smtp://smtp.example.com" }, []string{"host"}},
		{"host with a port", func(e *EmailSettings) { e.Host = "smtp.example.com:587" }, []string{"host"}},
		{"host with a space", func(e *EmailSettings) { e.Host = "smtp example.com" }, []string{"host"}},
		{"host with a zone", func(e *EmailSettings) { e.Host = "fe80::1%eth0" }, []string{"host"}},
		{"host label too long", func(e *EmailSettings) { e.Host = strings.Repeat("a", 64) + ".example.com" }, []string{"host"}},
		{"port 0", func(e *EmailSettings) { e.Port = 0 }, []string{"port"}},
		{"port 65536", func(e *EmailSettings) { e.Port = 65536 }, []string{"port"}},
		{"From not an address", func(e *EmailSettings) { e.From = "Perch" }, []string{"from"}},
		{"From with a header", func(e *EmailSettings) { e.From = "perch@example.com\r\nBcc: x@example.com" }, []string{"from"}},
		{"From with two addresses", func(e *EmailSettings) { e.From = "a@example.com, b@example.com" }, []string{"from"}},
		{"unknown TLS", func(e *EmailSettings) { e.TLS = "ssl" }, []string{"tls"}},
		{"sign-in without TLS elsewhere", func(e *EmailSettings) { e.TLS = MailTLSNone }, []string{"tls"}},
		{"password with a NUL", func(e *EmailSettings) { e.Password = pw("a\x00b") }, []string{"password"}},
		{"password too long", func(e *EmailSettings) { e.Password = pw(strings.Repeat("p", 1001)) }, []string{"password"}},
		{"username with a line break", func(e *EmailSettings) { e.Username = "a\nb" }, []string{"username"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := good
			tt.change(&e)
			err := e.Validate()
			if got := fieldsOf(err); !slices.Equal(got, tt.want) {
				t.Errorf("refused fields = %v (%v), want %v", got, err, tt.want)
			}
			if err != nil && ErrorCode(err) != EVALIDATION {
				t.Errorf("code = %s, want %s", ErrorCode(err), EVALIDATION)
			}
		})
	}
}

func TestNewsletterIssueValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		subject, body string
		want          []string
	}{
		{"Spring news", "Hello\n\n\tEveryone", nil},
		{strings.Repeat("s", 200), strings.Repeat("b", 100_000), nil},
		{"", "", []string{"body", "subject"}},
		{"   ", "  \n ", []string{"body", "subject"}},
		{strings.Repeat("s", 201), strings.Repeat("b", 100_001), []string{"body", "subject"}},
		{"Two\nlines", "ok", []string{"subject"}},
		{"ok", "bell\a", []string{"body"}},
	}
	for _, tt := range tests {
		n := NewsletterIssue{Subject: tt.subject, Body: tt.body}
		if got := fieldsOf(n.Validate()); !slices.Equal(got, tt.want) {
			t.Errorf("Validate(%.20q, %.20q) refused %v, want %v", tt.subject, tt.body, got, tt.want)
		}
	}
	n := NewsletterIssue{Subject: "  Hi  ", Body: "\n Body \n"}
	if err := n.Validate(); err != nil || n.Subject != "Hi" || n.Body != "Body" {
		t.Errorf("Validate left %q and %q (%v), want them trimmed", n.Subject, n.Body, err)
	}
}

func TestRedactChangesKeepsFlags(t *testing.T) {
	t.Parallel()
	got := RedactChanges(map[string]any{"password_changed": true, "password": "hunter2", "secret_rotated": false, "token": "x"})
	if got["password_changed"] != true || got["secret_rotated"] != false {
		t.Errorf("flags were redacted: %v", got)
	}
	if got["password"] != Redacted || got["token"] != Redacted {
		t.Errorf("secrets were kept: %v", got)
	}
}
