package server

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/mail"
	"github.com/perch-dev/perch/internal/mail/mailtest"
	"github.com/perch-dev/perch/internal/secrets"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// addrOf is the port of a test SMTP server.
func addrOf(tb testing.TB, srv *mailtest.Server) int {
	tb.Helper()
	u, err := url.Parse(srv.URL())
	if err != nil {
		tb.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

// mailPort is the port of the API's own test SMTP server.
func mailPort(a *api) int { return addrOf(a.t, a.mail) }

// closedPort is a port on 127.0.0.1 that nothing listens on.
func closedPort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// settingsAt are e-mail settings that reach 127.0.0.1:port without TLS.
func settingsAt(port int) map[string]any {
	return map[string]any{"host": "127.0.0.1", "port": port, "from": "Perch Ops <ops@example.com>", "tls": "none"}
}

const smtpPassword = "s3cret-smtp-passw0rd"

func TestEmailConfigIsStoredAndUsedAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		a.mail.WaitFor(t, root.Email) // the verification mail, sent before any change

		// Before any admin setting: the environment's (the test server).
		cfg := expect(t, a.call("GET", "/api/v1/admin/email-config", root.Access, nil), 200).Data()
		if cfg["source"] != "environment" || cfg["host"] != "127.0.0.1" || cfg["port"] != float64(mailPort(a)) ||
			cfg["from"] != "Perch <perch@example.com>" || cfg["tls"] != "none" || cfg["password_set"] != false {
			t.Fatalf("settings from the environment = %v", cfg)
		}

		// A second server, which wants a sign-in; the settings point there.
		second := mailtest.StartWithLogin(t, "perch", smtpPassword)
		in := settingsAt(addrOf(t, second))
		in["username"], in["password"] = "perch", smtpPassword
		res := expect(t, a.call("PUT", "/api/v1/admin/email-config", root.Access, in), 200)
		cfg = res.Data()
		if cfg["source"] != "database" || cfg["port"] != float64(addrOf(t, second)) || cfg["username"] != "perch" ||
			cfg["from"] != "Perch Ops <ops@example.com>" || cfg["password_set"] != true {
			t.Fatalf("stored settings = %v", cfg)
		}
		res = expect(t, a.call("GET", "/api/v1/admin/email-config", root.Access, nil), 200)
		if strings.Contains(res.Raw, smtpPassword) || res.Data()["password_set"] != true || res.Data()["source"] != "database" {
			t.Fatalf("GET after PUT: %s", res.Raw)
		}

		// The password is sealed at rest, under the server's key.
		stored, err := s.EmailSettings(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(stored.SealedPassword), smtpPassword) {
			t.Fatal("the password is stored in the clear")
		}
		if pw, err := a.srv.opts.Secrets.Open(stored.SealedPassword); err != nil || string(pw) != smtpPassword {
			t.Fatalf("the sealed password opens to %q, %v", pw, err)
		}

		// The very next message goes to the second server.
		before := a.mail.Count(root.Email)
		expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": root.Email}), 202)
		m := second.WaitFor(t, root.Email)
		if !strings.Contains(m.Text, "/reset-password?token=") || m.From != "ops@example.com" || m.User != "perch" {
			t.Errorf("the second server got %q from %q, signed in as %q", m.Subject, m.From, m.User)
		}
		a.srv.mailing.Wait()
		if n := a.mail.Count(root.Email); n != before {
			t.Errorf("the first server got %d more messages", n-before)
		}

		// Without a password the stored one stays; "" removes it.
		delete(in, "password")
		expect(t, a.call("PUT", "/api/v1/admin/email-config", root.Access, in), 200)
		if got := expect(t, a.call("GET", "/api/v1/admin/email-config", root.Access, nil), 200).Data(); got["password_set"] != true {
			t.Errorf("after a PUT without password: password_set = %v", got["password_set"])
		}
		in["password"] = ""
		if got := expect(t, a.call("PUT", "/api/v1/admin/email-config", root.Access, in), 200).Data(); got["password_set"] != false {
			t.Errorf("after a PUT with an empty password: password_set = %v", got["password_set"])
		}

		// Audited, with whether the password changed and never the password.
		entries, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditEmailConfigUpdated})
		if err != nil || len(entries) != 3 {
			t.Fatalf("%d audit entries, %v; want 3", len(entries), err)
		}
		for i, want := range []bool{true, false, true} { // newest first: removed, kept, set
			e := entries[i]
			if e.Changes["password_changed"] != want || e.Actor.Type != perch.ActorAdmin || e.Actor.ID != root.ID || e.Changes["host"] != "127.0.0.1" {
				t.Errorf("entry %d = %+v", i, e)
			}
			if raw, _ := json.Marshal(e); strings.Contains(string(raw), smtpPassword) {
				t.Errorf("entry %d holds the password: %s", i, raw)
			}
		}
	})
}

