package perch

import (
	"net/url"
	"unicode/utf8"
)

// LocalPath reports whether target, which came with a request, is a path of
// this site however a browser reads it, and so safe to redirect to after a
// sign-in. Browsers parse Location by the WHATWG URL rules, which drop tabs
// and newlines anywhere, trim leading spaces and controls, and read "\" as
// "/": "/\t/evil.test" and "/\evil.test" are both "//evil.test", another
// host. So a target must start with one "/" followed by anything but "/" or
// "\", and hold no control character or "\" anywhere; what is left is a
// path (with a query and a fragment) that no parser reads a scheme or a
// host in.
func LocalPath(target string) bool {
	if len(target) == 0 || target[0] != '/' {
		return false
	}
	if len(target) > 1 && (target[1] == '/' || target[1] == '\\') {
		return false
	}
	if !utf8.ValidString(target) {
		return false
	}
	for i := 0; i < len(target); i++ {
		if c := target[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(target)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && u.Opaque == ""
}
