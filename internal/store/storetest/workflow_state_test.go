package storetest_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// mustOrgID answers the organisation of a new account: workflow state is
// kept per organisation.
func mustOrgID(tb testing.TB, s *store.Store, name string) string {
	tb.Helper()
	return mustCreateUser(tb, s, name, strings.ToLower(name)+"@example.com").OrgID
}

func mustThrottle(tb testing.TB, s *store.Store, orgID, key string, max int, per time.Duration, now time.Time) bool {
	tb.Helper()
	ok, err := s.Throttle(context.Background(), orgID, key, max, per, now)
	if err != nil {
		tb.Fatalf("Throttle(%q, max %d per %s at %s): %v", key, max, per, now.Format(time.TimeOnly), err)
	}
	return ok
}

// Eight instances counting at once against one key let exactly max through
// in the window between them.
func TestThrottleLetsExactlyMaxThroughAcrossConcurrentCallers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		org := mustOrgID(t, s, "Ada")
		now := storetest.NewClock().Now()
		const max, callers, each = 10, 8, 5
		var through atomic.Int64
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for range each {
					ok, err := s.Throttle(context.Background(), org, "deploys", max, 10*time.Minute, now)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						through.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if n := through.Load(); n != max {
			t.Fatalf("%d of %d notifications went through, want exactly %d", n, callers*each, max)
		}
	})
}

// Each (organisation, key, window) counts on its own.
func TestThrottleCountsPerWindowKeyAndOrganisation(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ada, bob := mustOrgID(t, s, "Ada"), mustOrgID(t, s, "Bob")
		start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC) // on a 10-minute boundary
		per := 10 * time.Minute                                // max 2 throughout
		mustThrottle(t, s, ada, "k", 2, per, start)
		mustThrottle(t, s, ada, "k", 2, per, start.Add(time.Minute))
		longKey := strings.Repeat("x", 300)
		mustThrottle(t, s, ada, longKey, 2, per, start)
		mustThrottle(t, s, ada, longKey, 2, per, start)
		for _, tc := range []struct {
			what     string
			org, key string
			per      time.Duration
			at       time.Time
			want     bool
		}{
			{"the third in the window", ada, "k", per, start.Add(5 * time.Minute), false},
			{"the last millisecond of the window", ada, "k", per, start.Add(per - time.Millisecond), false},
			{"the next window starts afresh", ada, "k", per, start.Add(per), true},
			{"another key", ada, "other", per, start, true},
			{"another organisation", bob, "k", per, start, true},
			{"a window of another length", ada, "k", time.Hour, start, true},
			{"the same long key again", ada, longKey, per, start, false},
			{"a long key differing only at its end", ada, longKey + "y", per, start, true},
			{"a key that is not UTF-8", ada, "\xff\x00", per, start, true},
		} {
			if got := mustThrottle(t, s, tc.org, tc.key, 2, tc.per, tc.at); got != tc.want {
				t.Errorf("%s: through = %t, want %t", tc.what, got, tc.want)
			}
		}
	})
}

func TestThrottleRefusesWhatItCannotCount(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		org := mustOrgID(t, s, "Ada")
		now := storetest.NewClock().Now()
		for _, tc := range []struct {
			what string
			org  string
			max  int
			per  time.Duration
			code string
		}{
			{"max 0", org, 0, time.Minute, perch.EBADREQUEST},
			{"a negative max", org, -1, time.Minute, perch.EBADREQUEST},
			{"no window", org, 1, 0, perch.EBADREQUEST},
			{"a window under a millisecond", org, 1, time.Microsecond, perch.EBADREQUEST},
			{"an organisation that does not exist", "nope", 1, time.Minute, perch.ENOTFOUND},
		} {
			_, err := s.Throttle(context.Background(), tc.org, "k", tc.max, tc.per, now)
			if got := perch.ErrorCode(err); got != tc.code {
				t.Errorf("%s: error %q (%v), want %q", tc.what, got, err, tc.code)
			}
		}
	})
}

