package web

import (
	"net/url"
	"strconv"

	"github.com/perch-dev/perch"
)

// defaultPage is where a browser goes when the page it asked for is not one
// to follow.
const defaultPage = "/notifications"

// localPath reports whether target, which came with a request, is a path of
// this site however a browser reads it (perch.LocalPath).
func localPath(target string) bool { return perch.LocalPath(target) }

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
