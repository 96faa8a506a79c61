package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAct: perch act runs an http action of a notification as the
// signed-in user, by its id or its label, and prints what the target
// answered; a view action prints its link; an unknown action, an unknown
// notification and a missing argument are refused with the reason.
func TestAct(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("X-Perch-Signature") == "" || r.Header.Get("X-Token") != "t0k" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(target.Close)
	base := startServer(t, map[string]string{"PERCH_RATE_LIMIT_AUTH": "1000/1m", "PERCH_WORKFLOW_ALLOW_PRIVATE": "true"})
	u := newTestUser(t, base, "Ada")
	body, _ := json.Marshal(map[string]any{"title": "Deploy 7 waits", "actions": []any{
		map[string]any{"type": "view", "label": "Open", "url": "https://ci.example.com/7"},
		map[string]any{"type": "http", "label": "Approve", "url": target.URL + "/approve", "headers": map[string]string{"X-Token": "t0k"}},
	}})
	res, err := http.Post(base+"/webhooks/inbound?token="+url.QueryEscape(u.webhook), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var receipt struct {
		IDs []string `json:"ids"`
	}
	json.NewDecoder(res.Body).Decode(&receipt)
	res.Body.Close()
	if res.StatusCode != 200 || len(receipt.IDs) != 1 {
		t.Fatalf("delivery: %d %+v", res.StatusCode, receipt)
	}
	id := receipt.IDs[0]
	dir := t.TempDir()
	u.signInTo(t, dir, base)

	c, stdout, _ := testCLI(t, dir, nil)
	if err := dispatch(t.Context(), "act", []string{id, "a2"}, c); err != nil {
		t.Fatalf("act: %v", err)
	}
	if got := strings.TrimSpace(stdout.String()); got != "done: the target answered 204" || hits.Load() != 1 {
		t.Errorf("stdout %q, %d hits", got, hits.Load())
	}

	// By its label, in any case, as perch listen shows it.
	c, stdout, _ = testCLI(t, dir, nil)
	if err := dispatch(t.Context(), "act", []string{id, "approve"}, c); err != nil {
		t.Fatalf("act by label: %v", err)
	}
	if got := strings.TrimSpace(stdout.String()); got != "done: the target answered 204" || hits.Load() != 2 {
		t.Errorf("by label: stdout %q, %d hits", got, hits.Load())
	}
	// A view action has nothing for the server to run: its link is printed.
	for _, name := range []string{"a1", "Open"} {
		c, stdout, _ = testCLI(t, dir, nil)
		if err := dispatch(t.Context(), "act", []string{id, name}, c); err != nil {
			t.Fatalf("act %s (view): %v", name, err)
		}
		if got := strings.TrimSpace(stdout.String()); got != "Open opens https://ci.example.com/7" {
			t.Errorf("act %s (view): stdout %q", name, got)
		}
	}
	if hits.Load() != 2 {
		t.Errorf("a view action reached the http target: %d hits", hits.Load())
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{id, "a9"}, `has no action "a9"`},
		{[]string{id, "Reject"}, `has no action "Reject"`},
		{[]string{"424242", "a1"}, "No notification"},
	} {
		c, _, _ := testCLI(t, dir, nil)
		if err := dispatch(t.Context(), "act", tt.args, c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("act %v: %v, want it to say %q", tt.args, err, tt.want)
		}
	}
	c, _, _ = testCLI(t, dir, nil)
	if err := dispatch(t.Context(), "act", []string{id}, c); !errors.Is(err, errUsage) {
		t.Errorf("act with one argument: %v", err)
	}
}