func TestEmailConfigRefusesBadSettings(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		tests := []struct {
			body   map[string]any
			fields []string
		}{
			{map[string]any{}, []string{"host", "port", "from", "tls"}},
			{map[string]any{"host": "smtp://mail.example.com", "port": 0, "from": "nobody", "tls": "ssl"}, []string{"host", "port", "from", "tls"}},
			{map[string]any{"host": "mail.example.com:25", "port": 70000, "from": "ops@example.com", "tls": "tls"}, []string{"host", "port"}},
			{map[string]any{"host": "mail.example.com", "port": 25, "username": "u", "from": "ops@example.com", "tls": "none"}, []string{"tls"}},
		}
		for _, tt := range tests {
			res := expect(t, a.call("PUT", "/api/v1/admin/email-config", root.Access, tt.body), 422)
			fields := res.Fields()
			for _, f := range tt.fields {
				if _, ok := fields[f]; !ok {
					t.Errorf("PUT %v: no problem with %s in %v", tt.body, f, fields)
				}
			}
			if len(fields) != len(tt.fields) {
				t.Errorf("PUT %v: fields %v, want %v", tt.body, fields, tt.fields)
			}
		}
		expect(t, a.call("PUT", "/api/v1/admin/email-config", root.Access, `{"host": "x", "port": "587"}`), 400)
		// Nothing was stored.
		if got := expect(t, a.call("GET", "/api/v1/admin/email-config", root.Access, nil), 200).Data(); got["source"] != "environment" {
			t.Errorf("source = %v after refused settings", got["source"])
		}
	})
}

func TestEmailConfigTestSend(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")

		got := expect(t, a.call("POST", "/api/v1/admin/email-config/test", root.Access, map[string]string{"to": "ops@example.org"}), 200).Data()
		if got["ok"] != true || got["message"] == "" {
			t.Fatalf("test send through the environment's server = %v", got)
		}
		m := a.mail.WaitFor(t, "ops@example.org")
		if m.Subject != "Test message from Perch" || !strings.Contains(m.Text, root.Email) {
			t.Errorf("test message: %q\n%s", m.Subject, m.Text)
		}

		// A server that is not there: ok false, with the reason.
		expect(t, a.call("PUT", "/api/v1/admin/email-config", root.Access, settingsAt(closedPort(t))), 200)
		got = expect(t, a.call("POST", "/api/v1/admin/email-config/test", root.Access, map[string]string{"to": "ops@example.org"}), 200).Data()
		if got["ok"] != false || !strings.Contains(got["message"].(string), "127.0.0.1") {
			t.Errorf("test send to a closed port = %v", got)
		}

		expect(t, a.call("POST", "/api/v1/admin/email-config/test", root.Access, `{"to": 1}`), 400)
		res := expect(t, a.call("POST", "/api/v1/admin/email-config/test", root.Access, map[string]string{"to": "not an address"}), 422)
		if res.Fields()["to"] == nil {
			t.Errorf("fields = %v, want a problem with to", res.Fields())
		}

		entries, _, err := s.AuditLog(t.Context(), perch.AuditFilter{Action: perch.AuditEmailConfigTested})
		if err != nil || len(entries) != 2 || entries[0].Changes["ok"] != false || entries[1].Changes["ok"] != true ||
			entries[1].Changes["to"] != "ops@example.org" || entries[1].Changes["source"] != "environment" {
			t.Fatalf("audit entries of the test sends: %+v, %v", entries, err)
		}
	})
}

