package hub

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// frameSilent decodes a notification frame's silent.
func frameSilent(t *testing.T, f Frame) bool {
	t.Helper()
	var w struct {
		Type string `json:"type"`
		Data struct {
			ID     string `json:"id"`
			Silent bool   `json:"silent"`
		} `json:"data"`
	}
	if err := json.Unmarshal(f.Data, &w); err != nil || w.Type != "notification" || w.Data.ID == "" {
		t.Fatalf("not a notification frame: %s (%v)", f.Data, err)
	}
	return w.Data.Silent
}

func TestSilentFramesFollowEachClientsPreferences(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := New(WithClock(func() time.Time { return now }))
	plain1 := NewClient(perch.Audience{UserID: "bob", OrgID: "a"}, 8, nop)
	plain2 := NewClient(perch.Audience{UserID: "cy", OrgID: "a"}, 8, nop)
	muting1 := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8, nop)
	muting2 := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8, nop)
	for _, c := range []*Client{plain1, plain2, muting1, muting2} {
		h.Add(c)
	}
	mute := &perch.Preferences{Muted: []perch.Mute{{Tab: "Code"}}}
	muting1.SetPreferences(1, mute, now)
	muting2.SetPreferences(1, mute, now)

	code := note("1", perch.ScopeOrg, "a")
	code.Notification.Tab, code.Notification.Priority = "Code", perch.PriorityDefault
	other := note("2", perch.ScopeOrg, "a")
	other.Notification.Tab, other.Notification.Priority = "Inbound", perch.PriorityDefault
	least := note("3", perch.ScopeOrg, "a")
	least.Notification.Tab, least.Notification.Priority = "Inbound", perch.PriorityMin
	h.Deliver(code)
	h.Deliver(other)
	h.Deliver(least)

	frames := map[*Client][]Frame{}
	for _, c := range []*Client{plain1, plain2, muting1, muting2} {
		frames[c] = c.Take(nil)
		if len(frames[c]) != 3 {
			t.Fatalf("%s got %d frames", c.Audience.UserID, len(frames[c]))
		}
	}
	want := map[*Client][3]bool{plain1: {false, false, true}, plain2: {false, false, true}, muting1: {true, false, true}, muting2: {true, false, true}}
	for c, w := range want {
		for i, f := range frames[c] {
			if got := frameSilent(t, f); got != w[i] {
				t.Errorf("%s frame %d silent = %v, want %v", c.Audience.UserID, f.ID, got, w[i])
			}
		}
	}
	// Two encodings at most, each shared by the clients that get it.
	encode := func(b []byte) []byte { return append([]byte("ws:"), b...) }
	if a, b := frames[muting1][0].Encoded(encode), frames[muting2][0].Encoded(encode); &a[0] != &b[0] {
		t.Error("the silent variant was encoded once per client")
	}
	if a, b := frames[plain1][0].Encoded(encode), frames[plain2][0].Encoded(encode); &a[0] != &b[0] {
		t.Error("the plain frame was encoded once per client")
	}
	if frames[plain1][0].wire == frames[muting1][0].wire {
		t.Error("the silent and the plain frame share their encoding")
	}
}

func TestPreferencesFrameReachesTheUsersClientsNewerOnly(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := New(WithClock(func() time.Time { return now }))
	ada1 := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8, nop)
	ada2 := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8, nop)
	bob := NewClient(perch.Audience{UserID: "bob", OrgID: "a"}, 8, nop)
	for _, c := range []*Client{ada1, ada2, bob} {
		h.Add(c)
	}
	snooze := now.Add(time.Hour)
	v2 := &perch.Preferences{Muted: []perch.Mute{}, SnoozeUntil: &snooze}
	// ada2 connected after the change and loaded it already.
	ada2.SetPreferences(2, v2, now)
	h.Deliver(perch.FanoutMessage{Kind: perch.FanoutPreferences, UserID: "ada", Preferences: v2, Version: 2})
	if got := ada1.Take(nil); len(got) != 1 || string(got[0].Data) != `{"type":"preferences","data":{"muted":[],"quiet_hours":null,"snooze_until":"2026-03-01T13:00:00Z","email_unread":null}}` {
		t.Errorf("ada1 got %d frames: %v", len(got), got)
	}
	if got := ada2.Take(nil); len(got) != 0 {
		t.Errorf("ada2, which had version 2, got %d frames", len(got))
	}
	if got := bob.Take(nil); len(got) != 0 {
		t.Errorf("bob got %d frames", len(got))
	}
	if ada1.Preferences() != v2 || !ada1.Silent(&perch.Notification{Priority: perch.PriorityHigh}, now) {
		t.Error("ada1 does not follow version 2")
	}
	// An older version, late, changes nothing.
	h.Deliver(perch.FanoutMessage{Kind: perch.FanoutPreferences, UserID: "ada", Preferences: perch.DefaultPreferences(), Version: 1})
	if got := ada1.Take(nil); len(got) != 0 || ada1.Preferences() != v2 {
		t.Errorf("an older version was taken: %d frames", len(got))
	}
}

func TestReadyFrameCarriesPreferences(t *testing.T) {
	t.Parallel()
	var w struct {
		Data struct {
			Preferences *perch.Preferences `json:"preferences"`
		} `json:"data"`
	}
	if err := json.Unmarshal(ReadyFrame(0, false, 0, nil).Data, &w); err != nil || w.Data.Preferences == nil || w.Data.Preferences.Muted == nil {
		t.Fatalf("ready without preferences: %+v %v", w, err)
	}
}
