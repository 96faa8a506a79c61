package hub

import (
	"testing"
	"time"

	"github.com/perch-dev/perch"
)

// BenchmarkDeliverOrg10k offers one org-scoped notification to 10,000
// connected clients: the hub's share of fan-out, without the network.
func BenchmarkDeliverOrg10k(b *testing.B) {
	h := New()
	clients := make([]*Client, 10_000)
	for i := range clients {
		clients[i] = NewClient(perch.Audience{UserID: "u", OrgID: "org"}, 4, func() {})
		h.Add(clients[i])
	}
	m := note("1", perch.ScopeOrg, "org")
	b.ResetTimer()
	for b.Loop() {
		h.Deliver(m)
		b.StopTimer()
		for _, c := range clients {
			c.Take(nil)
		}
		b.StartTimer()
	}
}

// BenchmarkDeliverOrg10kSomePreferences is BenchmarkDeliverOrg10k with one
// client in ten following preferences that silence the notification (a
// muted tab): the silent variant is made once and shared, and the others
// cost what they cost without preferences.
func BenchmarkDeliverOrg10kSomePreferences(b *testing.B) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	h := New(WithClock(func() time.Time { return now }))
	clients := make([]*Client, 10_000)
	muted := &perch.Preferences{Muted: []perch.Mute{{Tab: "Code"}}}
	for i := range clients {
		clients[i] = NewClient(perch.Audience{UserID: "u", OrgID: "org"}, 4, func() {})
		if i%10 == 0 {
			clients[i].SetPreferences(1, muted, now)
		}
		h.Add(clients[i])
	}
	m := note("1", perch.ScopeOrg, "org")
	m.Notification.Tab = "Code"
	b.ResetTimer()
	for b.Loop() {
		h.Deliver(m)
		b.StopTimer()
		for _, c := range clients {
			c.Take(nil)
		}
		b.StartTimer()
	}
}
