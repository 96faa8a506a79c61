package web

import (
	"net/url"
	"strconv"
	"unicode/utf8"
)

// defaultPage is where a browser goes when the page it asked for is not one
// to follow.
const defaultPage = "/notifications"

// localPath reports whether target, which came with a request, is a path of
// this site however a browser reads it. Browsers parse Location by the
// WHATWG URL rules, which drop tabs and newlines anywhere, trim leading
// spaces and controls, and read "\" as "/": "/\t/evil.test" and
// "/\evil.test" are both "//evil.test", another host. So a target must start
// with one "/" followed by anything but "/" or "\", and hold no control
// character or "\" anywhere; what is left is a path (with a query and a
// fragment) that no parser reads a scheme or a host in.
func localPath(target string) bool {
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

// safeNext is where to go after signing in: next when it is a path of this
// site, else the feed.
func safeNext(next string) string {
	if localPath(next) {
		return next
	}
	return defaultPage
}

// loopbackCallback reports whether target is the desktop app's loopback
// callback, http://127.0.0.1:<port>/callback?…, which is the one address
// off this site the dashboard sends a browser to. Starting like one is not
// enough: "http://127.0.0.1:80@evil.test/" is another host.
func loopbackCallback(target string) bool {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Host != "127.0.0.1:"+u.Port() || u.Path != "/callback" || u.Fragment != "" {
		return false
	}
	port, err := strconv.Atoi(u.Port())
	return err == nil && port > 0 && port <= 65535 && strconv.Itoa(port) == u.Port()
}
