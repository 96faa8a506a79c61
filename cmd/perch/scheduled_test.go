package main

import (
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/testenv"
)

func TestSendLaterListAndCancel(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	dir := t.TempDir()
	u.signInTo(t, dir, base)
	env := map[string]string{"PERCH_SERVER": base, "PERCH_WEBHOOK_TOKEN": u.webhook}

	c, stdout, _ := testCLI(t, dir, env)
	if err := dispatch(t.Context(), "send", []string{"--title", "Standup", "--delay", "2h"}, c); err != nil {
		t.Fatal(err)
	}
	id, at, ok := strings.Cut(strings.TrimSpace(stdout.String()), " scheduled for ")
	when, err := time.Parse(time.RFC3339, at)
	if !ok || err != nil || when.Before(time.Now().Add(time.Hour)) {
		t.Fatalf("send printed %q", stdout.String())
	}
	if list, err := u.api.Notifications(t.Context(), "", 10); err != nil || len(list) != 0 {
		t.Fatalf("delivered at once: %d, %v", len(list), err)
	}

	c, stdout, _ = testCLI(t, dir, env)
	if err := dispatch(t.Context(), "scheduled", nil, c); err != nil {
		t.Fatal(err)
	}
	if line := stdout.String(); !strings.HasPrefix(line, id+"  ") || !strings.Contains(line, "[Inbound] Standup") {
		t.Fatalf("scheduled listed %q", line)
	}
	c, stdout, _ = testCLI(t, dir, env)
	if err := dispatch(t.Context(), "scheduled", []string{"cancel", id}, c); err != nil || strings.TrimSpace(stdout.String()) != "cancelled "+id {
		t.Fatalf("cancel: %v, %q", err, stdout)
	}
	c, _, stderr := testCLI(t, dir, env)
	if err := dispatch(t.Context(), "scheduled", nil, c); err != nil || strings.TrimSpace(stderr.String()) != "nothing scheduled" {
		t.Fatalf("after cancelling: %v, %q", err, stderr)
	}
	c, _, _ = testCLI(t, dir, env)
	if err := dispatch(t.Context(), "scheduled", []string{"cancel", id}, c); err == nil || !strings.Contains(err.Error(), "no scheduled notification "+id) {
		t.Fatalf("cancelling again: %v", err)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--title", "x", "--delay", "5m", "--at", "2026-12-03T09:00:00Z"}, "--delay and --at do not go together: give one"},
		{[]string{"--title", "x", "--delay", "soon"}, `--delay "soon": want a positive duration such as 30m or 2h45m`},
		{[]string{"--title", "x", "--at", "tomorrow"}, `--at "tomorrow": want a time in RFC 3339, such as 2026-12-03T09:00:00Z`},
	} {
		c, _, _ := testCLI(t, dir, env)
		if err := dispatch(t.Context(), "send", tt.args, c); err == nil || err.Error() != tt.want {
			t.Errorf("send %v: %v, want %q", tt.args, err, tt.want)
		}
	}
	// The server's own bound: 8 days is too far.
	c, _, _ = testCLI(t, dir, env)
	if err := dispatch(t.Context(), "send", []string{"--title", "x", "--delay", "192h"}, c); err == nil || !strings.Contains(err.Error(), "delay") {
		t.Errorf("send --delay 192h: %v", err)
	}
}

// perch serve's worker delivers a scheduled notification once it is due.
func TestSendLaterIsDeliveredByServe(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	c, stdout, _ := testCLI(t, t.TempDir(), map[string]string{"PERCH_SERVER": base, "PERCH_WEBHOOK_TOKEN": u.webhook})
	if err := dispatch(t.Context(), "send", []string{"--title", "Soon", "--delay", "1s"}, c); err != nil || !strings.Contains(stdout.String(), " scheduled for ") {
		t.Fatalf("send: %v, %q", err, stdout)
	}
	testenv.Eventually(t, 30*time.Second, func() bool {
		list, err := u.api.Notifications(t.Context(), "", 10)
		return err == nil && len(list) == 1 && list[0].Title == "Soon" && list[0].DeliverAt != nil
	}, "the scheduled notification was not delivered")
}
