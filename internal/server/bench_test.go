package server

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// BenchmarkInboundIngest is the receiver's hot path in-process: parse,
// authenticate the token, store durably (group commit) and publish, on
// SQLite, with concurrent senders.
func BenchmarkInboundIngest(b *testing.B) {
	a := newAPI(b, storetest.New(b, store.SQLite))
	ada := a.register("Ada")
	tok := a.webhookToken(ada, "org", "")
	body := `{"title":"Deploy finished","message":"api v1.2.3 is live","severity":"info","tab":"Deploys"}`
	b.ReportAllocs()
	b.SetParallelism(16) // many senders at once, as in production
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := httptest.NewRecorder()
			a.srv.ServeHTTP(rec, httptest.NewRequest("POST", "/webhooks/inbound?token="+tok, strings.NewReader(body)))
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
	})
}