func TestPruneWorkflowStateRemovesEndedWindows(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		org := mustOrgID(t, s, "Ada")
		start := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
		mustThrottle(t, s, org, "minute", 1, time.Minute, start)
		mustThrottle(t, s, org, "hour", 1, time.Hour, start)
		prune := func(at time.Time) int64 {
			n, err := s.PruneWorkflowState(context.Background(), at)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := prune(start.Add(59 * time.Second)); n != 0 {
			t.Fatalf("before any window ended: pruned %d, want 0", n)
		}
		if n := prune(start.Add(time.Minute)); n != 1 {
			t.Fatalf("when the minute ended: pruned %d, want 1", n)
		}
		if !mustThrottle(t, s, org, "minute", 1, time.Minute, start.Add(time.Minute)) {
			t.Fatal("a pruned key's next window refused its first notification")
		}
		if mustThrottle(t, s, org, "hour", 1, time.Hour, start.Add(time.Minute)) {
			t.Fatal("the hour's window was pruned before it ended")
		}
	})
}

func note(i int) perch.Notification {
	return perch.Notification{ID: fmt.Sprint(i), Title: fmt.Sprintf("deploy %d", i), Severity: perch.SeverityInfo,
		Tab: perch.TabCode, CreatedAt: time.Date(2026, 11, 22, 9, 0, i, 0, time.UTC), Scope: perch.Scope{Type: perch.ScopeOrg}}
}

func mustHold(tb testing.TB, s *store.Store, orgID, key string, window time.Duration, n perch.Notification, now time.Time) time.Time {
	tb.Helper()
	end, err := s.HoldForDigest(context.Background(), orgID, key, window, n, now)
	if err != nil {
		tb.Fatalf("HoldForDigest(%q): %v", key, err)
	}
	return end
}

func mustDue(tb testing.TB, s *store.Store, now time.Time, limit int) []*store.Digest {
	tb.Helper()
	ds, err := s.DueDigests(context.Background(), now, limit)
	if err != nil {
		tb.Fatalf("DueDigests: %v", err)
	}
	return ds
}

func heldTitles(ns []perch.Notification) string {
	var b []string
	for _, n := range ns {
		b = append(b, n.Title)
	}
	return strings.Join(b, ", ")
}

// The first notification opens the window; the rest join it; the digest is
// due when it ends, claimed once, and the next notification opens another.
func TestDigestWindowOpensAtTheFirstAndIsClaimedOnceWhenItEnds(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		org := mustOrgID(t, s, "Ada")
		start := storetest.NewClock().Now()
		window := 15 * time.Minute
		end := mustHold(t, s, org, "deploys", window, note(1), start)
		if !end.Equal(start.Add(window)) {
			t.Fatalf("the first notification's window ends at %s, want %s", end, start.Add(window))
		}
		for i, at := range []time.Duration{time.Minute, 14 * time.Minute} {
			if got := mustHold(t, s, org, "deploys", window, note(i+2), start.Add(at)); !got.Equal(end) {
				t.Fatalf("notification %d joined a window ending at %s, want %s", i+2, got, end)
			}
		}
		other := mustHold(t, s, org, "incidents", window, note(9), start.Add(5*time.Minute))
		if ds := mustDue(t, s, end.Add(-time.Millisecond), 10); len(ds) != 0 {
			t.Fatalf("before the window ended %d digests were due, want none", len(ds))
		}
		ds := mustDue(t, s, end, 10)
		if len(ds) != 1 {
			t.Fatalf("when the window ended %d digests were due, want 1", len(ds))
		}
		d := ds[0]
		if d.OrgID != org || d.Key != "deploys" || !d.WindowEnd.Equal(end) || d.More != 0 {
			t.Fatalf("digest = {OrgID:%q Key:%q WindowEnd:%s More:%d}, want {%q deploys %s 0}", d.OrgID, d.Key, d.WindowEnd, d.More, org, end)
		}
		if got, want := heldTitles(d.Notifications), "deploy 1, deploy 2, deploy 3"; got != want {
			t.Fatalf("held notifications %q, want %q", got, want)
		}
		if !reflect.DeepEqual(d.Notifications[0], note(1)) {
			t.Fatalf("a held notification came back as %+v, want %+v", d.Notifications[0], note(1))
		}
		if ds := mustDue(t, s, end.Add(time.Hour), 10); len(ds) != 1 || ds[0].Key != "incidents" || !ds[0].WindowEnd.Equal(other) {
			t.Fatalf("later only the other key's digest is due; got %d digests", len(ds))
		}
		if ds := mustDue(t, s, end.Add(time.Hour), 10); len(ds) != 0 {
			t.Fatalf("claimed digests came back %d times more", len(ds))
		}
		next := end.Add(time.Minute)
		if got := mustHold(t, s, org, "deploys", window, note(4), next); !got.Equal(next.Add(window)) {
			t.Fatalf("after the claim a notification joined a window ending %s, want a new one ending %s", got, next.Add(window))
		}
	})
}

