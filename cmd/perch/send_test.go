package main

import (
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

func TestSend(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	env := map[string]string{"PERCH_SERVER": base, "PERCH_WEBHOOK_TOKEN": u.webhook}

	t.Run("flags", func(t *testing.T) {
		c, stdout, _ := testCLI(t, t.TempDir(), env)
		if err := dispatch(t.Context(), "send", []string{"--title", "Deploy finished", "--message", "api is live", "--tab", "Deploys", "--severity", "warning",
			"--url", "https://ci.example.com/runs/7"}, c); err != nil {
			t.Fatal(err)
		}
		n := stored(t, u, strings.TrimSpace(stdout.String()))
		if n.Title != "Deploy finished" || n.Message != "api is live" || n.Tab != "Deploys" || n.Severity != "warning" || n.Source != "inbound" ||
			n.URL != "https://ci.example.com/runs/7" {
			t.Fatalf("stored %+v", n)
		}
	})

	t.Run("priority, tags, icon, Markdown and actions", func(t *testing.T) {
		c, stdout, _ := testCLI(t, t.TempDir(), env)
		if err := dispatch(t.Context(), "send", []string{"--title", "Disk full", "--message", "**92%**", "--priority", "urgent",
			"--tag", "warning", "--tag", "db-1", "--icon", "https://example.com/db.png", "--markdown",
			"--action", "view, Open dashboard, https://grafana.example.com/d/db",
			"--action", "http, Restart, https://ops.example.com/restart, method=PUT, header.Authorization=Bearer x, body={\"a\": 1, \"b\": 2}"}, c); err != nil {
			t.Fatal(err)
		}
		n := stored(t, u, strings.TrimSpace(stdout.String()))
		if n.Priority != perch.PriorityUrgent || strings.Join(n.Tags, " ") != "warning db-1" || n.Icon != "https://example.com/db.png" || !n.Markdown ||
			len(n.Actions) != 2 || n.Actions[0] != (perch.NotificationAction{ID: "a1", Type: "view", Label: "Open dashboard", URL: "https://grafana.example.com/d/db"}) ||
			n.Actions[1] != (perch.NotificationAction{ID: "a2", Type: "http", Label: "Restart"}) {
			t.Fatalf("stored %+v", n)
		}
	})

	t.Run("JSON on stdin, a flag winning over it", func(t *testing.T) {
		c, stdout, _ := testCLI(t, t.TempDir(), nil)
		c.stdin = strings.NewReader(`{"title": "Backup done", "message": "42 GB", "tab": "Ops", "severity": "info"}`)
		if err := dispatch(t.Context(), "send", []string{"--server", base, "--token", u.webhook, "--severity", "error"}, c); err != nil {
			t.Fatal(err)
		}
		n := stored(t, u, strings.TrimSpace(stdout.String()))
		if n.Title != "Backup done" || n.Message != "42 GB" || n.Tab != "Ops" || n.Severity != "error" {
			t.Fatalf("stored %+v", n)
		}
	})

	// The server of the default sign-in will do; the sign-in itself is not
	// used.
	t.Run("server of the default sign-in", func(t *testing.T) {
		dir := t.TempDir()
		u.signInTo(t, dir, base)
		c, stdout, _ := testCLI(t, dir, map[string]string{"PERCH_WEBHOOK_TOKEN": u.webhook})
		if err := dispatch(t.Context(), "send", []string{"--title", "hi"}, c); err != nil || strings.TrimSpace(stdout.String()) == "" {
			t.Fatalf("send: %v, stdout %q", err, stdout)
		}
	})

	for _, tt := range []struct {
		name  string
		env   map[string]string
		stdin string
		args  []string
		want  string // the whole error, as main prints it after "perch: "
	}{
		{name: "no token", env: map[string]string{"PERCH_SERVER": base}, args: []string{"--title", "x"},
			want: "a webhook token is required: pass --token whk_… or set PERCH_WEBHOOK_TOKEN (make one on the dashboard's Webhook tokens page, for the inbound receiver)"},
		{name: "not a webhook token", env: env, args: []string{"--title", "x", "--token", "pat_nope"},
			want: "The token is not a webhook token (whk_…)."},
		{name: "unknown webhook token", env: env, args: []string{"--title", "x", "--token", "whk_" + strings.Repeat("a", 52)},
			want: "The webhook token is invalid or was deleted."},
		{name: "no server", env: map[string]string{"PERCH_WEBHOOK_TOKEN": u.webhook}, args: []string{"--title", "x"},
			want: "which server? Pass --server https://perch.example.com (or set PERCH_SERVER)"},
		{name: "no title", env: env,
			want: `a title is required: pass --title, or pipe a JSON body {"title", "message", "tab", "severity", "url", "priority", "tags", "icon", "markdown", "actions"} into stdin`},
		{name: "empty stdin", env: env, stdin: " \n",
			want: `stdin is empty: pipe a JSON body {"title", "message", "tab", "severity", "url", "priority", "tags", "icon", "markdown", "actions"} into it, or pass --title`},
		{name: "bad severity", env: env, args: []string{"--title", "x", "--severity", "fatal"},
			want: "severity must be info, warning or error."},
		{name: "not a web link", env: env, args: []string{"--title", "x", "--url", "javascript:alert(1)"},
			want: "url must be an http:// or https:// address."},
		{name: "bad priority", env: env, args: []string{"--title", "x", "--priority", "loud"},
			want: "priority must be 1 to 5 or min, low, default, high or urgent."},
		{name: "an action without a URL", env: env, args: []string{"--title", "x", "--action", "view, Open"},
			want: `--action "view, Open": want 'view, Label, URL' or 'http, Label, URL[, method=PUT][, header.Name=value][, body=…]'`},
		{name: "an action option unknown", env: env, args: []string{"--title", "x", "--action", "http, Go, https://a.example, timeout=5"},
			want: `--action "http, Go, https://a.example, timeout=5": unknown option "timeout" (method=, header.Name=, body=)`},
		{name: "control characters", env: env, args: []string{"--title", "a\x00b", "--message", "\x1b[31mred"},
			want: "title must not contain control characters. message must not contain control characters other than line breaks and tabs."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, stdout, _ := testCLI(t, t.TempDir(), tt.env)
			if tt.stdin != "" {
				c.stdin = strings.NewReader(tt.stdin)
			}
			err := dispatch(t.Context(), "send", tt.args, c)
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v\nwant %s", err, tt.want)
			}
			if stdout.String() != "" {
				t.Errorf("stdout %q", stdout)
			}
		})
	}
}

// stored returns the user's notification with id.
func stored(t *testing.T, u *testUser, id string) *perch.Notification {
	t.Helper()
	list, err := u.api.Notifications(t.Context(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range list {
		if n.ID == id {
			return n
		}
	}
	t.Fatalf("no notification %q among %d", id, len(list))
	return nil
}
