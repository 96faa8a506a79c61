package senders

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// VerifyGitHubSignature reports whether header, the X-Hub-Signature-256 value
// "sha256=<hex>", is the HMAC-SHA256 of body under secret. A missing or
// malformed header, or an empty secret, never verifies: a receiver without a
// configured secret should not call it.
func VerifyGitHubSignature(secret []byte, header string, body []byte) bool {
	sig, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok || len(secret) == 0 {
		return false
	}
	return hmacMatches(secret, sig, body)
}

// VerifyPagerDutySignature reports whether one of the comma-separated "v1=<hex>"
// values of header, the X-PagerDuty-Signature value, is the HMAC-SHA256 of
// body under secret. PagerDuty sends one value per active secret while a
// secret is being rotated, so any match is enough. A missing or malformed
// header, or an empty secret, never verifies.
func VerifyPagerDutySignature(secret []byte, header string, body []byte) bool {
	if len(secret) == 0 {
		return false
	}
	for v := range strings.SplitSeq(header, ",") {
		if sig, ok := strings.CutPrefix(strings.TrimSpace(v), "v1="); ok && hmacMatches(secret, sig, body) {
			return true
		}
	}
	return false
}

// hmacMatches compares a hex signature with the HMAC-SHA256 of body in
// constant time.
func hmacMatches(secret []byte, hexSig string, body []byte) bool {
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
