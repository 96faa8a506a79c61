package hub

import (
	"testing"

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
