package perch

import (
	"strings"
	"testing"
)

func TestSafeRedirect(t *testing.T) {
	t.Parallel()
	for target, want := range map[string]string{
		"/org?tab=teams#x":              "/org?tab=teams#x",
		"":                              DefaultPage,
		"//evil.test":                   DefaultPage,
		`/\evil.test`:                   DefaultPage,
		"https://evil.test/":            DefaultPage,
		"/\t/evil.test":                 DefaultPage,
		"/" + strings.Repeat("a", 2000): DefaultPage,
	} {
		if got := SafeRedirect(target); got != want {
			t.Errorf("SafeRedirect(%q) = %q, want %q", target, got, want)
		}
	}
}

func TestSignInName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, login, email, want string }{
		{"Grace Hopper", "hopper", "g@example.com", "Grace Hopper"},
		{"  ", "hopper", "g@example.com", "hopper"},
		{"", "", "grace.h@example.com", "grace.h"},
		{"Ada\nLovelace\u202e", "", "", "Ada Lovelace"},
		{"", "", "", "Perch user"},
		{strings.Repeat("é", 150), "", "", strings.Repeat("é", MaxNameLen)},
	} {
		if got := SignInName(c.name, c.login, c.email); got != c.want {
			t.Errorf("SignInName(%q, %q, %q) = %q, want %q", c.name, c.login, c.email, got, c.want)
		}
		p := Problems{}
		if ValidateName(p, SignInName(c.name, c.login, c.email)); len(p) > 0 {
			t.Errorf("SignInName(%q, …) is not a valid name: %v", c.name, p)
		}
	}
}
