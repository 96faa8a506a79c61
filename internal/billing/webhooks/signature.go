package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
)

// Limits on a payment provider's signature header: a real one holds a
// timestamp and a signature or two while a secret is being rolled.
const (
	maxSignatureHeader = 2048
	maxSignatures      = 8
)

// How far a signature's time may be from now, per provider, as each
// provider's own libraries check it (docs/DESIGN.md, Billing): each
// Verify function uses its provider's when the caller gives none.
const (
	// StripeTolerance is stripe-go's webhook.DefaultTolerance (300 s), the
	// window of every Stripe library.
	StripeTolerance = 300 * time.Second
	// PaddleTolerance is the 5 seconds of Paddle's SDKs (the Node SDK's
	// MAX_VALID_TIME_DIFFERENCE, the PHP SDK's Verifier maximumVariance):
	// Paddle signs as it sends and expects an answer within 5 seconds.
	PaddleTolerance = 5 * time.Second
)

// VerifyStripeSignature checks header, the Stripe-Signature value
// "t=<unix time>,v1=<hex>[,v1=<hex>...]", against body: one of its v1
// signatures must be the HMAC-SHA256 under secret of "<t>.<body>", and t
// must be within tolerance of now, either way (StripeTolerance when
// tolerance is not positive). Stripe sends one v1 per active secret while a secret is
// rolled, so any match is enough; other schemes (v0) are ignored.
//
// This is Stripe's documented scheme, as stripe-go's webhook package checks
// it, but against the caller's clock: that package only reads time.Now.
//
// A missing, malformed, wrong or stale signature is a perch.EBADREQUEST
// error whose message says which; an empty secret is a perch.EINTERNAL
// error, since the receiver should not verify without one.
func VerifyStripeSignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	const name = "Stripe-Signature"
	const form = "t=<unix time>,v1=<hex signature>"
	if secret == "" {
		return perch.Errorf(perch.EINTERNAL, "No Stripe webhook secret is set to check the %s header with.", name)
	}
	h, err := readSignatureHeader(name, form, header, ",", "t", "v1")
	if err != nil {
		return err
	}
	signed := strconv.FormatInt(h.unix, 10) + "."
	if tolerance <= 0 {
		tolerance = StripeTolerance
	}
	return h.check(name, []byte(secret), signed, body, now, tolerance)
}

// VerifyPaddleSignature checks header, the Paddle-Signature value
// "ts=<unix time>;h1=<hex>[;h1=<hex>...]", against body: one of its h1
// signatures must be the HMAC-SHA256 under secret of "<ts>:<body>", and ts
// must be within tolerance of now, either way (PaddleTolerance when
// tolerance is not positive). Paddle's SDKs refuse only a timestamp more
// than 5 seconds old; one as far in the future is refused here too, as it
// can only come from a wrong clock. Paddle sends one h1 per active secret while a secret is
// rotated, so any match is enough.
//
// A missing, malformed, wrong or stale signature is a perch.EBADREQUEST
// error whose message says which; an empty secret is a perch.EINTERNAL
// error, since the receiver should not verify without one.
func VerifyPaddleSignature(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	const name = "Paddle-Signature"
	const form = "ts=<unix time>;h1=<hex signature>"
	if secret == "" {
		return perch.Errorf(perch.EINTERNAL, "No Paddle webhook secret is set to check the %s header with.", name)
	}
	h, err := readSignatureHeader(name, form, header, ";", "ts", "h1")
	if err != nil {
		return err
	}
	if tolerance <= 0 {
		tolerance = PaddleTolerance
	}
	// Paddle signs the timestamp as it wrote it in the header.
	return h.check(name, []byte(secret), h.ts+":", body, now, tolerance)
}

