package server

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/perch-dev/perch/internal/heartbeat"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// summary is GET /admin/metrics/summary with the credential token.
func (a *api) summary(token string) map[string]any {
	a.t.Helper()
	return expect(a.t, a.call("GET", "/api/v1/admin/metrics/summary", token, nil), 200).Data()
}

// counts reads a map of counts from a decoded answer.
func counts(v any) map[string]float64 {
	out := map[string]float64{}
	for k, n := range v.(map[string]any) {
		out[k] = n.(float64)
	}
	return out
}

func TestAdminMetricsSummary(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		a.apiToken(root, "metrics") // lives past the access token's 15 minutes
		ada, bob := a.register("Ada"), a.register("Bob")
		a.invite(ada, "Carol", "member")
		adas := a.webhookToken(ada, "user", "")
		a.post(adas, "one")
		a.post(adas, "two")
		a.post("", "to everyone")
		a.whToken(bob, "code-host", "user", "")

		m := a.summary(root.Token)
		want := map[string]float64{"users": 4, "users_active_7d": 4, "orgs": 3, "mrr": 0, "notifications_24h": 3,
			"connected_clients": 0, "webhook_tokens": 2, "workflows": 0, "workflow_runs_24h": 0}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s = %v, want %v", k, m[k], v)
			}
		}
		for k, w := range map[string]map[string]float64{
			"orgs_by_plan":                {"solo": 0, "team": 3, "enterprise": 0},
			"subscriptions_by_status":     {"trialing": 3},
			"notifications_by_source_24h": {"inbound": 3},
		} {
			if got := counts(m[k]); !maps.Equal(got, w) {
				t.Errorf("%s = %v, want %v", k, got, w)
			}
		}

		// A day on, the notifications are older than 24 hours; eight days
		// on, nobody has signed in for a week.
		a.clock.Advance(25 * time.Hour)
		m = a.summary(root.Token)
		if m["notifications_24h"] != 0.0 || len(counts(m["notifications_by_source_24h"])) != 0 || m["users_active_7d"] != 4.0 {
			t.Errorf("a day on: %v", m)
		}
		a.clock.Advance(7 * 24 * time.Hour)
		if m = a.summary(root.Token); m["users_active_7d"] != 0.0 || m["users"] != 4.0 {
			t.Errorf("eight days on: %v", m)
		}
		dan := a.register("Dan")
		if m = a.summary(root.Token); m["users_active_7d"] != 1.0 || m["users"] != 5.0 || m["orgs"] != 4.0 {
			t.Errorf("after Dan signed up: %v", m)
		}
		expect(t, a.call("GET", "/api/v1/admin/metrics/summary", dan.Access, nil), 403)
	})
}

// TestConnectedClientsAreSummedAcrossInstances: two servers over one
// database, each with WebSocket clients and a heartbeat of its own (as
// perch serve runs it), each reporting its own count.
func TestConnectedClientsAreSummedAcrossInstances(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		b := newAPI(t, s, func(o *Options) { o.Now = a.clock.Now })
		s.Now = a.clock.Now // one clock for both instances and the store
		root := a.platformAdmin("Root")
		ada, bob := a.register("Ada"), a.register("Bob")
		tsA, tsB := a.live(), b.live()
		dial(t, tsA, ada.Access, "").ready()
		dial(t, tsB, bob.Access, "").ready()
		dial(t, tsB, ada.Access, "").ready()
		beatsA := &heartbeat.Beater{Store: s, ID: heartbeat.NewID(), Clients: a.srv.hub.Len, Log: slog.New(slog.DiscardHandler)}
		beatsB := &heartbeat.Beater{Store: s, ID: heartbeat.NewID(), Clients: b.srv.hub.Len, Log: slog.New(slog.DiscardHandler)}
		clients := func(x *api) any {
			t.Helper()
			return x.summary(root.Access)["connected_clients"]
		}

		if err := beatsA.Beat(t.Context()); err != nil {
			t.Fatal(err)
		}
		// B's heartbeat runs as perch serve's does: it beats at once, and
		// deletes the instance's row when it stops.
		ctx, stopB := context.WithCancel(t.Context())
		stopped := make(chan struct{})
		go func() { beatsB.Run(ctx, time.Hour); close(stopped) }()
		testenv.Eventually(t, 10*time.Second, func() bool { return clients(a) == 3.0 }, "connected_clients never reached 3 (1 on A, 2 on B)")
		if n := clients(b); n != 3.0 {
			t.Fatalf("connected_clients = %v from the other instance; want 3", n)
		}
		// An instance that stops takes its clients out of the count.
		stopB()
		<-stopped
		if n := clients(a); n != 1.0 {
			t.Fatalf("connected_clients = %v after one instance stopped, want 1", n)
		}
		// An instance not heard from for a minute is not counted.
		a.clock.Advance(61 * time.Second)
		if n := clients(a); n != 0.0 {
			t.Fatalf("connected_clients = %v with no instance heard from lately, want 0", n)
		}
		if err := beatsA.Beat(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := clients(a); n != 1.0 {
			t.Fatalf("connected_clients = %v after a beat, want 1", n)
		}
	})
}

