package storetest_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// scheduleWorld is a store on a clock the test moves, with a user and a
// webhook token of theirs.
type scheduleWorld struct {
	s     *store.Store
	clock *storetest.Clock
	user  *perch.User
	token *perch.WebhookToken
}

func newScheduleWorld(t *testing.T, s *store.Store, name string) *scheduleWorld {
	t.Helper()
	clock := storetest.NewClock()
	s.Now = clock.Now
	return scheduleWorldFor(t, s, clock, name)
}

func scheduleWorldFor(t *testing.T, s *store.Store, clock *storetest.Clock, name string) *scheduleWorld {
	t.Helper()
	u := mustCreateUser(t, s, name, strings.ToLower(name)+"@example.com")
	tok, err := s.CreateWebhookToken(t.Context(), &perch.WebhookToken{UserID: u.ID, OrgID: u.OrgID, Label: "cron", Sender: perch.SenderInbound,
		Scope: perch.ScopeUser, TokenPrefix: "whk_" + name}, "hash-"+name)
	if err != nil {
		t.Fatal(err)
	}
	return &scheduleWorld{s: s, clock: clock, user: u, token: tok}
}

func (w *scheduleWorld) entry(title string, in time.Duration, key string) store.NewScheduled {
	return store.NewScheduled{TokenID: w.token.ID, UserID: w.user.ID, OrgID: w.user.OrgID, DeliverAt: w.clock.Now().Add(in), DedupeKey: key,
		Notification: perch.Notification{Tab: "Inbound", Title: title, Severity: perch.SeverityInfo, Source: perch.SourceInbound,
			Scope: perch.Scope{Type: perch.ScopeUser, ID: w.user.ID}}}
}

func (w *scheduleWorld) schedule(t *testing.T, batch ...store.NewScheduled) []store.ScheduledReceipt {
	t.Helper()
	out, err := w.s.ScheduleNotifications(t.Context(), batch)
	if err != nil {
		t.Fatalf("ScheduleNotifications: %v", err)
	}
	return out
}

func mustDueScheduled(t *testing.T, s *store.Store, now time.Time, limit int) []*store.Scheduled {
	t.Helper()
	due, err := s.DueScheduled(t.Context(), now, time.Minute, limit)
	if err != nil {
		t.Fatalf("DueScheduled: %v", err)
	}
	return due
}

func scheduledTitles(list []*store.Scheduled) []string {
	out := []string{}
	for _, sc := range list {
		out = append(out, sc.Notification.Title)
	}
	return out
}

