package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The sign-in providers' settings: both client values or neither, service
// addresses that are http(s) URLs, and secrets never repeated in errors.
func TestSignInProviderSettings(t *testing.T) {
	t.Parallel()
	c, err := parseConfig("serve", nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.GitHub.ClientID != "" || c.GitHub.URL != "https://github.com" || c.GitHub.APIURL != "https://api.github.com" ||
		c.Google.ClientID != "" || c.Google.Issuer != "https://accounts.google.com" {
		t.Fatalf("defaults: %+v %+v", c.GitHub, c.Google)
	}

	const secret = "a-client-secret-value"
	_, err = parseConfig("serve", nil, func(k string) string {
		return map[string]string{"PERCH_GITHUB_CLIENT_ID": "Iv1.x", "PERCH_GOOGLE_CLIENT_SECRET": secret,
			"PERCH_GITHUB_API_URL": "github.example.com/api/v3", "PERCH_GOOGLE_ISSUER": "ftp://accounts.example.com"}[k]
	}, io.Discard)
	if err == nil {
		t.Fatal("a client id without its secret was taken")
	}
	for _, want := range []string{"PERCH_GITHUB_CLIENT_SECRET", "PERCH_GOOGLE_CLIENT_ID", "PERCH_GITHUB_API_URL", "PERCH_GOOGLE_ISSUER"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %s:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("the error repeats the secret: %v", err)
	}

	c, err = parseConfig("serve", nil, func(k string) string {
		return map[string]string{"PERCH_GITHUB_CLIENT_ID": "Iv1.x", "PERCH_GITHUB_CLIENT_SECRET": "s", "PERCH_GITHUB_URL": "https://github.example.com/",
			"PERCH_GITHUB_API_URL": "https://github.example.com/api/v3"}[k]
	}, io.Discard)
	if err != nil || c.GitHub.URL != "https://github.example.com" || c.GitHub.APIURL != "https://github.example.com/api/v3" || c.GitHub.ClientSecret != "s" {
		t.Fatalf("GitHub Enterprise: %+v, %v", c.GitHub, err)
	}
}

// Google's discovery does not run at start-up: a server whose issuer
// cannot be reached starts and offers the button, and the sign-in itself
// says the issuer is unreachable.
func TestServeStartsWithAnUnreachableGoogle(t *testing.T) {
	t.Parallel()
	base := startServer(t, map[string]string{"PERCH_GOOGLE_CLIENT_ID": "id", "PERCH_GOOGLE_CLIENT_SECRET": "secret",
		"PERCH_GOOGLE_ISSUER": "http://127.0.0.1:1"})
	res, err := http.Get(base + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), "Continue with Google") || strings.Contains(string(page), "Continue with GitHub") {
		t.Fatal("the sign-in page does not offer exactly Google")
	}
	status, body := call(t, "GET", base+"/api/v1/auth/google", "", nil)
	if status != http.StatusServiceUnavailable || !strings.Contains(body["error"].(map[string]any)["message"].(string), "PERCH_GOOGLE_ISSUER") {
		t.Fatalf("start: %d %v", status, body)
	}
}
