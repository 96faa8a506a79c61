package perch_test

import (
	"net/url"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	none := "\x00absent" // client_name not sent at all
	cases := []struct {
		port, challenge, method, name string
		want                          []string // fields with problems
	}{
		{"1024", rfcChallenge, "", none, nil},
		{"65535", rfcChallenge, "S256", none, nil},
		{"8080", rfcChallenge, "", "perch CLI on ada-laptop", nil},
		{"8080", rfcChallenge, "", "  Perch für Ada’s Mac  ", nil},
		{"8080", rfcChallenge, "", strings.Repeat("é", 64), nil},
		{"", rfcChallenge, "", none, []string{"port"}},
		{"1023", rfcChallenge, "", none, []string{"port"}},
		{"65536", rfcChallenge, "", none, []string{"port"}},
		{"http", rfcChallenge, "", none, []string{"port"}},
		{"8080", "", "", none, []string{"code_challenge"}},
		{"8080", rfcVerifier + "x", "", none, []string{"code_challenge"}},
		{"8080", rfcChallenge, "plain", none, []string{"code_challenge_method"}},
		{"8080", rfcChallenge, "", "", []string{"client_name"}},
		{"8080", rfcChallenge, "", "   ", []string{"client_name"}},
		{"8080", rfcChallenge, "", strings.Repeat("é", 65), []string{"client_name"}},
		{"8080", rfcChallenge, "", "perch CLI\nApproved by IT", []string{"client_name"}},
		{"8080", rfcChallenge, "", "perch\x1b[31m CLI", []string{"client_name"}},
		{"8080", rfcChallenge, "", "perch \u202eILC", []string{"client_name"}}, // right-to-left override
		{"8080", rfcChallenge, "", "perch\u200b CLI", []string{"client_name"}}, // zero-width space
		{"8080", rfcChallenge, "", "perch \xff CLI", []string{"client_name"}},
		{"0", "x", "plain", "", []string{"port", "code_challenge", "code_challenge_method", "client_name"}},
	}
	for _, c := range cases {
		q := url.Values{"port": {c.port}, "code_challenge": {c.challenge}, "code_challenge_method": {c.method}}
		if c.name != none {
			q.Set("client_name", c.name)
		}
		req, err := perch.ParseDeviceAuthorize(q)
		if c.want == nil {
			wantName := strings.TrimSpace(c.name)
			if c.name == none {
				wantName = perch.DefaultDeviceClientName
			}
			if err != nil || c.port != strconv.Itoa(req.Port) || req.CodeChallenge != c.challenge || req.ClientName != wantName {
				t.Errorf("%+v: %+v, %v", c, req, err)
			}
			continue
		}
		e, ok := err.(*perch.Error)
		if !ok || e.Code != perch.EBADREQUEST || len(e.Fields) != len(c.want) {
			t.Errorf("%+q: %v, want bad_request on %v", c, err, c.want)
			continue
		}
		for _, f := range c.want {
			if e.Fields[f] == "" {
				t.Errorf("%+q: no problem with %s in %v", c, f, e.Fields)
			}
		}
	}
}

func TestDeviceUserCodes(t *testing.T) {
	t.Parallel()
	for typed, want := range map[string]string{
		"BCDF-GHJK":   "BCDFGHJK",
		"bcdf-ghjk":   "BCDFGHJK",
		" bcdf ghjk ": "BCDFGHJK",
		"BCDFGHJK":    "BCDFGHJK",
		"ZXWV-TSRQ":   "ZXWVTSRQ",
		"":            "",
		"BCDF-GHJ":    "", // too short
		"BCDF-GHJKL":  "", // too long
		"ABCD-EFGH":   "", // vowels are not in the alphabet
		"BCDF-GHJ1":   "", // nor digits
		"BCDF_GHJK":   "",
		"BCDF-GHJЌ":   "", // a Cyrillic look-alike
	} {
		got, ok := perch.NormalizeUserCode(typed)
		if ok != (want != "") || got != want {
			t.Errorf("NormalizeUserCode(%q) = %q, %v; want %q", typed, got, ok, want)
		}
	}
	if got := perch.FormatUserCode("BCDFGHJK"); got != "BCDF-GHJK" {
		t.Errorf("FormatUserCode = %q", got)
	}

	d := &perch.DeviceSession{UserCodeHash: perch.HashUserCode("BCDFGHJK")}
	for _, typed := range []string{"BCDF-GHJK", "bcdfghjk"} {
		if err := d.CheckUserCode(typed); err != nil {
			t.Errorf("CheckUserCode(%q) = %v", typed, err)
		}
	}
	for _, typed := range []string{"BCDF-GHJL", "nope", ""} {
		e, ok := d.CheckUserCode(typed).(*perch.Error)
		if !ok || e.Code != perch.EVALIDATION || e.Fields["user_code"] == "" {
			t.Errorf("CheckUserCode(%q) = %v, want validation_failed on user_code", typed, e)
		}
	}
	// A sign-in without a user code (started before there were any)
	// matches nothing.
	if err := (&perch.DeviceSession{}).CheckUserCode("BCDF-GHJK"); perch.ErrorCode(err) != perch.EVALIDATION {
		t.Errorf("CheckUserCode without a stored code = %v", err)
	}
}

func TestDeviceCallbackOnlySignInsAreNotPolled(t *testing.T) {
	t.Parallel()
	d := &perch.DeviceSession{Status: perch.DeviceApproved}
	if err := d.CheckExchangeable(false); err != nil {
		t.Errorf("exchange with the one-time code: %v", err)
	}
	if err := d.CheckExchangeable(true); err != perch.ErrDeviceCallbackOnly {
		t.Errorf("a poll of a sign-in approved without the user code: %v, want ErrDeviceCallbackOnly", err)
	}
	d.UserCodeConfirmed = true
	if err := d.CheckExchangeable(true); err != nil {
		t.Errorf("a poll of a sign-in approved with the user code: %v", err)
	}
}
