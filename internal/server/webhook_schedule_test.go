package server

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/worker"
)

// signedIn registers name with an inbound webhook token of scope, and
// has the account's calls use an API token from then on: the access token
// expires as the tests move the clock by hours.
func (a *api) signedIn(name, scope string) (acc *account, raw string) {
	a.t.Helper()
	acc = a.register(name)
	raw = a.webhookToken(acc, scope, "")
	a.apiToken(acc, "laptop")
	acc.Access = acc.Token
	return acc, raw
}

// scheduledBy schedules a notification for tomorrow through acc's webhook
// token tokenID, as the receiver would, and answers its id.
func scheduledBy(a *api, acc *account, tokenID string) string {
	a.t.Helper()
	out, err := a.store.ScheduleNotifications(a.t.Context(), []store.NewScheduled{{TokenID: tokenID, UserID: acc.ID, OrgID: acc.OrgID,
		DeliverAt: a.clock.Now().Add(24 * time.Hour), Notification: perch.Notification{Tab: "Inbound", Title: "Tomorrow",
			Severity: perch.SeverityInfo, Source: perch.SourceInbound, Scope: perch.Scope{Type: perch.ScopeUser, ID: acc.ID}}}})
	if err != nil {
		a.t.Fatal(err)
	}
	return out[0].ID
}

// schedAnswer is a receiver's answer to a delivery it scheduled.
type schedAnswer struct {
	Received  bool     `json:"received"`
	IDs       []string `json:"ids"`
	Duplicate bool     `json:"duplicate"`
	Scheduled []struct {
		ID        string    `json:"id"`
		DeliverAt time.Time `json:"deliver_at"`
	} `json:"scheduled"`
}

func (a *api) schedule(raw string, body any, headers ...string) schedAnswer {
	a.t.Helper()
	res := expect(a.t, a.call("POST", "/webhooks/inbound?token="+raw, "", body, headers...), 200)
	var ans schedAnswer
	if err := json.Unmarshal([]byte(res.Raw), &ans); err != nil || !ans.Received {
		a.t.Fatalf("receipt %s (%v)", res.Raw, err)
	}
	return ans
}

// scheduledList is what GET /api/v1/notifications/scheduled lists for acc.
func (a *api) scheduledList(acc *account) []perch.ScheduledNotification {
	a.t.Helper()
	res := expect(a.t, a.call("GET", "/api/v1/notifications/scheduled", acc.Access, nil), 200)
	var out struct {
		Data []perch.ScheduledNotification `json:"data"`
	}
	if err := json.Unmarshal([]byte(res.Raw), &out); err != nil || out.Data == nil {
		a.t.Fatalf("list %s (%v)", res.Raw, err)
	}
	return out.Data
}

func noteTitles(notes []whNote) []string {
	out := []string{}
	for _, n := range notes {
		out = append(out, n.Title)
	}
	return out
}