// Claimers running at once get every due digest exactly once between them.
func TestDueDigestsClaimsEachDigestOnceAcrossConcurrentClaimers(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ada, bob := mustOrgID(t, s, "Ada"), mustOrgID(t, s, "Bob")
		start := storetest.NewClock().Now()
		const keys = 20
		for i := range keys {
			for _, org := range []string{ada, bob} {
				mustHold(t, s, org, fmt.Sprint("k", i), time.Minute, note(i), start.Add(time.Duration(i)*time.Millisecond))
				mustHold(t, s, org, fmt.Sprint("k", i), time.Minute, note(i+100), start.Add(time.Second))
			}
		}
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					ds, err := s.DueDigests(context.Background(), start.Add(time.Hour), 3)
					if err != nil {
						t.Error(err)
						return
					}
					if len(ds) == 0 {
						return
					}
					mu.Lock()
					for _, d := range ds {
						seen[d.OrgID+"/"+d.Key]++
						if len(d.Notifications) != 2 {
							t.Errorf("digest %s/%s holds %d notifications, want 2", d.OrgID, d.Key, len(d.Notifications))
						}
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != 2*keys {
			t.Fatalf("%d digests were claimed, want %d", len(seen), 2*keys)
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("digest %s was claimed %d times", k, n)
			}
		}
	})
}

// A digest keeps 1000 notifications, the first ones, and counts the rest.
func TestDigestHoldsAtMost1000AndCountsTheRest(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		org := mustOrgID(t, s, "Ada")
		start := storetest.NewClock().Now()
		const extra = 5
		for i := range store.MaxDigestNotifications + extra {
			mustHold(t, s, org, "flood", time.Minute, note(i), start)
		}
		ds := mustDue(t, s, start.Add(time.Minute), 1)
		if len(ds) != 1 {
			t.Fatalf("%d digests due, want 1", len(ds))
		}
		d := ds[0]
		if len(d.Notifications) != store.MaxDigestNotifications || d.More != extra {
			t.Fatalf("digest holds %d and counts %d more, want %d and %d", len(d.Notifications), d.More, store.MaxDigestNotifications, extra)
		}
		for i, n := range d.Notifications {
			if n.ID != fmt.Sprint(i) {
				t.Fatalf("notification %d is %q, want %q: the first ones, in order", i, n.ID, fmt.Sprint(i))
			}
		}
	})
}

func TestDigestRefusesWhatItCannotHold(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		org := mustOrgID(t, s, "Ada")
		now := storetest.NewClock().Now()
		for _, tc := range []struct {
			what   string
			org    string
			window time.Duration
			code   string
		}{
			{"no window", org, 0, perch.EBADREQUEST},
			{"a negative window", org, -time.Minute, perch.EBADREQUEST},
			{"an organisation that does not exist", "nope", time.Minute, perch.ENOTFOUND},
		} {
			_, err := s.HoldForDigest(context.Background(), tc.org, "k", tc.window, note(1), now)
			if got := perch.ErrorCode(err); got != tc.code {
				t.Errorf("%s: error %q (%v), want %q", tc.what, got, err, tc.code)
			}
		}
		if ds := mustDue(t, s, now.Add(24*time.Hour), 0); len(ds) != 0 {
			t.Fatalf("a limit of 0 claimed %d digests", len(ds))
		}
		if ds := mustDue(t, s, now.Add(24*time.Hour), 10); len(ds) != 0 {
			t.Fatalf("refused notifications left %d digests", len(ds))
		}
	})
}
