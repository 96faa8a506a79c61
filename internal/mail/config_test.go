package mail

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw  string
		want Config
	}{
		{"smtp://mail.example.com", Config{Host: "mail.example.com", Port: 587, TLS: TLSOpportunistic}},
		{"smtp+starttls://mail.example.com", Config{Host: "mail.example.com", Port: 587, TLS: TLSStartTLS}},
		{"smtps://mail.example.com", Config{Host: "mail.example.com", Port: 465, TLS: TLSImplicit}},
		{"SMTPS://mail.example.com:2465/", Config{Host: "mail.example.com", Port: 2465, TLS: TLSImplicit}},
		{"smtp://apikey:p%40ss%2Fw%3Ard@smtp.example.com:2525",
			Config{Host: "smtp.example.com", Port: 2525, Username: "apikey", Password: "p@ss/w:rd"}},
		{"smtp://user%40example.com:pw@[::1]:25",
			Config{Host: "::1", Port: 25, Username: "user@example.com", Password: "pw"}},
	}
	for _, tt := range tests {
		got, err := ParseURL(tt.raw)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tt.raw, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseURL(%q) = %#v, want %#v", tt.raw, got, tt.want)
		}
	}
}

func TestParseURLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ raw, want string }{
		{"", "empty"},
		{"http://mail.example.com", `scheme "http" is not supported`},
		{"mail.example.com:587", "not supported"},
		{"smtp://", "no host"},
		{"smtp://user:secret@:25", "no host"},
		{"smtp://mail.example.com:0", "port"},
		{"smtp://mail.example.com:70000", "port"},
		{"smtp://user:secret@mail.example.com:abc", "port"},
		{"smtp://user:se/cret@mail.example.com", "port"}, // unescaped slash
		{"smtp://mail.example.com/relay", "path"},
		{"smtp://mail.example.com?tls=1", "query"},
	}
	for _, tt := range tests {
		_, err := ParseURL(tt.raw)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded, want an error", tt.raw)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseURL(%q) = %v, want it to mention %q", tt.raw, err, tt.want)
		}
		if perch.ErrorCode(err) != perch.EVALIDATION {
			t.Errorf("ParseURL(%q) code = %q, want %q", tt.raw, perch.ErrorCode(err), perch.EVALIDATION)
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "se/cret") {
			t.Errorf("ParseURL(%q) error leaks the password: %v", tt.raw, err)
		}
	}
}

func TestConfigHidesPassword(t *testing.T) {
	t.Parallel()
	cfg, err := ParseURL("smtps://user:hunter2@mail.example.com")
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "smtp", cfg)

	for _, s := range []string{cfg.String(), fmt.Sprint(cfg), fmt.Sprintf("%v", cfg), logged.String()} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("password leaks: %s", s)
		}
	}
	if want := "smtps://user:xxxxx@mail.example.com:465"; cfg.String() != want {
		t.Errorf("String() = %q, want %q", cfg.String(), want)
	}
}
