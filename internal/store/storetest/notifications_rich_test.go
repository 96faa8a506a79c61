package storetest_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestRichNotificationsRoundTrip stores plain and rich notifications in
// one batch, mixed with a keyed one, and reads each back the ways the
// server does (history, one notification, the fan-out log, a redelivery):
// priority, tags, icon, Markdown, actions with their server-only parts and
// the time a scheduled one was due all come back as they went in, and a
// notification stored without a priority has its severity's.
func TestRichNotificationsRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		due := time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC)
		scope := perch.Scope{Type: perch.ScopeUser, ID: "u1"}
		rich := perch.Notification{Title: "Disk full", Tab: "Ops", Severity: perch.SeverityWarning, Source: perch.SourceInbound, Scope: scope,
			Priority: perch.PriorityUrgent, Tags: []string{"warning", "db-1"}, Icon: "https://example.com/i.png", Markdown: true,
			Actions: []perch.NotificationAction{
				{ID: "a1", Type: perch.ActionView, Label: "Open", URL: "https://example.com/d"},
				{ID: "a2", Type: perch.ActionHTTP, Label: "Restart", Sealed: "c2VhbGVk"},
				{ID: "acknowledge", Type: perch.ActionHTTP, Label: "Acknowledge", Native: perch.NativePagerDutyAcknowledge, Ref: "PABC123"},
			},
			DeliverAt: &due}
		plain := perch.Notification{Title: "Deploy failed", Tab: "Ops", Severity: perch.SeverityError, Source: perch.SourceInbound, Scope: scope}
		low := perch.Notification{Title: "FYI", Tab: "Ops", Severity: perch.SeverityInfo, Source: perch.SourceInbound, Scope: scope, Priority: perch.PriorityMin}
		batch := []store.NewNotification{{Notification: plain}, {Notification: rich, DedupeKey: "rich-1"}, {Notification: low}}
		stored, err := s.InsertNotifications(ctx, batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := &perch.Audience{UserID: "u1", OrgID: "o1"}
		list, err := s.Notifications(ctx, a, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 3 {
			t.Fatalf("%d notifications, want 3", len(list))
		}
		same := func(how string, got *perch.Notification, want perch.Notification) {
			t.Helper()
			got.ID, got.CreatedAt, got.Read = "", time.Time{}, false
			if got.DeliverAt != nil {
				d := got.DeliverAt.UTC()
				got.DeliverAt = &d
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("%s:\n got %+v\nwant %+v", how, *got, want)
			}
		}
		plain.Priority = perch.PriorityHigh // an error without a priority is high
		for i, want := range []perch.Notification{plain, rich, low} {
			same("history", list[i], want)
			if stored[i].Notification.Priority != want.Priority {
				t.Errorf("answered %d: priority %d, want %d", i, stored[i].Notification.Priority, want.Priority)
			}
		}
		one, err := s.NotificationFor(ctx, a, stored[1].Notification.ID)
		if err != nil {
			t.Fatal(err)
		}
		same("NotificationFor", one, rich)
		if _, err := s.NotificationFor(ctx, &perch.Audience{UserID: "u2", OrgID: "o1"}, stored[1].Notification.ID); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("another user's NotificationFor: %v, want not_found", err)
		}
		if _, err := s.NotificationFor(ctx, a, "nope"); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("NotificationFor(nope): %v, want not_found", err)
		}
		again, err := s.InsertNotifications(ctx, []store.NewNotification{{Notification: rich, DedupeKey: "rich-1"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !again[0].Duplicate {
			t.Fatal("the redelivery was stored again")
		}
		same("redelivery", &again[0].Notification, rich)
	})
}
