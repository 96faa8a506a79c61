package web

import (
	"net/url"
	"testing"
)

// Known ways of making a "local" redirect target leave the site: browsers
// parse Location by the WHATWG URL rules, which drop tabs and newlines
// anywhere, trim leading spaces and controls, and read "\" as "/".
var offSite = []string{
	"",
	"//evil.test",
	`/\evil.test`,
	"/\t/evil.test",
	"/\r\n/evil.test",
	"/\n/evil.test",
	"/\x0b/evil.test",
	`\\evil.test`,
	`\/evil.test`,
	"https://evil.test",
	"http:/evil.test",
	"http:evil.test",
	"javascript:alert(1)",
	"JaVaScRiPt:alert(1)",
	"data:text/html,hi",
	" /x",
	"\t/x",
	"/x\x00",
	"/x\x7f",
	"///evil.test",
	"/\\/evil.test",
	"/x\\y",
	"evil.test",
	"x",
	"?next=/x",
	"#x",
	"/\xff\xfe",
}

// Paths that stay on the site, and where http.Redirect sends the browser.
var onSite = map[string]string{
	"/":                                 "/",
	"/notifications":                    "/notifications",
	"/org?tab=teams#x":                  "/org?tab=teams#x",
	"/invitations/accept?token=inv_abc": "/invitations/accept?token=inv_abc",
	"/%2F%2Fevil.test":                  "/%2F%2Fevil.test", // an encoded slash is part of a path, not an authority
	"/.//evil.test":                     "/evil.test",       // cleaned by http.Redirect; a path either way
	"/x?next=//evil":                    "/x?next=//evil",
	"/caf\u00e9":                        "/caf%C3%A9",
}

func TestLocalPath(t *testing.T) {
	t.Parallel()
	for _, target := range offSite {
		if localPath(target) {
			t.Errorf("localPath(%q) = true, want false", target)
		}
		if got := safeNext(target); got != "/notifications" {
			t.Errorf("safeNext(%q) = %q, want /notifications", target, got)
		}
	}
	for target := range onSite {
		if !localPath(target) {
			t.Errorf("localPath(%q) = false, want true", target)
		}
		if got := safeNext(target); got != target {
			t.Errorf("safeNext(%q) = %q", target, got)
		}
		// Read as a browser would, relative to the site, it stays there.
		base, _ := url.Parse("https://perch.test/signin")
		ref, err := url.Parse(target)
		if err != nil || base.ResolveReference(ref).Host != "perch.test" {
			t.Errorf("%q resolves off the site (%v)", target, err)
		}
	}
}

func TestLoopbackCallback(t *testing.T) {
	t.Parallel()
	for target, want := range map[string]bool{
		"http://127.0.0.1:8080/callback?session_id=ds_1&code=dvc_2": true,
		"http://127.0.0.1:1/callback?error=access_denied":           true,
		"http://127.0.0.1:8080@evil.test/callback":                  false,
		"http://127.0.0.1:8080.evil.test/callback":                  false,
		"http://127.0.0.1:/callback":                                false,
		"http://127.0.0.1/callback":                                 false,
		"http://127.0.0.1:0/callback":                               false,
		"http://127.0.0.1:65536/callback":                           false,
		"http://127.0.0.1:08080/callback":                           false,
		"https://127.0.0.1:8080/callback":                           false,
		"http://localhost:8080/callback":                            false,
		"http://127.0.0.1:8080/other":                               false,
		"http://127.0.0.1:8080//evil.test/callback":                 false,
		"http://127.0.0.1:8080/callback#x":                          false,
		"http://127.0.0.1:8080/callback\t":                          false,
		"//127.0.0.1:8080/callback":                                 false,
	} {
		if got := loopbackCallback(target); got != want {
			t.Errorf("loopbackCallback(%q) = %v, want %v", target, got, want)
		}
	}
}
