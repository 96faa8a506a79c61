package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

func mustVerifiedUser(t *testing.T, s *store.Store, name, email string) *perch.User {
	t.Helper()
	ctx := context.Background()
	u := mustCreateUser(t, s, name, email)
	if err := s.CreateEmailToken(ctx, u.ID, perch.EmailVerify, email, "verify-"+u.ID, s.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	v, err := s.VerifyEmail(ctx, "verify-"+u.ID)
	if err != nil || !v.EmailVerified {
		t.Fatalf("VerifyEmail: %+v, %v", v, err)
	}
	return v
}

func TestPreferencesRoundTripWithVersions(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		p, v, err := s.Preferences(ctx, ada.ID)
		if err != nil || v != 0 || p.Muted == nil || len(p.Muted) != 0 || p.QuietHours != nil || p.SnoozeUntil != nil || p.EmailUnread != nil {
			t.Fatalf("defaults = %+v v%d, %v", p, v, err)
		}
		snooze := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
		s.Now = func() time.Time { return snooze.Add(-time.Hour) }
		want := &perch.Preferences{Muted: []perch.Mute{{Tab: "Code"}, {TeamID: "t1"}},
			QuietHours:  &perch.QuietHours{Start: "22:00", End: "07:00", TimeZone: "Europe/Berlin", MinPriority: 4},
			SnoozeUntil: &snooze, EmailUnread: &perch.EmailUnread{AfterMinutes: 30, MinPriority: 4}}
		if v, err := s.SetPreferences(ctx, ada.ID, want); err != nil || v != 1 {
			t.Fatalf("SetPreferences = v%d, %v", v, err)
		}
		got, v, err := s.Preferences(ctx, ada.ID)
		if err != nil || v != 1 || len(got.Muted) != 2 || got.Muted[1].TeamID != "t1" || *got.QuietHours != *want.QuietHours ||
			!got.SnoozeUntil.Equal(snooze) || *got.EmailUnread != *want.EmailUnread {
			t.Fatalf("Preferences = %+v v%d, %v", got, v, err)
		}
		// Once the snooze is over, it is none.
		s.Now = func() time.Time { return snooze }
		if got, _, err := s.Preferences(ctx, ada.ID); err != nil || got.SnoozeUntil != nil || got.QuietHours == nil {
			t.Errorf("after the snooze: %+v, %v", got, err)
		}
		if v, err := s.SetPreferences(ctx, ada.ID, perch.DefaultPreferences()); err != nil || v != 2 {
			t.Fatalf("second SetPreferences = v%d, %v", v, err)
		}
		if got, _, _ := s.Preferences(ctx, ada.ID); got.QuietHours != nil || len(got.Muted) != 0 {
			t.Errorf("after the reset: %+v", got)
		}
		_, err = s.SetPreferences(ctx, "nobody", perch.DefaultPreferences())
		wantCode(t, err, perch.ENOTFOUND)
	})
}

// TestUnreadMailCoversEachNotificationOnce walks a user's unread mail
// through its windows: what arrived before it was turned on is never
// mailed; a notification is mailed once it is old enough, unread and at or
// above the priority, and never again; one read first is not mailed.
func TestUnreadMailCoversEachNotificationOnce(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		c := storetest.NewClock()
		s.Now = c.Now
		ada := mustVerifiedUser(t, s, "Ada", "ada@example.com")
		bob := mustVerifiedUser(t, s, "Bob", "bob@example.com")
		insert := func(title string, priority int, scope perch.Scope) string {
			t.Helper()
			st, err := s.InsertNotifications(ctx, []store.NewNotification{{Notification: perch.Notification{
				Title: title, Tab: "T", Severity: "info", Source: "inbound", Priority: priority, Scope: scope}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st[0].Notification.ID
		}
		adaScope := perch.Scope{Type: perch.ScopeUser, ID: ada.ID}
		insert("before", 5, adaScope)
		c.Advance(time.Minute)
		if _, err := s.SetPreferences(ctx, ada.ID, &perch.Preferences{Muted: []perch.Mute{},
			EmailUnread: &perch.EmailUnread{AfterMinutes: 10, MinPriority: perch.PriorityHigh}}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute)
		insert("high", 4, adaScope)
		insert("low", 2, adaScope)
		insert("bob's", 5, perch.Scope{Type: perch.ScopeUser, ID: bob.ID})
		readFirst := insert("read first", 5, perch.Scope{Type: perch.ScopeOrg, ID: ada.OrgID})
		if _, err := s.MarkRead(ctx, ada, []string{readFirst}, false); err != nil {
			t.Fatal(err)
		}

		claim := func() []*store.UnreadMail {
			t.Helper()
			due, err := s.DueUnreadMail(ctx, c.Now(), 10, 5)
			if err != nil {
				t.Fatal(err)
			}
			return due
		}
		due := claim() // due at once, but nothing is 10 minutes old yet
		if len(due) != 1 || due[0].User.ID != ada.ID || due[0].Found != 0 {
			t.Fatalf("first claim = %+v", due)
		}
		if again := claim(); len(again) != 0 {
			t.Fatalf("a claimed mail was claimed again: %+v", again)
		}
		if err := s.UnreadMailed(ctx, due[0], true, c.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}

		c.Advance(10 * time.Minute)
		insert("later", 5, adaScope)
		due = claim()
		if len(due) != 1 || due[0].Found != 1 || len(due[0].Notifications) != 1 || due[0].Notifications[0].Title != "high" {
			t.Fatalf("the mail after ten minutes = %+v", due)
		}
		if err := s.UnreadMailed(ctx, due[0], true, c.Now().Add(10*time.Minute)); err != nil {
			t.Fatal(err)
		}
		c.Advance(5 * time.Minute)
		if due := claim(); len(due) != 0 {
			t.Fatalf("due again within the window: %+v", due)
		}
		c.Advance(5 * time.Minute)
		due = claim()
		if len(due) != 1 || due[0].Found != 1 || due[0].Notifications[0].Title != "later" {
			t.Fatalf("the next window's mail = %+v", due)
		}
		// Not recorded as covered (the send failed): the next claim finds
		// the same ones.
		if err := s.UnreadMailed(ctx, due[0], false, c.Now()); err != nil {
			t.Fatal(err)
		}
		if due := claim(); len(due) != 1 || due[0].Found != 1 || due[0].Notifications[0].Title != "later" {
			t.Fatalf("after a failed send = %+v", due)
		}

		// Turned off, nothing is due.
		c.Advance(pastLease)
		if _, err := s.SetPreferences(ctx, ada.ID, perch.DefaultPreferences()); err != nil {
			t.Fatal(err)
		}
		if due := claim(); len(due) != 0 {
			t.Fatalf("due with the mail off: %+v", due)
		}
	})
}

// pastLease is past a claim's lease.
const pastLease = store.UnreadMailLease + time.Second
