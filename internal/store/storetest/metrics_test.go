package storetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// notify stores one notification from source at the store's clock.
func notify(tb testing.TB, s *store.Store, source string) {
	tb.Helper()
	n := perch.Notification{Title: "t", Tab: "T", Severity: "info", Source: source, Scope: perch.Scope{Type: perch.ScopeAll}}
	if _, err := s.InsertNotifications(context.Background(), []store.NewNotification{{Notification: n}}, nil); err != nil {
		tb.Fatal(err)
	}
}

func TestMetricsSummary(t *testing.T) {
	t.Parallel()
	storetest.RunWithSQL(t, func(t *testing.T, s *store.Store, db *sql.DB) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now

		// Ada signed in 10 days ago and renewed her sign-in today; Bob
		// signed in 8 days ago and not since; Carol and Dan today.
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		session(t, s, ada, "ada")
		clock.Advance(2 * 24 * time.Hour)
		session(t, s, bob, "bob")
		notify(t, s, perch.SourceInbound) // older than a day
		clock.Advance(8 * 24 * time.Hour)
		if _, _, err := s.RotateRefresh(ctx, "refresh-ada", tokens(s, "ada2")); err != nil {
			t.Fatal(err)
		}
		carol := mustCreateUser(t, s, "Carol", "carol@example.com")
		dan := mustCreateUser(t, s, "Dan", "dan@example.com")
		session(t, s, carol, "carol")
		session(t, s, dan, "dan")
		session(t, s, dan, "dan-phone")
		clock.Advance(time.Hour)
		for _, src := range []string{perch.SourceInbound, perch.SourceInbound, perch.SourceCodeHost} {
			notify(t, s, src)
		}
		for i, u := range []*perch.User{ada, ada, carol} {
			_, err := s.CreateWebhookToken(ctx, &perch.WebhookToken{UserID: u.ID, OrgID: u.OrgID, Label: "l", Sender: "inbound",
				Scope: "user", TokenPrefix: "whk_x"}, fmt.Sprint("hash", i))
			if err != nil {
				t.Fatal(err)
			}
		}
		// Two organisations pay; a third is past due.
		setPlan := `UPDATE orgs SET plan = ?, plan_status = ? WHERE id = ?`
		if s.Dialect() == store.Postgres {
			setPlan = `UPDATE orgs SET plan = $1, plan_status = $2 WHERE id = $3`
		}
		for org, plan := range map[string][2]string{ada.OrgID: {"enterprise", "active"}, bob.OrgID: {"solo", "active"}, carol.OrgID: {"solo", "past_due"}} {
			if _, err := db.Exec(setPlan, plan[0], plan[1], org); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Heartbeat(ctx, "one", 3); err != nil {
			t.Fatal(err)
		}

		m, err := s.MetricsSummary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := perch.MetricsSummary{
			Users: 4, UsersActive7d: 3, Orgs: 4,
			OrgsByPlan:               map[string]int64{"solo": 2, "team": 1, "enterprise": 1},
			SubscriptionsByStatus:    map[string]int64{"active": 2, "past_due": 1, "trialing": 1},
			MRR:                      499 + 9,
			Notifications24h:         3,
			NotificationsBySource24h: map[string]int64{"inbound": 2, "code-host": 1},
			ConnectedClients:         3,
			WebhookTokens:            3,
		}
		if !summaryEqual(*m, want) {
			t.Errorf("summary = %+v\nwant      %+v", *m, want)
		}
	})
}

func summaryEqual(a, b perch.MetricsSummary) bool {
	return maps.Equal(a.OrgsByPlan, b.OrgsByPlan) && maps.Equal(a.SubscriptionsByStatus, b.SubscriptionsByStatus) &&
		maps.Equal(a.NotificationsBySource24h, b.NotificationsBySource24h) &&
		fmt.Sprint(a.Users, a.UsersActive7d, a.Orgs, a.MRR, a.Notifications24h, a.ConnectedClients, a.WebhookTokens, a.Workflows, a.WorkflowRuns24h) ==
			fmt.Sprint(b.Users, b.UsersActive7d, b.Orgs, b.MRR, b.Notifications24h, b.ConnectedClients, b.WebhookTokens, b.Workflows, b.WorkflowRuns24h)
}