func TestAdminMetricSeries(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s) // the clock starts at 2026-11-22 09:00 UTC
		root := a.platformAdmin("Root")
		a.apiToken(root, "metrics")
		token := a.webhookToken(root, "user", "")
		a.post(token, "day 0")
		a.clock.Advance(2 * 24 * time.Hour)
		a.register("Ada")
		a.register("Bob")
		a.post(token, "day 2")
		a.post(token, "day 2 again")

		series := func(query string) ([]string, []float64) {
			t.Helper()
			var ts []string
			var values []float64
			for _, p := range expect(t, a.call("GET", "/api/v1/admin/metrics?"+query, root.Token, nil), 200).List() {
				ts, values = append(ts, p["t"].(string)), append(values, p["value"].(float64))
			}
			return ts, values
		}
		ts, values := series("metric=notifications&interval=day&from=2026-11-21T00:00:00Z&to=2026-11-25T00:00:00Z")
		if fmt.Sprint(ts) != "[2026-11-21T00:00:00Z 2026-11-22T00:00:00Z 2026-11-23T00:00:00Z 2026-11-24T00:00:00Z]" ||
			fmt.Sprint(values) != "[0 1 0 2]" {
			t.Errorf("notifications by day = %v %v", ts, values)
		}
		if _, values = series("metric=signups&from=2026-11-21T00:00:00Z&to=2026-11-25T00:00:00Z"); fmt.Sprint(values) != "[0 1 0 2]" {
			t.Errorf("signups by day = %v", values)
		}
		if _, values = series("metric=active_users&interval=day&from=2026-11-21T00:00:00Z&to=2026-11-25T00:00:00Z"); fmt.Sprint(values) != "[0 1 0 2]" {
			t.Errorf("active users by day = %v", values)
		}
		if _, values = series("metric=workflow_runs&interval=day&from=2026-11-21T00:00:00Z&to=2026-11-25T00:00:00Z"); fmt.Sprint(values) != "[0 0 0 0]" {
			t.Errorf("workflow runs by day = %v", values)
		}
		ts, values = series("metric=notifications&interval=hour&from=2026-11-24T07:30:00Z&to=2026-11-24T10:00:00Z")
		if fmt.Sprint(ts) != "[2026-11-24T07:00:00Z 2026-11-24T08:00:00Z 2026-11-24T09:00:00Z]" || fmt.Sprint(values) != "[0 0 2]" {
			t.Errorf("notifications by hour = %v %v", ts, values)
		}
		// Without a range: the last 7 days by day, today's bucket last.
		ts, _ = series("metric=signups")
		if len(ts) != 8 || ts[0] != "2026-11-17T00:00:00Z" || ts[7] != "2026-11-24T00:00:00Z" {
			t.Errorf("the default range = %v", ts)
		}

		for _, q := range []string{
			"",
			"metric=logins",
			"metric=signups&interval=week",
			"metric=signups&from=yesterday",
			"metric=signups&from=2026-11-24T00:00:00Z&to=2026-11-23T00:00:00Z",
			"metric=signups&from=2026-11-24T00:00:00Z&to=2026-11-24T00:00:00Z",
			"metric=signups&interval=day&from=2025-11-01T00:00:00Z&to=2026-11-03T00:00:00Z",  // 367 days
			"metric=signups&interval=hour&from=2026-10-01T00:00:00Z&to=2026-11-02T00:00:00Z", // 32 days
		} {
			expect(t, a.call("GET", "/api/v1/admin/metrics?"+q, root.Token, nil), 400)
		}
	})
}
