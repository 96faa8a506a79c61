package server

import (
	"context"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func TestRegistrationMailVerifiesTheAddress(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		m := a.mail.WaitFor(t, ada.Email)
		if m.From != "perch@example.com" || !strings.Contains(strings.ToLower(m.Subject), "verify") {
			t.Fatalf("mail from %q, subject %q", m.From, m.Subject)
		}
		token := tokenOf(t, m.Link(), "/verify-email")
		u := expect(t, a.call("POST", "/api/v1/auth/verify-email", "", map[string]string{"token": token}), 200).Data()
		if u["id"] != ada.ID || u["email_verified"] != true {
			t.Fatalf("verified user = %v", u)
		}
		if me := expect(t, a.call("GET", "/api/v1/users/me", ada.Access, nil), 200).Data(); me["email_verified"] != true {
			t.Fatal("not verified")
		}
		expect(t, a.call("POST", "/api/v1/auth/verify-email", "", map[string]string{"token": token}), 400)
		expect(t, a.call("POST", "/api/v1/auth/verify-email", "", map[string]string{"token": "pem_forged"}), 400)
		expect(t, a.call("POST", "/api/v1/auth/verify-email", "", map[string]string{}), 422)
	})
}

func TestForgotAndResetPassword(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.mail.WaitFor(t, ada.Email) // the verification mail
		other := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": goodPassword}), 200).Data()

		known := expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": "ADA@example.com"}), 202)
		unknown := expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": "nobody@example.com"}), 202)
		if known.Raw != unknown.Raw {
			t.Fatalf("the answers differ:\n%s\n%s", known.Raw, unknown.Raw)
		}
		expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": "nope"}), 422)
		token := a.mailedToken(ada.Email, "/reset-password")

		res := expect(t, a.call("POST", "/api/v1/auth/reset-password", "", map[string]string{"token": token, "password": "ada@example.com"}), 422)
		if res.Fields()["password"] != "must not be your e-mail address" {
			t.Fatalf("fields = %v", res.Fields())
		}
		expect(t, a.call("POST", "/api/v1/auth/reset-password", "", map[string]string{"token": token, "password": "a fresh start 2026"}), 204)
		for _, access := range []string{ada.Access, other["access_token"].(string)} {
			expect(t, a.call("GET", "/api/v1/users/me", access, nil), 401)
		}
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": goodPassword}), 401)
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": "a fresh start 2026"}), 200)
		expect(t, a.call("POST", "/api/v1/auth/reset-password", "", map[string]string{"token": token, "password": "yet another one!"}), 400)

		// Nothing was mailed to the unknown address.
		if err := a.srv.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := a.mail.Count("nobody@example.com"); n != 0 {
			t.Fatalf("%d mails to an address without an account", n)
		}
	})
}

func TestResetLinkExpiresAfterAnHour(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.mail.WaitFor(t, ada.Email)
		expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": ada.Email}), 202)
		token := a.mailedToken(ada.Email, "/reset-password")
		a.clock.Advance(perch.PasswordResetTTL)
		expect(t, a.call("POST", "/api/v1/auth/reset-password", "", map[string]string{"token": token, "password": "a fresh start 2026"}), 400)
	})
}

func TestChangeEmailAfterVerifyingTheNewAddress(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		a.register("Bob")
		a.mail.WaitFor(t, ada.Email)

		expect(t, a.call("PATCH", "/api/v1/users/me", ada.Access, map[string]string{"email": "countess@example.com"}), 422)
		expect(t, a.call("PATCH", "/api/v1/users/me", ada.Access, map[string]string{"email": "bob@example.com", "current_password": goodPassword}), 409)
		res := expect(t, a.call("PATCH", "/api/v1/users/me", ada.Access, map[string]string{"email": "countess@example.com", "current_password": goodPassword}), 200).Data()
		if res["email"] != ada.Email || res["pending_email"] != "countess@example.com" {
			t.Fatalf("answer = %v", res)
		}
		token := a.mailedToken("countess@example.com", "/verify-email")
		u := expect(t, a.call("POST", "/api/v1/auth/verify-email", "", map[string]string{"token": token}), 200).Data()
		if u["email"] != "countess@example.com" || u["email_verified"] != true {
			t.Fatalf("user = %v", u)
		}
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": ada.Email, "password": goodPassword}), 401)
		expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": "countess@example.com", "password": goodPassword}), 200)
	})
}

// TestCheckResetLink: the reset page asks whether its link works, and the
// asking spends nothing.
func TestCheckResetLink(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		expect(t, a.call("POST", "/api/v1/auth/forgot-password", "", map[string]string{"email": ada.Email}), 202)
		token := a.mailedToken(ada.Email, "/reset-password")
		for range 2 { // asking twice: still live
			if got := expect(t, a.call("POST", "/api/v1/auth/reset-password/check", "", map[string]string{"token": token}), 200).Data(); got["email"] != ada.Email {
				t.Fatalf("check = %v", got)
			}
		}
		res := expect(t, a.call("POST", "/api/v1/auth/reset-password/check", "", map[string]string{}), 422)
		if res.Fields()["token"] != "is required" {
			t.Fatalf("fields = %v", res.Fields())
		}
		expect(t, a.call("POST", "/api/v1/auth/reset-password/check", "", map[string]string{"token": "pem_unknown"}), 400)
		expect(t, a.call("POST", "/api/v1/auth/reset-password", "", map[string]string{"token": token, "password": "a fresh start 2026"}), 204)
		expect(t, a.call("POST", "/api/v1/auth/reset-password/check", "", map[string]string{"token": token}), 400)
	})
}
