package client

import (
	"net/http"
	"testing"

	"github.com/perch-dev/perch"
)

// TestListenDecodesSilentAndPreferences reads the frames of a server with
// preferences: silent on notifications, preferences on ready and in their
// own frame. Frames of a server without them decode as before.
func TestListenDecodesSilentAndPreferences(t *testing.T) {
	t.Parallel()
	f := &wsFake{script: func(n int, w http.ResponseWriter, r *http.Request) {
		conn := accept(w, r)
		send(conn,
			`{"type":"notification","data":{"id":"1","title":"loud","priority":3}}`,
			`{"type":"notification","data":{"id":"2","title":"quiet","priority":3,"silent":true}}`,
			`{"type":"ready","data":{"replayed":2,"gap":false,"preferences":{"muted":[{"tab":"Code"}],"quiet_hours":null,"snooze_until":null,"email_unread":null}}}`,
			`{"type":"preferences","data":{"muted":[],"quiet_hours":{"start":"22:00","end":"07:00","time_zone":"UTC","min_priority":4},"snooze_until":"2026-03-01T13:00:00Z","email_unread":null}}`,
			`{"type":"preferences","data":{}}`,
		)
		holdOpen(conn)
	}}
	c := listenClient(t, f, WithAPIToken("pat_t"))
	events, err := listen(t, c, "0", isType(EventPreferences, 2))
	if err != nil {
		t.Fatal(err)
	}
	var got []Event
	for _, e := range events {
		if e.Type != EventConnected {
			got = append(got, e)
		}
	}
	if len(got) != 5 {
		t.Fatalf("events: %v", summary(events))
	}
	if got[0].Silent || got[0].Notification.Title != "loud" || !got[1].Silent || got[1].Notification.Title != "quiet" {
		t.Errorf("silent: %+v %+v", got[0], got[1])
	}
	if p := got[2].Preferences; p == nil || len(p.Muted) != 1 || p.Muted[0].Tab != "Code" || p.QuietHours != nil {
		t.Errorf("ready preferences = %+v", p)
	}
	p := got[3].Preferences
	if p == nil || p.QuietHours == nil || p.QuietHours.MinPriority != perch.PriorityHigh || p.SnoozeUntil == nil || p.Muted == nil {
		t.Errorf("preferences frame = %+v", p)
	}
	if p := got[4].Preferences; p == nil || p.Muted == nil || p.QuietHours != nil {
		t.Errorf("an empty preferences frame = %+v", p)
	}
}
