package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// A summary lists ten titles and counts the rest; it keeps the URL that
// every held notification shares.
func TestDigestSummaryOfMany(t *testing.T) {
	d := &store.Digest{OrgID: "org_1", Key: "k", WindowEnd: time.UnixMilli(1234), More: 5}
	for i := range 12 {
		d.Notifications = append(d.Notifications, perch.Notification{Title: "Event " + string(rune('A'+i)), Severity: perch.SeverityInfo,
			URL: "https://x.example.com", Scope: perch.Scope{Type: perch.ScopeTeam, ID: "team_1"}, Tab: "T", Source: "s"})
	}
	d.Notifications[0].Title = strings.Repeat("long ", 100)
	sum := digestSummary(d)
	nn := sum.Notification
	lines := strings.Split(nn.Message, "\n")
	if len(lines) != 11 || lines[9] != "• Event J" || lines[10] != "… and 7 more" {
		t.Errorf("message lines %q", lines)
	}
	if !strings.HasPrefix(nn.Title, "17 notifications: long long") || len([]rune(nn.Title)) > 200 || !strings.HasSuffix(nn.Title, "…") {
		t.Errorf("title %q (%d characters)", nn.Title, len([]rune(nn.Title)))
	}
	if nn.URL != "https://x.example.com" || nn.Scope != (perch.Scope{Type: perch.ScopeTeam, ID: "team_1"}) || nn.Severity != perch.SeverityInfo {
		t.Errorf("summary %+v", nn)
	}
	if sum.DedupeKey != "digest|org_1|k|1234" {
		t.Errorf("dedupe key %q", sum.DedupeKey)
	}
}
