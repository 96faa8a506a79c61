package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
)

// TestListenMarksSilent: a notification the user's preferences silence (a
// muted tab, and min priority, which never pops up) is printed with its
// mark, carries silent in --json, and runs no --exec command unless
// --exec-silent asks for it.
func TestListenMarksSilent(t *testing.T) {
	t.Parallel()
	base := clientServer(t)
	u := newTestUser(t, base, "Ada")
	if _, err := u.api.SetPreferences(t.Context(), &perch.Preferences{Muted: []perch.Mute{{Tab: "Noise"}}}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	u.signInTo(t, dir, base)
	send := func() {
		u.send(t, client.InboundEvent{Title: "loud", Tab: "Ops"})
		u.send(t, client.InboundEvent{Title: "muted", Tab: "Noise", Priority: "urgent"})
		u.send(t, client.InboundEvent{Title: "least", Tab: "Ops", Priority: "min"})
	}

	t.Run("lines", func(t *testing.T) {
		c, stdout, stderr := testCLI(t, dir, nil)
		stop := background(t, c, "listen", "--name", "lines")
		stderr.waitFor(t, "listening for notifications from "+base)
		send()
		stdout.waitFor(t, "least")
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		want := []string{"[info] Ops: loud", silentMark + "[info, urgent] Noise: muted", silentMark + "[info, min] Ops: least"}
		if len(lines) != len(want) {
			t.Fatalf("printed:\n%s", stdout)
		}
		for i, l := range lines {
			if _, rest, _ := strings.Cut(l, "  "); rest != want[i] {
				t.Errorf("line %q, want a time then %q", l, want[i])
			}
		}
	})
	t.Run("json", func(t *testing.T) {
		c, stdout, stderr := testCLI(t, dir, nil)
		stop := background(t, c, "listen", "--json", "--name", "json", "--since", "0")
		stderr.waitFor(t, "listening for notifications from "+base)
		stdout.waitFor(t, `"title":"least"`)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			var n struct {
				Title  string `json:"title"`
				Silent bool   `json:"silent"`
			}
			if err := json.Unmarshal([]byte(line), &n); err != nil {
				t.Fatal(err)
			}
			got[n.Title] = n.Silent
		}
		if len(got) != 3 || got["loud"] || !got["muted"] || !got["least"] {
			t.Errorf("silent by title = %v", got)
		}
	})
	if runtime.GOOS == "windows" {
		return // the commands are written for sh
	}
	for _, tt := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"exec", nil, "loud:"},
		{"exec-silent", []string{"--exec-silent"}, "loud: muted:1 least:1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, stdout, stderr := testCLI(t, dir, nil)
			args := append([]string{"listen", "--name", tt.name, "--since", "0", "--exec", `printf '%s:%s ' "$PERCH_TITLE" "$PERCH_SILENT"`}, tt.flags...)
			stop := background(t, c, args...)
			stderr.waitFor(t, "listening for notifications from "+base)
			// The replay is done with the ready frame: what it held has run.
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(stdout.String()); got != tt.want {
				t.Errorf("commands ran for %q, want %q", got, tt.want)
			}
		})
	}
}
