package netguard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Why Verify rejects a header; its errors wrap one of these.
var (
	errMalformed = errors.New("netguard: malformed signature header")
	errNoSecret  = errors.New("netguard: no secret to verify with")
	errMismatch  = errors.New("netguard: signature does not match")
	errStale     = errors.New("netguard: signature timestamp outside the tolerance")
)

// Sign is the X-Perch-Signature header of a forwarded body, signed at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>". The
// timestamp is signed with the body so that a receiver can refuse a replay
// of an old request (see Verify).
func Sign(secret string, body []byte, t time.Time) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// Verify checks an X-Perch-Signature header against body and secret, and
// that its timestamp is within tolerance of now, either way. It is for
// receivers of Perch's forwards (and the tests). A header may carry more
// than one v1 value (while a secret is being replaced); one must match.
// An empty secret verifies nothing and is an error.
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if secret == "" {
		return errNoSecret
	}
	var ts string
	var sigs [][]byte
	for field := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(field), "=")
		if !ok {
			return fmt.Errorf("%w: %q is not key=value", errMalformed, field)
		}
		switch k {
		case "t":
			if ts != "" {
				return fmt.Errorf("%w: more than one t", errMalformed)
			}
			ts = v
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				return fmt.Errorf("%w: v1 is not a hex HMAC-SHA256", errMalformed)
			}
			sigs = append(sigs, sig)
		} // other schemes are for other versions of Perch
	}
	if ts == "" || len(sigs) == 0 {
		return fmt.Errorf("%w: t and v1 are needed", errMalformed)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: t is not a number of seconds", errMalformed)
	}
	want := mac(secret, ts, body)
	matched := false
	for _, sig := range sigs {
		matched = hmac.Equal(sig, want) || matched
	}
	if !matched {
		return errMismatch
	}
	if age := now.Sub(time.Unix(sec, 0)); age > tolerance || age < -tolerance {
		return fmt.Errorf("%w: signed at %s, %s from now", errStale, time.Unix(sec, 0).UTC().Format(time.RFC3339), age.Round(time.Second))
	}
	return nil
}

// mac is HMAC-SHA256(secret, ts + "." + body).
func mac(secret, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte("."))
	h.Write(body)
	return h.Sum(nil)
}
