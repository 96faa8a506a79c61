package perch

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// States of a desktop (device/PKCE) sign-in. A sign-in that is not exchanged
// reads as expired once past its expiry.
const (
	DevicePending   = "pending"   // waiting for a signed-in user to approve or deny it
	DeviceApproved  = "approved"  // approved; the app may exchange it for tokens once
	DeviceDenied    = "denied"    // the user said no
	DeviceExchanged = "exchanged" // the tokens were handed out; stored, never shown (the API says approved)
	DeviceExpired   = "expired"   // read only, never stored
)

// DeviceSessionTTL is how long a desktop sign-in lives from its start: the
// whole round trip (approve in the browser, then exchange) must fit in it.
const DeviceSessionTTL = 10 * time.Minute

// Prefixes of the device sign-in's identifier and of its one-time code.
const (
	DeviceSessionPrefix = "dev_"
	DeviceCodePrefix    = "dvc_"
)

// Ports the desktop app may listen on for the callback: unprivileged ones.
const (
	MinDevicePort = 1024
	MaxDevicePort = 65535
)

// MethodS256 is the only code challenge method Perch accepts: "plain" would
// put the verifier itself in the browser's address bar.
const MethodS256 = "S256"

// DeviceSession is one desktop sign-in: the app's loopback port and code
// challenge, then who approved or denied it and the hash of the one-time
// code the approval issued.
type DeviceSession struct {
	ID            string
	Port          int
	CodeChallenge string
	Status        string // one of the Device* states
	UserID        string // who approved or denied it; "" while pending
	CodeHash      string // SHA-256 of the one-time code; set when approved
	CreatedAt     time.Time
	ExpiresAt     time.Time
	DecidedAt     *time.Time // when it was approved or denied
	ExchangedAt   *time.Time // when its tokens were handed out
}

// ErrDeviceExpired is the answer to any use of a sign-in past its expiry.
// It is bad_request rather than a code of its own: no status fits better
// than 400, and the message says what to do.
var ErrDeviceExpired = Errorf(EBADREQUEST, "The sign-in request expired; start again from the app.")

// CheckDecidable returns nil when d may still be approved or denied: it is
// pending. Otherwise ErrDeviceExpired or an ECONFLICT error naming its state.
func (d *DeviceSession) CheckDecidable() error {
	switch d.Status {
	case DevicePending:
		return nil
	case DeviceExpired:
		return ErrDeviceExpired
	case DeviceDenied:
		return Errorf(ECONFLICT, "This sign-in request was already denied; start again from the app.")
	}
	return Errorf(ECONFLICT, "This sign-in request was already approved.")
}

// CheckExchangeable returns nil when d's tokens may be handed out: it is
// approved and neither expired nor exchanged. Otherwise ErrDeviceExpired or
// an ECONFLICT error naming its state.
func (d *DeviceSession) CheckExchangeable() error {
	switch d.Status {
	case DeviceApproved:
		return nil
	case DeviceExpired:
		return ErrDeviceExpired
	case DevicePending:
		return Errorf(ECONFLICT, "This sign-in request has not been approved yet.")
	case DeviceDenied:
		return Errorf(ECONFLICT, "This sign-in request was denied.")
	}
	return Errorf(ECONFLICT, "This sign-in request was already used; start again from the app.")
}

// ValidateDeviceAuthorize checks the query of a device sign-in's start and
// returns the port. Every problem comes back at once, as a bad_request error
// (not validation_failed): these are query parameters the app made up, not a
// form a person filled in. method may be empty; it means S256.
func ValidateDeviceAuthorize(port, challenge, method string) (int, error) {
	p := Problems{}
	n, err := strconv.Atoi(port)
	switch {
	case port == "":
		p.Add("port", "is required")
	case err != nil || !ValidDevicePort(n):
		p.Add("port", "must be a whole number from 1024 to 65535")
	}
	switch {
	case challenge == "":
		p.Add("code_challenge", "is required")
	case !ValidCodeChallenge(challenge):
		p.Add("code_challenge", "must be the unpadded base64url SHA-256 of the code verifier (43 characters)")
	}
	if method != "" && method != MethodS256 {
		p.Add("code_challenge_method", "must be S256; plain is not supported")
	}
	if len(p) > 0 {
		msg := "The sign-in request is not valid."
		if _, bad := p["code_challenge_method"]; bad && len(p) == 1 {
			msg = "Only the S256 code challenge method is supported."
		}
		return 0, &Error{Code: EBADREQUEST, Message: msg, Fields: p}
	}
	return n, nil
}

// ValidDevicePort reports whether the app may listen on port for the
// callback.
func ValidDevicePort(port int) bool {
	return port >= MinDevicePort && port <= MaxDevicePort
}

// ValidCodeChallenge reports whether s has the form of an S256 code
// challenge: 43 characters of the unpadded base64url alphabet (RFC 7636 §4.2).
func ValidCodeChallenge(s string) bool {
	if len(s) != 43 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && s[i] != '-' && s[i] != '_' {
			return false
		}
	}
	return true
}

// ValidCodeVerifier reports whether s is a code verifier of RFC 7636 §4.1:
// 43 to 128 characters of A-Z, a-z, 0-9 and "-._~".
func ValidCodeVerifier(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) && !strings.ContainsRune("-._~", rune(s[i])) {
			return false
		}
	}
	return true
}

// S256Challenge returns the S256 code challenge of verifier:
// base64url(SHA-256(verifier)) without padding.
func S256Challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// VerifierMatches reports whether verifier is the one challenge was made
// from, comparing in constant time.
func VerifierMatches(verifier, challenge string) bool {
	return subtle.ConstantTimeCompare([]byte(S256Challenge(verifier)), []byte(challenge)) == 1
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
