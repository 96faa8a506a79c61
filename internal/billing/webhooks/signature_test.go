package webhooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/testenv"
	"github.com/stripe/stripe-go/v85/webhook"
)

// sigCase is one check of a signature header: what is verified, and the
// word the error must say, or "" when the signature is good.
type sigCase struct {
	name   string
	secret string
	header string
	body   []byte
	now    time.Time
	says   string
}

func runSigCases(t *testing.T, verify func(secret, header string, body []byte, now time.Time, tolerance time.Duration) error, cases []sigCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := verify(c.secret, c.header, c.body, c.now, 5*time.Minute)
			switch {
			case c.says == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.says == "":
			case err == nil:
				t.Fatalf("accepted, want an error saying %q", c.says)
			case perch.ErrorCode(err) != perch.EBADREQUEST:
				t.Fatalf("code %q (%v), want %q", perch.ErrorCode(err), err, perch.EBADREQUEST)
			case !strings.Contains(perch.ErrorMessage(err), c.says):
				t.Fatalf("message %q does not say %q", perch.ErrorMessage(err), c.says)
			}
		})
	}
}

// Paddle's own test vector (github.com/PaddleHQ/paddle-go-sdk,
// example_webhook_verifier_test.go), as the shared SOURCES.md gives it.
const (
	paddleVectorSecret = "pdl_ntfset_01hsdn8d43dt7mezr1ef2jtbaw_hKkRiCGyyRhbFwIUuqiTBgI7gnWoV0Gr"
	paddleVectorHeader = "ts=1710929255;h1=6c05ef8fa83c44d751be6d259ec955ce5638e2c54095bf128e408e2fce1589c8"
)

func TestVerifyPaddleSignatureVector(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile(filepath.Join(testenv.FixturesDir(t), "webhooks", "paddle", "price.created.signed_vector.json"))
	if err != nil {
		t.Fatal(err)
	}
	signedAt := time.Unix(1710929255, 0)
	changed := append([]byte(nil), body...)
	changed[len(changed)-2] = ' ' // within the last string
	runSigCases(t, VerifyPaddleSignature, []sigCase{
		{"Paddle's signature verifies when it is made", paddleVectorSecret, paddleVectorHeader, body, signedAt, ""},
		{"and until the tolerance is over", paddleVectorSecret, paddleVectorHeader, body, signedAt.Add(5 * time.Minute), ""},
		{"but not 6 minutes later", paddleVectorSecret, paddleVectorHeader, body, signedAt.Add(6 * time.Minute), "stale"},
		{"nor with a changed body", paddleVectorSecret, paddleVectorHeader, changed, signedAt, "does not match"},
		{"nor under another secret", paddleVectorSecret + "x", paddleVectorHeader, body, signedAt, "does not match"},
	})
	if got := SignPaddle(paddleVectorSecret, body, signedAt); got != paddleVectorHeader {
		t.Errorf("SignPaddle = %q, want Paddle's %q", got, paddleVectorHeader)
	}
}