func TestEmailConfigWithoutAnyServer(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s, func(o *Options) { o.MailSettings = mail.NewSettings(s, o.Secrets, nil) })
		root := a.platformAdmin("Root")
		got := expect(t, a.call("GET", "/api/v1/admin/email-config", root.Access, nil), 200).Data()
		if got["source"] != "none" || got["host"] != "" || got["port"] != float64(0) {
			t.Errorf("settings without a server = %v", got)
		}
		got = expect(t, a.call("POST", "/api/v1/admin/email-config/test", root.Access, map[string]string{"to": "ops@example.org"}), 200).Data()
		if got["ok"] != false || !strings.Contains(got["message"].(string), "outbox") {
			t.Errorf("test send without a server = %v", got)
		}
	})
}

func TestSecretsNeedAKey(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		// As on PostgreSQL without PERCH_SECRET_KEY.
		a := newAPI(t, s, func(o *Options) {
			o.Secrets = nil
			o.MailSettings = mail.NewSettings(s, nil, nil)
		})
		root := a.platformAdmin("Root")
		in := settingsAt(mailPort(a))
		in["password"] = smtpPassword
		res := expect(t, a.call("PUT", "/api/v1/admin/email-config", root.Access, in), 503)
		if !strings.Contains(res.Raw, "PERCH_SECRET_KEY") {
			t.Errorf("the 503 does not name the setting: %s", res.Raw)
		}
		if _, err := s.EmailSettings(t.Context()); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("settings were stored: %v", err)
		}
		// Settings without a secret need no key.
		delete(in, "password")
		expect(t, a.call("PUT", "/api/v1/admin/email-config", root.Access, in), 200)
		// Nor can the newsletter's links be signed.
		res = expect(t, a.call("POST", "/api/v1/admin/newsletter", root.Access, map[string]string{"subject": "S", "body": "B"}), 503)
		if !strings.Contains(res.Raw, "PERCH_SECRET_KEY") {
			t.Errorf("the 503 does not name the setting: %s", res.Raw)
		}
	})
}

func TestPasswordSealedUnderAnotherKeyFailsClearly(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		in := settingsAt(mailPort(a))
		in["username"], in["password"] = "perch", smtpPassword
		expect(t, a.call("PUT", "/api/v1/admin/email-config", root.Access, in), 200)

		// The same database, served with another key.
		other, err := secrets.New(secrets.NewKey())
		if err != nil {
			t.Fatal(err)
		}
		b := newAPI(t, s, func(o *Options) {
			o.Secrets = other
			o.MailSettings = mail.NewSettings(s, other, nil)
		})
		if got := expect(t, b.call("GET", "/api/v1/admin/email-config", root.Access, nil), 200).Data(); got["password_set"] != true {
			t.Errorf("GET under another key = %v", got)
		}
		got := expect(t, b.call("POST", "/api/v1/admin/email-config/test", root.Access, map[string]string{"to": "ops@example.org"}), 200).Data()
		if got["ok"] != false || !strings.Contains(got["message"].(string), "another key") {
			t.Errorf("test send under another key = %v", got)
		}
		if _, _, err := b.srv.mailCfg.Source(context.Background()); perch.ErrorCode(err) != perch.EUNAVAILABLE {
			t.Errorf("the mailer's source under another key: %v, want unavailable", err)
		}
	})
}
