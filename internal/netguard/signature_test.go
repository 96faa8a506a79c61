package netguard

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSignIsTheDocumentedHMAC(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 0)
	// HMAC-SHA256("s3cret", "1700000000.{}"), computed with openssl dgst -sha256 -hmac.
	const want = "t=1700000000,v1=97926816e98fbb41ccb1673225ff29a2f35369099990e1b1561651e7bd097ebf"
	if got := Sign("s3cret", []byte("{}"), at); got != want {
		t.Errorf("Sign = %q, want %q", got, want)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	signedAt := time.Unix(1700000000, 0)
	body := []byte(`{"title":"Disk full","severity":"high"}`)
	header := Sign("s3cret", body, signedAt)
	_, v1, _ := strings.Cut(header, ",")
	for _, tt := range []struct {
		name   string
		secret string
		header string
		body   string
		now    time.Time
		want   error // nil: verified
	}{
		{"round trip", "s3cret", header, string(body), signedAt, nil},
		{"within tolerance after", "s3cret", header, string(body), signedAt.Add(5 * time.Minute), nil},
		{"within tolerance before", "s3cret", header, string(body), signedAt.Add(-5 * time.Minute), nil},
		{"spaces after commas", "s3cret", strings.ReplaceAll(header, ",", ", "), string(body), signedAt, nil},
		{"one of two v1 matches", "s3cret", header + ",v1=" + strings.Repeat("ab", 32), string(body), signedAt, nil},
		{"unknown schemes ignored", "s3cret", header + ",v0=old", string(body), signedAt, nil},
		{"wrong secret", "other", header, string(body), signedAt, errMismatch},
		{"changed body", "s3cret", header, `{"title":"Disk fine","severity":"high"}`, signedAt, errMismatch},
		{"changed timestamp", "s3cret", "t=1700000001," + v1, string(body), signedAt, errMismatch},
		{"stale", "s3cret", header, string(body), signedAt.Add(5*time.Minute + time.Second), errStale},
		{"from the future", "s3cret", header, string(body), signedAt.Add(-6 * time.Minute), errStale},
		{"empty secret", "", header, string(body), signedAt, errNoSecret},
		{"empty header", "s3cret", "", string(body), signedAt, errMalformed},
		{"no t", "s3cret", v1, string(body), signedAt, errMalformed},
		{"no v1", "s3cret", "t=1700000000", string(body), signedAt, errMalformed},
		{"two t", "s3cret", "t=1,t=1700000000," + v1, string(body), signedAt, errMalformed},
		{"t not a number", "s3cret", "t=soon," + v1, string(body), signedAt, errMalformed},
		{"v1 not hex", "s3cret", "t=1700000000,v1=zz", string(body), signedAt, errMalformed},
		{"v1 too short", "s3cret", "t=1700000000,v1=abcd", string(body), signedAt, errMalformed},
		{"not key=value", "s3cret", header + ",junk", string(body), signedAt, errMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Verify(tt.secret, tt.header, []byte(tt.body), tt.now, 5*time.Minute)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Errorf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func FuzzVerify(f *testing.F) {
	f.Add("s3cret", []byte(`{}`), "t=1700000000,v1=00")
	f.Add("k", []byte("body"), "")
	f.Fuzz(func(t *testing.T, secret string, body []byte, header string) {
		now := time.Unix(1700000000, 0)
		_ = Verify(secret, header, body, now, time.Minute) // must not panic
		if secret == "" {
			return
		}
		if err := Verify(secret, Sign(secret, body, now), body, now, 0); err != nil {
			t.Fatalf("Verify(Sign(...)) = %v", err)
		}
	})
}