func TestVerifyPaddleSignature(t *testing.T) {
	t.Parallel()
	const secret = "pdl_ntfset_test"
	body := []byte(`{"event_id":"evt_1","event_type":"subscription.updated"}`)
	now := time.Unix(1_750_000_000, 0)
	good := SignPaddle(secret, body, now)
	_, goodH1, _ := strings.Cut(good, ";")
	otherH1 := strings.TrimPrefix(SignPaddle("an old secret", body, now), "ts=1750000000;")
	runSigCases(t, VerifyPaddleSignature, []sigCase{
		{"a signature SignPaddle made", secret, good, body, now, ""},
		{"one of several while a secret is rotated", secret, "ts=1750000000;" + otherH1 + ";" + goodH1, body, now, ""},
		{"with spaces around the parts", secret, " ts=1750000000 ; " + goodH1 + " ", body, now, ""},
		{"made 5 minutes ahead of the server's clock", secret, good, body, now.Add(-5 * time.Minute), ""},
		{"made over 5 minutes ahead", secret, good, body, now.Add(-5*time.Minute - time.Second), "in the future"},
		{"made over 5 minutes ago", secret, good, body, now.Add(5*time.Minute + time.Second), "stale"},
		{"made in the year 9999 with the secret", secret, SignPaddle(secret, body, time.Unix(maxUnix, 0)), body, now, "in the future"},
		{"a wrong signature", secret, "ts=1750000000;" + otherH1, body, now, "does not match"},
		{"a signature of another time", secret, "ts=1750000001;" + goodH1, body, now, "does not match"},
		{"no header", secret, "", body, now, "missing"},
		{"a blank header", secret, "  ", body, now, "missing"},
		{"no timestamp", secret, goodH1, body, now, "malformed (no timestamp ts)"},
		{"two timestamps", secret, "ts=1;" + good, body, now, "malformed (two timestamps)"},
		{"a signed timestamp", secret, "ts=+1750000000;" + goodH1, body, now, "malformed"},
		{"a timestamp that is not a number", secret, "ts=now;" + goodH1, body, now, "malformed"},
		{"a timestamp beyond the year 9999", secret, "ts=253402300800;" + goodH1, body, now, "malformed"},
		{"no signature", secret, "ts=1750000000", body, now, "malformed (no h1 signature"},
		{"a signature that is not hex", secret, "ts=1750000000;h1=zz", body, now, "malformed (no h1 signature"},
		{"Stripe's form", secret, "t=1750000000,v1=" + strings.TrimPrefix(goodH1, "h1="), body, now, "malformed"},
		{"a part without =", secret, good + ";junk", body, now, "malformed"},
		{"too many parts", secret, good + strings.Repeat(";h0=1", 20), body, now, "malformed (too many parts)"},
		{"a header too long", secret, good + ";x=" + strings.Repeat("a", maxSignatureHeader), body, now, "malformed (longer than"},
	})
}

func TestVerifyStripeSignature(t *testing.T) {
	t.Parallel()
	const secret = "whsec_test_secret"
	body := []byte(`{"id":"evt_1","object":"event","type":"invoice.paid"}`)
	signedAt := time.Unix(1_750_000_000, 0)
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: signedAt})
	old := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "whsec_old", Timestamp: signedAt})
	_, v1, _ := strings.Cut(signed.Header, ",")
	_, oldV1, _ := strings.Cut(old.Header, ",")
	v0 := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: signedAt, Scheme: "v0"})

	runSigCases(t, VerifyStripeSignature, []sigCase{
		{"a payload stripe-go signed", secret, signed.Header, body, signedAt.Add(time.Minute), ""},
		{"one of several while a secret is rolled", secret, "t=1750000000," + oldV1 + "," + v1 + ",v0=abc", body, signedAt, ""},
		{"at the end of the tolerance", secret, signed.Header, body, signedAt.Add(5 * time.Minute), ""},
		{"a changed body", secret, signed.Header, append(body, ' '), signedAt, "does not match"},
		{"another secret", "whsec_other", signed.Header, body, signedAt, "does not match"},
		{"only the old secret's signature", secret, old.Header, body, signedAt, "does not match"},
		{"no header", secret, "", body, signedAt, "missing"},
		{"more than 5 minutes old", secret, signed.Header, body, signedAt.Add(5*time.Minute + time.Second), "stale"},
		{"more than 5 minutes ahead", secret, signed.Header, body, signedAt.Add(-5*time.Minute - time.Second), "stale"},
		{"a timestamp that is not a number", secret, "t=yesterday," + v1, body, signedAt, "malformed"},
		{"no timestamp", secret, v1, body, signedAt, "malformed (no timestamp t)"},
		{"only a v0 signature", secret, v0.Header, body, signedAt, "malformed (no v1 signature"},
		{"a v1 that is not hex", secret, "t=1750000000,v1=not-hex", body, signedAt, "malformed (no v1 signature"},
		{"a part without =", secret, signed.Header + ",garbage", body, signedAt, "malformed"},
		{"Paddle's form", secret, strings.ReplaceAll(strings.ReplaceAll(signed.Header, "t=", "ts="), ",", ";"), body, signedAt, "malformed"},
	})
}