func TestScheduledAreDueAtTheirTimeOnceEach(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduleWorld(t, s, "Ada")
		ctx := t.Context()
		got := w.schedule(t, w.entry("later", 2*time.Hour, ""), w.entry("sooner", time.Hour, ""))
		if got[0].ID == "" || got[0].Duplicate || !got[0].DeliverAt.Equal(w.clock.Now().Add(2*time.Hour)) {
			t.Fatalf("receipt = %+v", got[0])
		}
		if next, ok, err := s.NextScheduled(ctx, w.clock.Now()); err != nil || !ok || !next.Equal(w.clock.Now().Add(time.Hour)) {
			t.Fatalf("NextScheduled = %v, %v, %v; want in an hour", next, ok, err)
		}
		list, err := s.ScheduledNotifications(ctx, w.user.ID)
		if err != nil || len(list) != 2 || list[0].Title != "sooner" || list[0].WebhookTokenID != w.token.ID || list[0].Priority != perch.PriorityDefault {
			t.Fatalf("listed %+v, %v", list, err)
		}
		if due := mustDueScheduled(t, s, w.clock.Now().Add(time.Hour-time.Millisecond), 10); len(due) != 0 {
			t.Fatalf("due before its time: %v", scheduledTitles(due))
		}
		due := mustDueScheduled(t, s, w.clock.Now().Add(time.Hour), 10)
		if slices.Compare(scheduledTitles(due), []string{"sooner"}) != 0 || !due[0].Usable {
			t.Fatalf("due at its time: %v", scheduledTitles(due))
		}
		if again := mustDueScheduled(t, s, w.clock.Now().Add(time.Hour+time.Second), 10); len(again) != 0 {
			t.Fatalf("claimed twice within the lease: %v", scheduledTitles(again))
		}
		// The next wake-up is the one no worker holds.
		if next, ok, _ := s.NextScheduled(ctx, w.clock.Now().Add(time.Hour)); !ok || !next.Equal(w.clock.Now().Add(2*time.Hour)) {
			t.Fatalf("NextScheduled with one held = %v, %v", next, ok)
		}
		d := due[0].Delivery()
		if d.DedupeKey != "scheduled|"+due[0].ID || d.Notification.DeliverAt == nil || !d.Notification.DeliverAt.Equal(due[0].DeliverAt) {
			t.Fatalf("delivery = %+v", d)
		}
		if err := s.DoneScheduled(ctx, due[0].ID, "17"); err != nil {
			t.Fatal(err)
		}
		if err := s.DoneScheduled(ctx, due[0].ID, "18"); err != nil {
			t.Fatalf("a second DoneScheduled: %v", err)
		}
		if again := mustDueScheduled(t, s, w.clock.Now().Add(time.Hour+2*time.Minute), 10); len(again) != 0 {
			t.Fatalf("a delivered one was claimed again: %v", scheduledTitles(again))
		}
		if list, _ := s.ScheduledNotifications(ctx, w.user.ID); len(list) != 1 || list[0].Title != "later" {
			t.Fatalf("after delivery, listed %+v", list)
		}
	})
}

func TestScheduledClaimedAgainAfterTheLease(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduleWorld(t, s, "Ada")
		w.schedule(t, w.entry("crashy", time.Minute, ""))
		at := w.clock.Now().Add(time.Minute)
		first := mustDueScheduled(t, s, at, 10)
		if len(first) != 1 {
			t.Fatalf("claimed %v", scheduledTitles(first))
		}
		// The worker stopped without DoneScheduled: once its lease ends,
		// another claims the same one, and writes it with the same key.
		second := mustDueScheduled(t, s, at.Add(time.Minute), 10)
		if len(second) != 1 || second[0].ID != first[0].ID || second[0].Delivery().DedupeKey != first[0].Delivery().DedupeKey {
			t.Fatalf("after the lease, claimed %v", scheduledTitles(second))
		}
	})
}

func TestScheduledDedupeKeyMakesARedeliveryANoop(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduleWorld(t, s, "Ada")
		first := w.schedule(t, w.entry("once", time.Hour, "tok|inbound|k1"))
		w.clock.Advance(time.Minute)
		again := w.schedule(t, w.entry("once, again", 3*time.Hour, "tok|inbound|k1"), w.entry("other", time.Hour, "tok|inbound|k2"))
		if !again[0].Duplicate || again[0].ID != first[0].ID || !again[0].DeliverAt.Equal(first[0].DeliverAt) {
			t.Fatalf("redelivery receipt = %+v, first %+v", again[0], first[0])
		}
		if again[1].Duplicate || again[1].ID == first[0].ID {
			t.Fatalf("another key's receipt = %+v", again[1])
		}
		// Still a no-op once the first was cancelled.
		if _, err := s.CancelScheduled(t.Context(), w.user.ID, first[0].ID); err != nil {
			t.Fatal(err)
		}
		if after := w.schedule(t, w.entry("once", time.Hour, "tok|inbound|k1")); !after[0].Duplicate {
			t.Fatalf("after cancelling, a redelivery scheduled again: %+v", after[0])
		}
		if list, _ := s.ScheduledNotifications(t.Context(), w.user.ID); len(list) != 1 || list[0].Title != "other" {
			t.Fatalf("listed %+v", list)
		}
	})
}

