package perch_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

// The example of RFC 7636 Appendix B.
const (
	rfcVerifier  = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
	rfcChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
)

func TestDeviceS256MatchesRFC7636(t *testing.T) {
	if got := perch.S256Challenge(rfcVerifier); got != rfcChallenge {
		t.Fatalf("S256Challenge = %q, want %q", got, rfcChallenge)
	}
	if !perch.VerifierMatches(rfcVerifier, rfcChallenge) {
		t.Fatal("the RFC's verifier does not match its challenge")
	}
	if perch.VerifierMatches(rfcVerifier[:42]+"X", rfcChallenge) || perch.VerifierMatches(rfcVerifier, rfcChallenge[:42]) {
		t.Fatal("a wrong verifier or a cut challenge matches")
	}
}

func TestDeviceCodeVerifierForm(t *testing.T) {
	for v, want := range map[string]bool{
		rfcVerifier:                         true,
		strings.Repeat("a", 43):             true,
		strings.Repeat("Z9-._~", 21) + "xy": true, // 128
		strings.Repeat("a", 42):             false,
		strings.Repeat("a", 129):            false,
		strings.Repeat("a", 42) + "+":       false,
		strings.Repeat("a", 42) + "/":       false,
		strings.Repeat("a", 42) + "=":       false,
		strings.Repeat("a", 42) + " ":       false,
		strings.Repeat("a", 42) + "é":       false,
		"":                                  false,
	} {
		if got := perch.ValidCodeVerifier(v); got != want {
			t.Errorf("ValidCodeVerifier(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestDeviceCodeChallengeForm(t *testing.T) {
	for c, want := range map[string]bool{
		rfcChallenge:                       true,
		strings.Repeat("-_aZ9", 8) + "abc": true,
		rfcChallenge[:42]:                  false,
		rfcChallenge + "A":                 false,
		rfcChallenge[:42] + "+":            false,
		rfcChallenge[:42] + "=":            false,
		rfcChallenge[:42] + ".":            false,
		"":                                 false,
	} {
		if got := perch.ValidCodeChallenge(c); got != want {
			t.Errorf("ValidCodeChallenge(%q) = %v, want %v", c, got, want)
		}
	}
}

func TestDeviceAuthorizeProblems(t *testing.T) {
	cases := []struct {
		port, challenge, method string
		want                    []string // fields with problems
	}{
		{"1024", rfcChallenge, "", nil},
		{"65535", rfcChallenge, "S256", nil},
		{"", rfcChallenge, "", []string{"port"}},
		{"1023", rfcChallenge, "", []string{"port"}},
		{"65536", rfcChallenge, "", []string{"port"}},
		{"http", rfcChallenge, "", []string{"port"}},
		{"8080", "", "", []string{"code_challenge"}},
		{"8080", rfcVerifier + "x", "", []string{"code_challenge"}},
		{"8080", rfcChallenge, "plain", []string{"code_challenge_method"}},
		{"0", "x", "plain", []string{"port", "code_challenge", "code_challenge_method"}},
	}
	for _, c := range cases {
		port, err := perch.ValidateDeviceAuthorize(c.port, c.challenge, c.method)
		if c.want == nil {
			if err != nil || c.port != strconv.Itoa(port) {
				t.Errorf("%v: %d, %v", c, port, err)
			}
			continue
		}
		e, ok := err.(*perch.Error)
		if !ok || e.Code != perch.EBADREQUEST || len(e.Fields) != len(c.want) {
			t.Errorf("%v: %v, want bad_request on %v", c, err, c.want)
			continue
		}
		for _, f := range c.want {
			if e.Fields[f] == "" {
				t.Errorf("%v: no problem with %s in %v", c, f, e.Fields)
			}
		}
	}
}
