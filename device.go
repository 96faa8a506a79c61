package perch

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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

// DefaultDeviceClientName is what the approval page calls an app that
// gave no name of its own.
const DefaultDeviceClientName = "perch CLI"

// MaxDeviceClientName is the longest client_name, in characters.
const MaxDeviceClientName = 64

// UserCodeAlphabet is the alphabet of user codes: twenty consonants, no
// vowels (no words), no digits and no letters that look alike (RFC 8628
// §6.1). Eight of them carry about 34.6 bits.
const UserCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// UserCodeLength is the number of characters of a user code, shown as two
// groups of four: BCDF-GHJK.
const UserCodeLength = 8

// DeviceRequest is what starts a desktop sign-in: the app's loopback port
// and code challenge, what it calls itself, where it asked from, and the
// hash of the user code it was given to show.
type DeviceRequest struct {
	Port          int
	CodeChallenge string
	ClientName    string // as the app claims; shown, never trusted
	ClientIP      string // the address the start came from, as the server saw it
	UserCodeHash  string // HashUserCode of the user code
}

// DeviceSession is one desktop sign-in: the request that started it, then
// who approved or denied it, whether the approver typed the user code, and
// the hash of the one-time code the approval issued.
type DeviceSession struct {
	ID            string
	Port          int
	CodeChallenge string
	ClientName    string
	ClientIP      string
	UserCodeHash  string // HashUserCode of the code the app shows; never shown again
	Status        string // one of the Device* states
	UserID        string // who approved or denied it; "" while pending
	CodeHash      string // SHA-256 of the one-time code; set when approved
	// UserCodeConfirmed is set when the approver typed the app's user code:
	// only then may a status poll, which needs no callback, take the tokens.
	UserCodeConfirmed bool
	CreatedAt         time.Time
	ExpiresAt         time.Time
	DecidedAt         *time.Time // when it was approved or denied
	ExchangedAt       *time.Time // when its tokens were handed out
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

// ErrDeviceCallbackOnly is the refusal of a status poll's claim to the
// tokens of a sign-in approved without the user code: only the one-time
// code, which went to the app's loopback callback, can take them.
var ErrDeviceCallbackOnly = Errorf(ECONFLICT,
	"This sign-in was approved without the code the app shows, so only the app's loopback callback can complete it.")

// CheckExchangeable returns nil when d's tokens may be handed out: it is
// approved and neither expired nor exchanged, and, when polled (asked for
// by a status poll rather than with the one-time code), its approver typed
// the user code. Otherwise ErrDeviceExpired, ErrDeviceCallbackOnly or an
// ECONFLICT error naming its state.
func (d *DeviceSession) CheckExchangeable(polled bool) error {
	switch d.Status {
	case DeviceApproved:
		if polled && !d.UserCodeConfirmed {
			return ErrDeviceCallbackOnly
		}
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

// ParseDeviceAuthorize checks the query of a device sign-in's start and
// returns the request it makes; the caller adds ClientIP and UserCodeHash.
// Every problem comes back at once, as a bad_request error (not
// validation_failed): these are query parameters the app made up, not a
// form a person filled in. code_challenge_method may be absent (it means
// S256), and client_name too (DefaultDeviceClientName).
func ParseDeviceAuthorize(q url.Values) (*DeviceRequest, error) {
	p := Problems{}
	port, challenge, method := q.Get("port"), q.Get("code_challenge"), q.Get("code_challenge_method")
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
	name := DefaultDeviceClientName
	if q.Has("client_name") {
		name = strings.TrimSpace(q.Get("client_name"))
		if problem := clientNameProblem(name); problem != "" {
			p.Add("client_name", problem)
		}
	}
	if len(p) > 0 {
		msg := "The sign-in request is not valid."
		if _, bad := p["code_challenge_method"]; bad && len(p) == 1 {
			msg = "Only the S256 code challenge method is supported."
		}
		return nil, &Error{Code: EBADREQUEST, Message: msg, Fields: p}
	}
	return &DeviceRequest{Port: n, CodeChallenge: challenge, ClientName: name}, nil
}

// clientNameProblem says what is wrong with a client name (trimmed), or "".
// Control and format characters are refused: line breaks and bidirectional
// overrides would let an app make its name read as something else on the
// approval page.
func clientNameProblem(name string) string {
	if !utf8.ValidString(name) {
		return "must be UTF-8 text"
	}
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxDeviceClientName {
		return fmt.Sprintf("must be 1 to %d characters", MaxDeviceClientName)
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return "must not contain control or formatting characters"
		}
	}
	return ""
}

// NormalizeUserCode returns a user code as a person typed it in the form it
// is compared in: upper case, without the spaces and hyphens people add;
// and whether that is a code's form (UserCodeLength characters of
// UserCodeAlphabet).
func NormalizeUserCode(typed string) (string, bool) {
	var b strings.Builder
	for _, r := range typed {
		switch {
		case r == '-' || unicode.IsSpace(r):
		case r < utf8.RuneSelf:
			b.WriteByte(byte(unicode.ToUpper(r)))
		default:
			return "", false
		}
	}
	code := b.String()
	if len(code) != UserCodeLength {
		return "", false
	}
	for i := 0; i < len(code); i++ {
		if !strings.ContainsRune(UserCodeAlphabet, rune(code[i])) {
			return "", false
		}
	}
	return code, true
}

// FormatUserCode shows a normalized user code as people read it:
// BCDF-GHJK.
func FormatUserCode(code string) string {
	if len(code) != UserCodeLength {
		return code
	}
	return code[:UserCodeLength/2] + "-" + code[UserCodeLength/2:]
}

// HashUserCode returns the SHA-256, in hex, of a normalized user code. The
// hash is not for secrecy (34.6 bits are quickly tried) but so that no read
// of a sign-in can show the code: the approval page must never display it.
func HashUserCode(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// CheckUserCode returns nil when typed is the user code d's app was given
// to show, or an EVALIDATION error on user_code saying what is wrong.
func (d *DeviceSession) CheckUserCode(typed string) error {
	code, ok := NormalizeUserCode(typed)
	if !ok {
		return &Error{Code: EVALIDATION, Message: "That is not a code the app shows.",
			Fields: Problems{"user_code": "must be the 8 letters the app shows, like BCDF-GHJK"}}
	}
	if subtle.ConstantTimeCompare([]byte(HashUserCode(code)), []byte(d.UserCodeHash)) != 1 {
		return &Error{Code: EVALIDATION, Message: "The code does not match the one this sign-in request's app shows.",
			Fields: Problems{"user_code": "does not match the code the app shows"}}
	}
	return nil
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

// DevicePrompt is a desktop sign-in as the person asked to approve it sees
// it: what the app calls itself (anyone may claim any name), and when and
// from where (as the server saw it) it asked. Never its user code, which
// the person must read off their own app.
type DevicePrompt struct {
	SessionID  string    `json:"session_id"`
	ClientName string    `json:"client_name"`
	ClientIP   string    `json:"client_ip"`
	Status     string    `json:"status"`
	CreatedAt  time.Time `json:"created_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}