// TestConnectedClientsAcrossInstances: the count is the sum of the
// instances heard from in the last minute.
func TestConnectedClientsAcrossInstances(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock()
		s.Now = clock.Now
		clients := func() int64 {
			t.Helper()
			m, err := s.MetricsSummary(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return m.ConnectedClients
		}
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := clients(); n != 0 {
			t.Fatalf("no instances: %d clients", n)
		}
		must(s.Heartbeat(ctx, "a", 3))
		must(s.Heartbeat(ctx, "b", 4))
		if n := clients(); n != 7 {
			t.Fatalf("clients = %d, want 7", n)
		}
		must(s.Heartbeat(ctx, "a", 5)) // a beat replaces the instance's count
		if n := clients(); n != 9 {
			t.Fatalf("clients = %d, want 9", n)
		}
		clock.Advance(45 * time.Second)
		must(s.Heartbeat(ctx, "a", 2))
		clock.Advance(30 * time.Second) // b is silent for 75 s: stale
		if n := clients(); n != 2 {
			t.Fatalf("clients = %d, want 2 (b is stale)", n)
		}
		must(s.Heartbeat(ctx, "b", 1))
		must(s.DropInstance(ctx, "a"))
		if n := clients(); n != 1 {
			t.Fatalf("clients = %d, want 1 (a stopped)", n)
		}
	})
}

// TestMetricSeries counts in whole UTC buckets, every one present.
func TestMetricSeries(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clock := storetest.NewClock() // 2026-11-22 09:00 UTC
		s.Now = clock.Now
		day0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)

		// Day 0: Ada signs up and in, 2 notifications; day 2: Bob signs up
		// and in twice, Ada renews, 3 notifications; day 3 (after the
		// range): 1 notification.
		ada := mustCreateUser(t, s, "Ada", "ada@example.com")
		session(t, s, ada, "ada")
		notify(t, s, "inbound")
		clock.Advance(time.Hour)
		notify(t, s, "inbound")
		clock.Advance(2 * 24 * time.Hour)
		bob := mustCreateUser(t, s, "Bob", "bob@example.com")
		session(t, s, bob, "bob1")
		session(t, s, bob, "bob2")
		if _, _, err := s.RotateRefresh(ctx, "refresh-ada", tokens(s, "ada2")); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			notify(t, s, "inbound")
		}
		clock.Advance(24 * time.Hour)
		notify(t, s, "inbound")

		series := func(metric, interval string, from, to time.Time) []int64 {
			t.Helper()
			q, err := perch.ParseMetricQuery(metric, interval, from.Format(time.RFC3339), to.Format(time.RFC3339), clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			points, err := s.MetricSeries(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var values []int64
			for i, p := range points {
				if want := from.Truncate(q.Step()).Add(time.Duration(i) * q.Step()); !p.T.Equal(want) {
					t.Errorf("%s bucket %d starts at %v, want %v", metric, i, p.T, want)
				}
				values = append(values, p.Value)
			}
			return values
		}
		from, to := day0.Add(-24*time.Hour), day0.Add(3*24*time.Hour) // 4 days
		for _, c := range []struct {
			metric string
			want   []int64
		}{
			{perch.MetricNotifications, []int64{0, 2, 0, 3}},
			{perch.MetricSignups, []int64{0, 1, 0, 1}},
			{perch.MetricActiveUsers, []int64{0, 1, 0, 2}},
			{perch.MetricWorkflowRuns, []int64{0, 0, 0, 0}},
		} {
			if got := series(c.metric, "day", from, to); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s by day = %v, want %v", c.metric, got, c.want)
			}
		}
		// By hour, from 08:30 to 11:00 on day 0: 08:00, 09:00, 10:00.
		if got := series(perch.MetricNotifications, "hour", day0.Add(8*time.Hour+30*time.Minute), day0.Add(11*time.Hour)); fmt.Sprint(got) != "[0 1 1]" {
			t.Errorf("notifications by hour = %v, want [0 1 1]", got)
		}
		// A range with nothing in it, after everything.
		if got := series(perch.MetricNotifications, "day", day0.Add(10*24*time.Hour), day0.Add(12*24*time.Hour)); fmt.Sprint(got) != "[0 0]" {
			t.Errorf("an empty range = %v", got)
		}
	})
}