// TestVerifyStripeSignatureAgreesWithStripeGo checks, at the real clock that
// stripe-go reads, that both accept and refuse the same deliveries.
func TestVerifyStripeSignatureAgreesWithStripeGo(t *testing.T) {
	t.Parallel()
	const secret = "whsec_agree"
	body := []byte(`{"id":"evt_2","object":"event"}`)
	now := time.Now()
	for _, c := range []struct {
		name   string
		header string
		body   []byte
		ok     bool
	}{
		{"signed now", webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now}).Header, body, true},
		{"signed a minute ago", webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now.Add(-time.Minute)}).Header, body, true},
		{"another body", webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now}).Header, []byte(`{}`), false},
		{"stale", webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: now.Add(-time.Hour)}).Header, body, false},
		{"unsigned", "", body, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			theirs := webhook.ValidatePayloadWithTolerance(c.body, c.header, secret, 5*time.Minute)
			ours := VerifyStripeSignature(secret, c.header, c.body, now, 5*time.Minute)
			if (theirs == nil) != c.ok || (ours == nil) != c.ok {
				t.Fatalf("stripe-go: %v; ours: %v; want accepted = %v", theirs, ours, c.ok)
			}
		})
	}
}

func TestVerifyWithoutSecret(t *testing.T) {
	t.Parallel()
	body := []byte(`{}`)
	now := time.Unix(1_750_000_000, 0)
	for name, err := range map[string]error{
		"stripe": VerifyStripeSignature("", webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Timestamp: now}).Header, body, now, 0),
		"paddle": VerifyPaddleSignature("", SignPaddle("", body, now), body, now, 0),
	} {
		if perch.ErrorCode(err) != perch.EINTERNAL {
			t.Errorf("%s: an empty secret gave %v, want an internal error: a receiver must not verify without one", name, err)
		}
	}
}

// TestSignatureToleranceDefault: with no tolerance given, each provider's
// window is its libraries' (Stripe 300 s, Paddle 5 s), checked at both
// edges and both ways; a tolerance given replaces it.
func TestSignatureToleranceDefault(t *testing.T) {
	t.Parallel()
	body := []byte(`{}`)
	signedAt := time.Unix(1_750_000_000, 0)
	stripeHeader := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: "s", Timestamp: signedAt}).Header
	paddleHeader := SignPaddle("s", body, signedAt)
	if StripeTolerance != webhook.DefaultTolerance {
		t.Errorf("StripeTolerance = %s, stripe-go's DefaultTolerance %s", StripeTolerance, webhook.DefaultTolerance)
	}
	cases := []struct {
		name   string
		verify func(secret, header string, body []byte, now time.Time, tolerance time.Duration) error
		header string
		edge   time.Duration
	}{
		{"Stripe", VerifyStripeSignature, stripeHeader, 300 * time.Second},
		{"Paddle", VerifyPaddleSignature, paddleHeader, 5 * time.Second},
	}
	for _, c := range cases {
		for _, at := range []struct {
			offset time.Duration
			ok     bool
		}{
			{c.edge, true}, {c.edge + time.Second, false}, // received late
			{-c.edge, true}, {-c.edge - time.Second, false}, // a clock ahead
		} {
			err := c.verify("s", c.header, body, signedAt.Add(at.offset), 0)
			if (err == nil) != at.ok {
				t.Errorf("%s received %s after signing: %v, want accepted %v", c.name, at.offset, err, at.ok)
			}
		}
	}
	if err := VerifyPaddleSignature("s", paddleHeader, body, signedAt.Add(59*time.Minute), time.Hour); err != nil {
		t.Errorf("59 minutes within an hour's tolerance: %v", err)
	}
}
