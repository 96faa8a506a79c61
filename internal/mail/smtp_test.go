package mail

import (
	"context"
	"errors"
	"html"
	"mime"
	"net"
	netmail "net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const testFrom = "Perch <perch@example.com>"

func mustParse(t *testing.T, raw string) Config {
	t.Helper()
	cfg, err := ParseURL(raw)
	if err != nil {
		t.Fatalf("ParseURL: %v", err)
	}
	cfg.From = testFrom
	return cfg
}

func send(t *testing.T, cfg Config, m Message) error {
	t.Helper()
	s, err := NewSMTP(cfg)
	if err != nil {
		t.Fatalf("NewSMTP: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return s.Send(ctx, m)
}

func TestSMTPDeliversMultipartMessage(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	link := "https://perch.example.com/verify?token=abc&next=%2Fhome"
	m := VerifyEmail("ada@example.org", "Ada", link)

	if err := send(t, mustParse(t, ts.URL("smtp", testUser, testPass)), m); err != nil {
		t.Fatalf("Send: %v", err)
	}

	got := ts.Received()
	if len(got) != 1 {
		t.Fatalf("server received %d messages, want 1", len(got))
	}
	r := got[0]
	if r.From != "perch@example.com" || !slices.Equal(r.To, []string{"ada@example.org"}) {
		t.Errorf("envelope = %q -> %q, want perch@example.com -> [ada@example.org]", r.From, r.To)
	}
	if r.User != testUser {
		t.Errorf("authenticated as %q, want %q", r.User, testUser)
	}

	p := parse(t, r.Data)
	subject, err := new(mime.WordDecoder).DecodeHeader(p.Header.Get("Subject"))
	if err != nil || subject != m.Subject {
		t.Errorf("Subject = %q (%v), want %q", subject, err, m.Subject)
	}
	from, err := netmail.ParseAddress(p.Header.Get("From"))
	if err != nil || from.Address != "perch@example.com" || from.Name != "Perch" {
		t.Errorf("From = %q (%v), want %q", p.Header.Get("From"), err, testFrom)
	}
	if to := p.Header.Get("To"); !strings.Contains(to, "ada@example.org") {
		t.Errorf("To = %q, want ada@example.org", to)
	}
	if _, err := p.Header.Date(); err != nil {
		t.Errorf("Date header: %v", err)
	}
	if id := p.Header.Get("Message-Id"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@example.com>") {
		t.Errorf("Message-ID = %q, want <random@example.com>", id)
	}
	if got := p.Header.Get("Auto-Submitted"); got != "auto-generated" {
		t.Errorf("Auto-Submitted = %q, want auto-generated", got)
	}

	text, ok := p.Parts["text/plain"]
	if !ok || !strings.Contains(text, link) {
		t.Errorf("text/plain part missing or without the link:\n%s", text)
	}
	htm, ok := p.Parts["text/html"]
	if !ok || !strings.Contains(htm, `href="`+html.EscapeString(link)+`"`) {
		t.Errorf("text/html part missing or without the link:\n%s", htm)
	}
}

func TestSMTPTLSModes(t *testing.T) {
	t.Parallel()
	serverTLS, roots := newCert(t)
	plain := startServer(t, serverOptions{})
	startTLS := startServer(t, serverOptions{startTLS: serverTLS})
	implicit := startServer(t, serverOptions{implicitTLS: serverTLS})

	tests := []struct {
		name    string
		srv     *testServer
		url     string
		trust   bool   // configure RootCAs with the test certificate
		wantErr string // "" for success
		wantTLS bool
	}{
		// Credentials cross a plain connection only because the server is
		// on localhost; go-mail refuses that for any other host.
		{"smtp without STARTTLS on offer", plain, plain.URL("smtp", testUser, testPass), false, "", false},
		{"smtp upgrades when offered", startTLS, startTLS.URL("smtp", testUser, testPass), true, "", true},
		{"smtp+starttls", startTLS, startTLS.URL("smtp+starttls", testUser, testPass), true, "", true},
		{"smtp+starttls without STARTTLS on offer", plain, plain.URL("smtp+starttls", testUser, testPass), true, "STARTTLS", false},
		{"smtps", implicit, implicit.URL("smtps", testUser, testPass), true, "", true},
		{"smtps with an untrusted certificate", implicit, implicit.URL("smtps", testUser, testPass), false, "certificate", false},
		{"wrong password", plain, plain.URL("smtp", testUser, "not-"+testPass), false, "535", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(tt.srv.Received())
			cfg := mustParse(t, tt.url)
			if tt.trust {
				cfg.RootCAs = roots
			}
			err := send(t, cfg, PasswordReset("ada@example.org", "Ada", "https://perch.example.com/reset/x"))

			got := tt.srv.Received()[before:]
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Send error = %v, want one mentioning %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), testPass) {
					t.Errorf("error leaks the password: %v", err)
				}
				if len(got) != 0 {
					t.Errorf("server received %d messages, want none", len(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if len(got) != 1 {
				t.Fatalf("server received %d messages, want 1", len(got))
			}
			if got[0].TLS != tt.wantTLS || got[0].User != testUser {
				t.Errorf("TLS = %v, user = %q; want %v, %q", got[0].TLS, got[0].User, tt.wantTLS, testUser)
			}
		})
	}
}

// silentServer accepts connections and never says a word, like a server
// that hangs after the TCP handshake.
func silentServer(t *testing.T) *net.TCPAddr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().(*net.TCPAddr)
}

func TestSMTPHonoursContext(t *testing.T) {
	t.Parallel()
	addr := silentServer(t)
	s, err := NewSMTP(Config{Host: "127.0.0.1", Port: addr.Port, From: testFrom})
	if err != nil {
		t.Fatal(err)
	}
	m := VerifyEmail("ada@example.org", "Ada", "https://perch.example.com/verify/x")

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := s.Send(ctx, m)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Send error = %v, want context.DeadlineExceeded", err)
		}
		// Far below go-mail's own 30 s step timeout.
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Send returned after %v", d)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := s.Send(ctx, m); !errors.Is(err, context.Canceled) {
			t.Errorf("Send error = %v, want context.Canceled", err)
		}
	})
}

func TestNewSMTPRejectsIncompleteConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Port: 587, From: testFrom},
		{Host: "mail.example.com", Port: 587},
		{Host: "mail.example.com", Port: 587, From: "not an address"},
		{Host: "mail.example.com", From: testFrom},
	} {
		if _, err := NewSMTP(cfg); err == nil {
			t.Errorf("NewSMTP(%v, From %q) succeeded, want an error", cfg, cfg.From)
		}
	}
}

func TestSMTPWithoutTLSNeverUpgrades(t *testing.T) {
	t.Parallel()
	serverTLS, _ := newCert(t)
	startTLS := startServer(t, serverOptions{startTLS: serverTLS})
	cfg := mustParse(t, startTLS.URL("smtp", testUser, testPass))
	cfg.TLS = TLSNone
	// The certificate is not trusted: an upgrade would fail the send.
	if err := send(t, cfg, PasswordReset("ada@example.org", "Ada", "https://perch.example.com/reset/x")); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := startTLS.Received()
	if len(got) != 1 || got[0].TLS || got[0].User != testUser {
		t.Fatalf("received %d messages (TLS %v), want one in the clear, signed in", len(got), len(got) > 0 && got[0].TLS)
	}
}

func TestSMTPDeliverAnswersTheServersReply(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	s, err := NewSMTP(mustParse(t, ts.URL("smtp", testUser, testPass)))
	if err != nil {
		t.Fatal(err)
	}
	reply, err := s.Deliver(t.Context(), TestMessage("ada@example.org", "Root", "https://perch.example.com"))
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	if reply == "" {
		t.Error("Deliver answered no reply")
	}
}

func TestSMTPSendsOneClickUnsubscribe(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverOptions{})
	unsubscribe := "https://perch.example.com/api/v1/newsletter/unsubscribe?token=abc.def"
	m := Newsletter("ada@example.org", "Spring news", "Hello", "https://perch.example.com/newsletter/unsubscribe?token=abc.def", unsubscribe)
	if err := send(t, mustParse(t, ts.URL("smtp", testUser, testPass)), m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	p := parse(t, ts.Received()[0].Data)
	if got := p.Header.Get("List-Unsubscribe"); got != "<"+unsubscribe+">" {
		t.Errorf("List-Unsubscribe = %q, want <%s>", got, unsubscribe)
	}
	if got := p.Header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
		t.Errorf("List-Unsubscribe-Post = %q", got)
	}

	// Transactional mail carries neither.
	if err := send(t, mustParse(t, ts.URL("smtp", testUser, testPass)), VerifyEmail("ada@example.org", "Ada", "https://x.test/v")); err != nil {
		t.Fatal(err)
	}
	p = parse(t, ts.Received()[1].Data)
	if p.Header.Get("List-Unsubscribe") != "" || p.Header.Get("List-Unsubscribe-Post") != "" {
		t.Errorf("a verification mail carries List-Unsubscribe headers: %v", p.Header)
	}
}
