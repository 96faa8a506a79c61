package storetest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestKeptPayloadsGoWithTheirNotifications: a payload is kept beside a
// stored notification (a second one for it keeps the first), read back by
// the notification's id, refused over MaxKeptPayload, and pruned with its
// notification.
func TestKeptPayloadsGoWithTheirNotifications(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		insert := func(titles ...string) []string {
			t.Helper()
			batch := make([]store.NewNotification, len(titles))
			for i, title := range titles {
				batch[i] = store.NewNotification{Notification: perch.Notification{Title: title, Tab: "T", Severity: "info", Source: "inbound",
					Scope: perch.Scope{Type: perch.ScopeOrg, ID: ada.OrgID}}}
			}
			stored, err := s.InsertNotifications(ctx, batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(stored))
			for i, st := range stored {
				ids[i] = st.Notification.ID
			}
			return ids
		}
		ids := insert("kept", "none", "binary")
		if err := s.KeepPayloads(ctx, []store.KeptPayload{{NotificationID: ids[0], Body: []byte(`{"alert":{"priority":"P1"}}`)}, {NotificationID: ids[2], Body: []byte("\x00\xff{")}}); err != nil {
			t.Fatal(err)
		}
		if err := s.KeepPayloads(ctx, []store.KeptPayload{{NotificationID: ids[0], Body: []byte(`{"alert":{"priority":"P9"}}`)}}); err != nil {
			t.Fatalf("keeping a second payload for a notification: %v", err)
		}
		for i, want := range []string{`{"alert":{"priority":"P1"}}`, "", "\x00\xff{"} {
			got, err := s.NotificationPayload(ctx, ids[i])
			if want == "" {
				if perch.ErrorCode(err) != perch.ENOTFOUND {
					t.Errorf("payload of notification %d = %q, %v; want ENOTFOUND", i, got, err)
				}
				continue
			}
			if err != nil || string(got) != want {
				t.Errorf("payload of notification %d = %q, %v; want %q", i, got, err, want)
			}
		}
		if _, err := s.NotificationPayload(ctx, "ntf_x"); perch.ErrorCode(err) != perch.EBADREQUEST {
			t.Errorf("a malformed id: %v", err)
		}
		huge := []store.KeptPayload{{NotificationID: ids[1], Body: []byte(`{}`)}, {NotificationID: ids[1], Body: []byte(strings.Repeat("x", store.MaxKeptPayload+1))}}
		if err := s.KeepPayloads(ctx, huge); perch.ErrorCode(err) != perch.EBADREQUEST {
			t.Errorf("a payload over MaxKeptPayload: %v", err)
		}
		if got, err := s.NotificationPayload(ctx, ids[1]); perch.ErrorCode(err) != perch.ENOTFOUND {
			t.Errorf("a refused batch kept %q, %v", got, err)
		}

		// Many payloads (more than one statement's rows), then pruning takes
		// every one with its notification.
		many := insert(slices.Repeat([]string{"many"}, 40)...)
		kept := make([]store.KeptPayload, len(many))
		for i, id := range many {
			kept[i] = store.KeptPayload{NotificationID: id, Body: []byte(`{"i":1}`)}
		}
		if err := s.KeepPayloads(ctx, kept); err != nil {
			t.Fatal(err)
		}
		if got, err := s.NotificationPayload(ctx, many[39]); err != nil || string(got) != `{"i":1}` {
			t.Fatalf("the last of 40: %q, %v", got, err)
		}
		clock.Advance(31 * 24 * time.Hour)
		if _, err := s.PruneNotifications(ctx, clock.Now().Add(-30*24*time.Hour).UnixMilli()); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{ids[0], many[39]} {
			if _, err := s.NotificationPayload(ctx, id); perch.ErrorCode(err) != perch.ENOTFOUND {
				t.Errorf("payload of pruned %s: %v", id, err)
			}
		}
	})
}