// A scheduled notification is stored at once (the 200), and is in no
// history, replay or frame before its time; after it, the socket gets one
// frame and the history has it once, with deliver_at.
func TestScheduledNotificationArrivesOnceAtItsTime(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, raw := a.signedIn("Ada", "user")
		ts := a.live()
		live := dial(t, ts, ada.Access, "")
		live.ready()

		ans := a.schedule(raw, map[string]string{"title": "Standup", "delay": "30m"})
		if len(ans.IDs) != 0 || len(ans.Scheduled) != 1 || !ans.Scheduled[0].DeliverAt.Equal(a.clock.Now().Add(30*time.Minute)) {
			t.Fatalf("receipt %+v", ans)
		}
		id := ans.Scheduled[0].ID
		list := a.scheduledList(ada)
		if len(list) != 1 || list[0].ID != id || list[0].Title != "Standup" || list[0].Scope.Type != perch.ScopeUser {
			t.Fatalf("listed %+v", list)
		}
		a.tick()
		a.clock.Advance(30*time.Minute - time.Millisecond)
		a.tick()
		before := a.post(raw, "before")
		if got := live.until("before"); len(got) != 0 {
			t.Fatalf("frames before its time: %v", got)
		}
		if h := a.whHistory(ada, ""); slices.Compare(noteTitles(h), []string{"before"}) != 0 {
			t.Fatalf("history before its time: %v", noteTitles(h))
		}

		a.clock.Advance(time.Millisecond)
		a.tick()
		a.tick()
		a.post(raw, "after")
		if got := live.until("after"); slices.Compare(got, []string{"Standup"}) != 0 {
			t.Fatalf("frames after its time: %v, want Standup once", got)
		}
		res := expect(t, a.call("GET", "/api/v1/notifications", ada.Access, nil), 200)
		var hist struct {
			Data []struct {
				Title     string     `json:"title"`
				DeliverAt *time.Time `json:"deliver_at"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(res.Raw), &hist); err != nil {
			t.Fatal(err)
		}
		titles := []string{}
		for _, n := range hist.Data {
			titles = append(titles, n.Title)
		}
		if slices.Compare(titles, []string{"before", "Standup", "after"}) != 0 || hist.Data[1].DeliverAt == nil ||
			!hist.Data[1].DeliverAt.Equal(ans.Scheduled[0].DeliverAt) {
			t.Fatalf("history %s", res.Raw)
		}
		// Replay from before it has it once, in id order.
		replay := dial(t, ts, ada.Access, before)
		var replayed []string
		for f := replay.next(); f.Type != "ready"; f = replay.next() {
			replayed = append(replayed, f.notification(t).Title)
		}
		if slices.Compare(replayed, []string{"Standup", "after"}) != 0 {
			t.Fatalf("replayed %v, want Standup and after", replayed)
		}
		if list := a.scheduledList(ada); len(list) != 0 {
			t.Fatalf("still listed after delivery: %+v", list)
		}
		// Cancelling it now is too late: it is gone.
		expect(t, a.call("DELETE", "/api/v1/notifications/scheduled/"+id, ada.Access, nil), 404)
	})
}

// A new server on the same database delivers what the old one scheduled.
func TestScheduledNotificationDeliveredAfterARestart(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, raw := a.signedIn("Ada", "user")
		a.schedule(raw, map[string]string{"title": "Later", "deliver_at": a.clock.Now().Add(2 * time.Hour).Format(time.RFC3339)})
		a.srv.Close(t.Context())

		b := newAPI(t, s)
		b.clock.Advance(a.clock.Now().Sub(b.clock.Now()) + 2*time.Hour)
		b.tick()
		res := expect(t, b.call("GET", "/api/v1/notifications", ada.Access, nil), 200)
		var hist struct {
			Data []whNote `json:"data"`
		}
		if err := json.Unmarshal([]byte(res.Raw), &hist); err != nil || slices.Compare(noteTitles(hist.Data), []string{"Later"}) != 0 {
			t.Fatalf("history on the new server: %s", res.Raw)
		}
		b.tick()
		if h := b.whHistory(ada, ""); len(h) != 1 {
			t.Fatalf("delivered %d times", len(h))
		}
	})
}

func TestScheduledNotificationCancelledByItsTokensOwnerOnly(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, raw := a.signedIn("Ada", "org")
		bob := a.invite(ada, "Bob", "member")
		a.apiToken(bob, "laptop")
		bob.Access = bob.Token
		ans := a.schedule(raw, map[string]string{"title": "Release", "delay": "1h"})
		id := ans.Scheduled[0].ID
		if list := a.scheduledList(bob); len(list) != 0 {
			t.Fatalf("Bob lists Ada's: %+v", list)
		}
		expect(t, a.call("DELETE", "/api/v1/notifications/scheduled/"+id, bob.Access, nil), 404)
		expect(t, a.call("DELETE", "/api/v1/notifications/scheduled/nope", ada.Access, nil), 404)
		expect(t, a.call("DELETE", "/api/v1/notifications/scheduled/"+id, ada.Access, nil), 204)
		expect(t, a.call("DELETE", "/api/v1/notifications/scheduled/"+id, ada.Access, nil), 404)
		entries := expect(t, a.call("GET", "/api/v1/org/audit-log", ada.Access, nil), 200)
		var log struct {
			Data []perch.AuditEntry `json:"data"`
		}
		if err := json.Unmarshal([]byte(entries.Raw), &log); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range log.Data {
			found = found || e.Action == perch.AuditScheduledCancelled && e.Target.ID == id
		}
		if !found {
			t.Fatalf("no audit entry for the cancel: %s", entries.Raw)
		}
		a.clock.Advance(2 * time.Hour)
		a.tick()
		if h := a.whHistory(bob, ""); len(h) != 0 {
			t.Fatalf("a cancelled notification arrived: %v", noteTitles(h))
		}
	})
}

func TestScheduledNotificationRedeliveryIsANoop(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, raw := a.signedIn("Ada", "user")
		body := map[string]string{"title": "Once", "delay": "10m"}
		first := a.schedule(raw, body, "Idempotency-Key", "k1")
		again := a.schedule(raw, body, "Idempotency-Key", "k1")
		if !again.Duplicate || first.Duplicate || len(again.Scheduled) != 1 || again.Scheduled[0].ID != first.Scheduled[0].ID {
			t.Fatalf("first %+v, again %+v", first, again)
		}
		if list := a.scheduledList(ada); len(list) != 1 {
			t.Fatalf("listed %d", len(list))
		}
	})
}

func TestScheduleRefusesBadTimes(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, raw := a.signedIn("Ada", "user")
		now := a.clock.Now()
		for _, tt := range []struct {
			name  string
			body  map[string]string
			field string
		}{
			{"too far", map[string]string{"title": "T", "deliver_at": now.Add(perch.MaxDeliveryDelay + time.Minute).Format(time.RFC3339)}, "deliver_at"},
			{"delay too long", map[string]string{"title": "T", "delay": "169h"}, "delay"},
			{"negative delay", map[string]string{"title": "T", "delay": "-5m"}, "delay"},
			{"both", map[string]string{"title": "T", "delay": "5m", "deliver_at": now.Add(time.Hour).Format(time.RFC3339)}, "deliver_at"},
			{"not a time", map[string]string{"title": "T", "deliver_at": "tomorrow"}, "deliver_at"},
		} {
			res := expect(t, a.call("POST", "/webhooks/inbound?token="+raw, "", tt.body), 400)
			if f, _ := res.Body["error"].(map[string]any)["fields"].(map[string]any); f[tt.field] == nil {
				t.Errorf("%s: fields %v, want %s", tt.name, f, tt.field)
			}
		}
		// Anonymous broadcasts cannot be scheduled: nobody could cancel them.
		res := expect(t, a.call("POST", "/webhooks/inbound", "", map[string]string{"title": "T", "delay": "5m"}), 400)
		if f, _ := res.Body["error"].(map[string]any)["fields"].(map[string]any); f["delay"] == nil {
			t.Errorf("anonymous: fields %v, want delay", f)
		}
		// A time that is not ahead goes at once, as an unscheduled one.
		ans := a.schedule(raw, map[string]string{"title": "Now", "deliver_at": now.Add(-time.Minute).Format(time.RFC3339)})
		if len(ans.IDs) != 1 || len(ans.Scheduled) != 0 {
			t.Fatalf("a past deliver_at: %+v", ans)
		}
		if h := a.whHistory(ada, ""); slices.Compare(noteTitles(h), []string{"Now"}) != 0 {
			t.Fatalf("history %v", noteTitles(h))
		}
		if list := a.scheduledList(ada); len(list) != 0 {
			t.Fatalf("something was scheduled: %+v", list)
		}
	})
}

// Workflows run on a scheduled notification when it is received: their
// runs are recorded then (without a notification id, which it has only
// later); what they changed is what is delivered, and their forwards go
// when it is delivered, carrying its id.
func TestScheduledNotificationRunsWorkflowsAtReceipt(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		a.setWorker(func(o *worker.Options) { o.AllowPrivate = true })
		ada, raw := a.signedIn("Ada", "user")
		rc := startReceiver(t)
		wf := a.addWorkflow(ada, "Shout", "", perch.Step{Set: map[string]string{"title": `"Reminder: " + event.title`}},
			perch.Step{Forward: &perch.ForwardStep{URL: rc.url}})
		a.schedule(raw, map[string]string{"title": "standup", "delay": "15m"})
		runs := a.runsOf(ada.OrgID, wf)
		if len(runs) != 1 || runs[0].NotificationID != "" || runs[0].Status != perch.RunDelivered {
			t.Fatalf("runs at receipt: %+v", runs)
		}
		if list := a.scheduledList(ada); len(list) != 1 || list[0].Title != "Reminder: standup" {
			t.Fatalf("listed %+v", list)
		}
		a.tick()
		if got := rc.requests(); len(got) != 0 {
			t.Fatalf("forwarded before its time: %d", len(got))
		}
		a.clock.Advance(15 * time.Minute)
		a.tick()
		h := a.whHistory(ada, "")
		if len(h) != 1 || h[0].Title != "Reminder: standup" {
			t.Fatalf("history %v", noteTitles(h))
		}
		got := rc.requests()
		if len(got) != 1 {
			t.Fatalf("forwarded %d times, want once", len(got))
		}
		var body struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		if err := json.Unmarshal(got[0].body, &body); err != nil || body.ID != h[0].ID || body.Title != "Reminder: standup" {
			t.Fatalf("forwarded %s (%v), want notification %s", got[0].body, err, h[0].ID)
		}
		if runs := a.runsOf(ada.OrgID, wf); len(runs) != 1 {
			t.Fatalf("runs after delivery: %d, want the one of its receipt", len(runs))
		}
	})
}

// A scheduled notification goes out only if its token may still send when
// it is due: an admin's organisation token stops when they are made a
// member, and what it scheduled is dropped.
func TestScheduledNotificationOfATokenThatMayNoLongerSendIsDropped(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, _ := a.signedIn("Ada", "user")
		carol := a.invite(ada, "Carol", "admin")
		raw := a.webhookToken(carol, "org", "")
		a.schedule(raw, map[string]string{"title": "From Carol", "delay": "1h"})
		expect(t, a.call("PATCH", "/api/v1/org/members/"+carol.ID, ada.Access, map[string]string{"role": "member"}), 200)
		a.clock.Advance(time.Hour)
		a.tick()
		if h := a.whHistory(ada, ""); len(h) != 0 {
			t.Fatalf("delivered through a token that may no longer send: %v", noteTitles(h))
		}
		if next, ok, _ := s.NextScheduled(t.Context(), a.clock.Now()); ok {
			t.Fatalf("still pending, due %v", next)
		}
	})
}