func TestCancelScheduledOnlyByTheTokensOwner(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ada := newScheduleWorld(t, s, "Ada")
		bob := scheduleWorldFor(t, s, ada.clock, "Bob")
		ctx := t.Context()
		r := ada.schedule(t, ada.entry("mine", time.Hour, ""), ada.entry("held", time.Minute, ""))
		_, err := s.CancelScheduled(ctx, bob.user.ID, r[0].ID)
		wantCode(t, err, perch.ENOTFOUND)
		_, err = s.CancelScheduled(ctx, ada.user.ID, "nope")
		wantCode(t, err, perch.ENOTFOUND)
		got, err := s.CancelScheduled(ctx, ada.user.ID, r[0].ID)
		if err != nil || got.ID != r[0].ID || got.Title != "mine" {
			t.Fatalf("CancelScheduled = %+v, %v", got, err)
		}
		_, err = s.CancelScheduled(ctx, ada.user.ID, r[0].ID)
		wantCode(t, err, perch.ENOTFOUND)
		// One a worker holds is being delivered: too late.
		if due := mustDueScheduled(t, s, ada.clock.Now().Add(time.Minute), 10); len(due) != 1 || due[0].ID != r[1].ID {
			t.Fatalf("due: %v", scheduledTitles(due))
		}
		_, err = s.CancelScheduled(ctx, ada.user.ID, r[1].ID)
		wantCode(t, err, perch.ECONFLICT)
		if due := mustDueScheduled(t, s, ada.clock.Now().Add(48*time.Hour), 10); len(due) != 1 || due[0].ID != r[1].ID {
			t.Fatalf("the cancelled one came due: %v", scheduledTitles(due))
		}
		if list, _ := s.ScheduledNotifications(ctx, bob.user.ID); len(list) != 0 {
			t.Fatalf("Bob lists Ada's: %+v", list)
		}
	})
}

func TestScheduledKeepsActionsServerPartsAndJobs(t *testing.T) {
	storetest.RunWithSQL(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		w := newScheduleWorld(t, s, "Ada")
		e := w.entry("act", time.Minute, "")
		e.Notification.Priority, e.Notification.Tags, e.Notification.Icon, e.Notification.Markdown = perch.PriorityHigh, []string{"warning"}, "https://icons.example/a.png", true
		e.Notification.Actions = []perch.NotificationAction{
			{ID: "a1", Type: perch.ActionView, Label: "Open", URL: "https://example.com/x"},
			{ID: "a2", Type: perch.ActionHTTP, Label: "Restart", Sealed: "c2VhbGVk", Request: &perch.ActionRequest{Method: "POST", URL: "https://x"}},
			{ID: "acknowledge", Type: perch.ActionHTTP, Label: "Acknowledge", Native: perch.NativePagerDutyAcknowledge, Ref: "PABC"},
		}
		e.Jobs = []store.NotificationJob{{OrgID: w.user.OrgID, Kind: store.JobWorkflowForward, WorkflowID: "wf", RunID: "run", Step: 2,
			Payload: func(n perch.Notification) (json.RawMessage, error) {
				return json.Marshal(map[string]any{"workflow_id": "wf", "url": "https://hook.example", "notification": n})
			}}}
		w.schedule(t, e)
		if rows := storetest.Table(t, db, "scheduled_notifications"); strings.Contains(rows, "https://x") {
			t.Fatalf("the plain request of an http action was kept: %s", rows)
		}
		due := mustDueScheduled(t, s, w.clock.Now().Add(time.Minute), 10)
		if len(due) != 1 {
			t.Fatalf("due %v", scheduledTitles(due))
		}
		n := due[0].Notification
		want := []perch.NotificationAction{e.Notification.Actions[0], {ID: "a2", Type: perch.ActionHTTP, Label: "Restart", Sealed: "c2VhbGVk"}, e.Notification.Actions[2]}
		if !slices.Equal(n.Actions, want) || n.Priority != perch.PriorityHigh || n.Tags[0] != "warning" || !n.Markdown || n.Icon == "" ||
			n.Scope != e.Notification.Scope {
			t.Fatalf("notification = %+v", n)
		}
		d := due[0].Delivery()
		if len(d.Jobs) != 1 || d.Jobs[0].RunID != "run" || d.Jobs[0].Step != 2 || d.Jobs[0].Kind != store.JobWorkflowForward {
			t.Fatalf("jobs = %+v", d.Jobs)
		}
		payload, err := d.Jobs[0].Payload(perch.Notification{ID: "42", Title: "act"})
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			URL          string
			Notification perch.Notification
		}
		if err := json.Unmarshal(payload, &p); err != nil || p.URL != "https://hook.example" || p.Notification.ID != "42" {
			t.Fatalf("job payload %s (%v)", payload, err)
		}
	})
}

