package perch

import (
	"strings"
	"testing"
)

// TestValidURL: a notification's link is empty or an absolute http(s)
// URL of at most MaxURL bytes; every other scheme, a relative path and
// anything longer is refused.
func TestValidURL(t *testing.T) {
	t.Parallel()
	long := "https://example.com/" + strings.Repeat("a", MaxURL)
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{"", true},
		{"https://github.com/acme/widgets/pull/1", true},
		{"http://example.com", true},
		{"HTTPS://Example.com/Path?q=1#frag", true},
		{long[:MaxURL], true},
		{long[:MaxURL+1], false},
		{"javascript:alert(document.cookie)", false},
		{"JavaScript://example.com/%0aalert(1)", false},
		{"file:///etc/passwd", false},
		{"data:text/html,<script>alert(1)</script>", false},
		{"vbscript:msgbox", false},
		{"ftp://example.com/x", false},
		{"//example.com/x", false},
		{"/relative/path", false},
		{"https://", false},
		{"https:///path", false},
		{" https://example.com", false},
		{"https://example.com/\x00", false},
		{"https://exa mple.com/", false},
		{"not a url at all", false},
	} {
		if got := ValidURL(tc.url); got != tc.want {
			t.Errorf("ValidURL(%q) = %v, want %v", tc.url, got, tc.want)
		}
	}
}

func TestSourceTitleNamesTheRealSystems(t *testing.T) {
	t.Parallel()
	for source, want := range map[string]string{
		SourceInbound: "Inbound", SourceIncidents: "PagerDuty", SourceCodeHost: "GitHub", SourceMonitor: "Datadog",
		SourcePaymentsA: "Stripe", SourcePaymentsB: "Paddle", "workflow": "workflow",
	} {
		if got := SourceTitle(source); got != want {
			t.Errorf("SourceTitle(%q) = %q, want %q", source, got, want)
		}
	}
}
