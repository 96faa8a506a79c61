package storetest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestKeptPayloadsGoWithTheirNotifications: a payload is stored with a new
// notification (not again with a redelivery, which keeps the first), read
// back by the notification's id, and pruned with it.
func TestKeptPayloadsGoWithTheirNotifications(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		note := func(title, key, payload string) store.NewNotification {
			nn := store.NewNotification{DedupeKey: key, Notification: perch.Notification{Title: title, Tab: "T", Severity: "info", Source: "inbound",
				Scope: perch.Scope{Type: perch.ScopeOrg, ID: ada.OrgID}}}
			if payload != "" {
				nn.Payload = []byte(payload)
			}
			return nn
		}
		stored, err := s.InsertNotifications(ctx, []store.NewNotification{
			note("kept", "k1", `{"alert":{"priority":"P1"}}`),
			note("none", "", ""),
			note("binary", "", "\x00\xff{"),
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.InsertNotifications(ctx, []store.NewNotification{note("kept", "k1", `{"alert":{"priority":"P9"}}`)}, nil)
		if err != nil || !again[0].Duplicate || again[0].Notification.ID != stored[0].Notification.ID {
			t.Fatalf("redelivery = %+v, %v", again, err)
		}
		for i, want := range []string{`{"alert":{"priority":"P1"}}`, "", "\x00\xff{"} {
			got, err := s.NotificationPayload(ctx, stored[i].Notification.ID)
			if want == "" {
				if perch.ErrorCode(err) != perch.ENOTFOUND {
					t.Errorf("payload of %q = %q, %v; want ENOTFOUND", stored[i].Notification.Title, got, err)
				}
				continue
			}
			if err != nil || string(got) != want {
				t.Errorf("payload of %q = %q, %v; want %q", stored[i].Notification.Title, got, err, want)
			}
		}
		if _, err := s.NotificationPayload(ctx, "ntf_x"); perch.ErrorCode(err) != perch.EBADREQUEST {
			t.Errorf("a malformed id: %v", err)
		}
		if _, err := s.InsertNotifications(ctx, []store.NewNotification{note("huge", "", strings.Repeat("x", store.MaxKeptPayload+1))}, nil); err == nil {
			t.Error("a payload over MaxKeptPayload was stored")
		}

		// A batch of many payloads, then pruning takes every one with its
		// notification.
		batch := make([]store.NewNotification, 40)
		for i := range batch {
			batch[i] = note("many", "", `{"i":1}`)
		}
		many, err := s.InsertNotifications(ctx, batch, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.NotificationPayload(ctx, many[39].Notification.ID); err != nil || string(got) != `{"i":1}` {
			t.Fatalf("the last of a batch of 40: %q, %v", got, err)
		}
		clock.Advance(31 * 24 * time.Hour)
		if _, err := s.PruneNotifications(ctx, clock.Now().Add(-30*24*time.Hour).UnixMilli()); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{stored[0].Notification.ID, many[39].Notification.ID} {
			if _, err := s.NotificationPayload(ctx, id); perch.ErrorCode(err) != perch.ENOTFOUND {
				t.Errorf("payload of pruned %s: %v", id, err)
			}
		}
	})
}