func TestScheduledOfATokenThatMayNoLongerSend(t *testing.T) {
	storetest.RunWithSQL(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		w := newScheduleWorld(t, s, "Ada")
		gone := scheduleWorldFor(t, s, w.clock, "Bob")
		w.schedule(t, w.entry("disabled", time.Minute, ""))
		gone.schedule(t, gone.entry("deleted", time.Minute, ""))
		if _, err := db.ExecContext(t.Context(), rebind(s, `UPDATE users SET disabled_at = 1 WHERE id = ?`), w.user.ID); err != nil {
			t.Fatal(err)
		}
		// Deleting a token takes what it scheduled along.
		if err := s.DeleteWebhookToken(t.Context(), gone.user.ID, gone.token.ID); err != nil {
			t.Fatal(err)
		}
		due := mustDueScheduled(t, s, w.clock.Now().Add(time.Minute), 10)
		if len(due) != 1 || due[0].Notification.Title != "disabled" || due[0].Usable {
			t.Fatalf("due %v, usable %v", scheduledTitles(due), len(due) == 1 && due[0].Usable)
		}
		if err := s.DoneScheduled(t.Context(), due[0].ID, ""); err != nil {
			t.Fatal(err)
		}
		if n, err := s.PruneScheduled(t.Context(), w.clock.Now().Add(time.Second)); err != nil || n != 1 {
			t.Fatalf("PruneScheduled = %d, %v", n, err)
		}
	})
}

func TestScheduledPendingPerTokenIsBounded(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduleWorld(t, s, "Ada")
		batch := make([]store.NewScheduled, perch.MaxPendingScheduled)
		for i := range batch {
			batch[i] = w.entry("n", time.Hour, "")
		}
		w.schedule(t, batch...)
		_, err := s.ScheduleNotifications(t.Context(), []store.NewScheduled{w.entry("one too many", time.Hour, "")})
		wantCode(t, err, perch.ECONFLICT)
	})
}

func TestScheduledClaimsAtOnceGetDifferentRows(t *testing.T) {
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		w := newScheduleWorld(t, s, "Ada")
		batch := make([]store.NewScheduled, 40)
		for i := range batch {
			batch[i] = w.entry("n", time.Minute, "")
		}
		w.schedule(t, batch...)
		at := w.clock.Now().Add(time.Minute)
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					due, err := s.DueScheduled(context.Background(), at, time.Minute, 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(due) == 0 {
						return
					}
					mu.Lock()
					for _, d := range due {
						seen[d.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != len(batch) {
			t.Fatalf("claimed %d of %d", len(seen), len(batch))
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("%s claimed %d times", id, n)
			}
		}
	})
}

// rebind writes q's one ? as PostgreSQL's $1 there.
func rebind(s *store.Store, q string) string {
	if s.Dialect() == store.Postgres {
		return strings.Replace(q, "?", "$1", 1)
	}
	return q
}