// SignPaddle returns a Paddle-Signature header value for body at ts with
// secret, as Paddle makes them, for tests and tools that play Paddle.
func SignPaddle(secret string, body []byte, ts time.Time) string {
	unix := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(unix + ":"))
	mac.Write(body)
	return "ts=" + unix + ";h1=" + hex.EncodeToString(mac.Sum(nil))
}

// signatureHeader is a provider's signature header, read: when it was signed
// and the signatures it offers.
type signatureHeader struct {
	ts         string // the timestamp as written
	unix       int64
	signatures [][]byte
}

// readSignatureHeader reads "ts=<digits><sep>sig=<hex>[<sep>sig=<hex>...]",
// ignoring other keys, which providers add for other schemes. Signatures
// that are not 64 hex digits are skipped, as stripe-go skips them; a header
// left with none is malformed.
func readSignatureHeader(name, form, header, sep, tsKey, sigKey string) (signatureHeader, error) {
	var h signatureHeader
	if strings.TrimSpace(header) == "" {
		return h, badRequest("The %s header is missing: the delivery is not signed.", name)
	}
	malformed := func(why string) error {
		return badRequest("The %s header is malformed (%s): expected %s.", name, why, form)
	}
	if len(header) > maxSignatureHeader {
		return h, malformed(fmt.Sprintf("longer than %d bytes", maxSignatureHeader))
	}
	parts := 0
	for part := range strings.SplitSeq(header, sep) {
		if parts++; parts > 2*maxSignatures {
			return h, malformed("too many parts")
		}
		key, value, found := strings.Cut(strings.TrimSpace(part), "=")
		if !found {
			return h, malformed(fmt.Sprintf("%q is not key=value", perch.Clip(perch.OneLine(part), 20)))
		}
		switch key {
		case tsKey:
			if h.ts != "" {
				return h, malformed("two timestamps")
			}
			unix, err := strconv.ParseInt(value, 10, 64)
			if err != nil || value == "" || value[0] < '0' || value[0] > '9' || unix > maxUnix {
				return h, malformed(fmt.Sprintf("the timestamp %q is not a Unix time", perch.Clip(perch.OneLine(value), 20)))
			}
			h.ts, h.unix = value, unix
		case sigKey:
			sig, err := hex.DecodeString(value)
			if err == nil && len(sig) == sha256.Size && len(h.signatures) < maxSignatures {
				h.signatures = append(h.signatures, sig)
			}
		}
	}
	switch {
	case h.ts == "":
		return h, malformed("no timestamp " + tsKey)
	case len(h.signatures) == 0:
		return h, malformed("no " + sigKey + " signature of 64 hex digits")
	}
	return h, nil
}

// check compares the header's signatures with the HMAC-SHA256 of signed and
// body, in constant time, and then its timestamp with now. The signature
// comes first so that a stale delivery signed with the right secret says
// so, which points at a clock rather than at the secret.
func (h signatureHeader) check(name string, secret []byte, signed string, body []byte, now time.Time, tolerance time.Duration) error {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(signed))
	mac.Write(body)
	want := mac.Sum(nil)
	matched := false
	for _, sig := range h.signatures {
		// No early exit: the time taken does not tell which one matched.
		if hmac.Equal(sig, want) {
			matched = true
		}
	}
	if !matched {
		return badRequest("The %s header does not match the body: the signature is wrong, or the webhook secret is not the one the provider signs with.", name)
	}

	// Times, not a difference, are compared: the difference to a timestamp
	// thousands of years away does not fit a time.Duration.
	signedAt := time.Unix(h.unix, 0)
	switch {
	case signedAt.Before(now.Add(-tolerance)):
		return badRequest("The %s header is stale: it was signed %s ago, more than the %s allowed.", name, now.Sub(signedAt).Round(time.Second), tolerance)
	case signedAt.After(now.Add(tolerance)):
		return badRequest("The %s header is stale: it was signed %s in the future, more than the %s allowed; a clock is wrong.", name, signedAt.Sub(now).Round(time.Second), tolerance)
	}
	return nil
}
