package senders

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// sign returns the hex HMAC-SHA256 of body under secret, as the senders
// compute it.
func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestVerifyGitHubSignature(t *testing.T) {
	t.Parallel()
	const secret, body = "It's a Secret to Everybody", "Hello, World!"
	good := sign(secret, body)
	// GitHub's documentation gives this value for the secret and body above.
	if want := "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"; good != want {
		t.Fatalf("sign() = %s, want GitHub's published %s", good, want)
	}

	tests := []struct {
		name, secret, header, body string
		want                       bool
	}{
		{"valid", secret, "sha256=" + good, body, true},
		{"valid, upper-case hex", secret, "sha256=" + strings.ToUpper(good), body, true},
		{"valid, surrounding spaces", secret, "  sha256=" + good + " ", body, true},
		{"wrong secret", "another secret", "sha256=" + good, body, false},
		{"body changed", secret, "sha256=" + good, body + " ", false},
		{"missing header", secret, "", body, false},
		{"no algorithm", secret, good, body, false},
		{"sha1 signature", secret, "sha1=" + sign(secret, body)[:40], body, false},
		{"empty signature", secret, "sha256=", body, false},
		{"not hex", secret, "sha256=" + strings.Repeat("zz", 32), body, false},
		{"odd length", secret, "sha256=" + good[:63], body, false},
		{"truncated", secret, "sha256=" + good[:32], body, false},
		{"too long", secret, "sha256=" + good + "00", body, false},
		{"empty secret never verifies", "", "sha256=" + sign("", body), body, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := VerifyGitHubSignature([]byte(tt.secret), tt.header, []byte(tt.body)); got != tt.want {
				t.Errorf("VerifyGitHubSignature = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVerifyPagerDutySignature(t *testing.T) {
	t.Parallel()
	const secret = "ChangeMe-pd-webhook-secret"
	body := `{"event":{"id":"01HRZ8M3J6K2D9Q4T7V1B5N0XA","event_type":"incident.triggered"}}`
	good := sign(secret, body)
	other := sign("the secret being rotated out", body)

	tests := []struct {
		name, secret, header string
		want                 bool
	}{
		{"one valid value", secret, "v1=" + good, true},
		{"valid value second", secret, "v1=" + other + ",v1=" + good, true},
		{"valid value first, spaces after commas", secret, "v1=" + good + ", v1=" + other, true},
		{"no value matches", secret, "v1=" + other + ",v1=" + sign(secret, body+"x"), false},
		{"wrong secret", "nope", "v1=" + good, false},
		{"missing header", secret, "", false},
		{"only commas", secret, ",,,", false},
		{"no version", secret, good, false},
		{"unknown version", secret, "v2=" + good, false},
		{"empty value", secret, "v1=", false},
		{"malformed value then valid", secret, "v1=xyz,v1=" + good, true},
		{"truncated", secret, "v1=" + good[:40], false},
		{"empty secret never verifies", "", "v1=" + sign("", body), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := VerifyPagerDutySignature([]byte(tt.secret), tt.header, []byte(body)); got != tt.want {
				t.Errorf("VerifyPagerDutySignature = %v, want %v", got, tt.want)
			}
		})
	}
}
