package server

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
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
	postInParallel(b, a, tok, `{"title":"Deploy finished","message":"api v1.2.3 is live","severity":"info","tab":"Deploys"}`)
}

// richBody is a delivery with the rich members a sender would use most:
// priority, tags, Markdown and a view action.
const richBody = `{"title":"Deploy finished","message":"api **v1.2.3** is live","severity":"info","tab":"Deploys","priority":"high",` +
	`"tags":["rocket","api"],"markdown":true,"actions":[{"type":"view","label":"Open","url":"https://ci.example.com/runs/7"}]}`

// BenchmarkInboundIngestRich is BenchmarkInboundIngest with rich
// notifications (richBody).
func BenchmarkInboundIngestRich(b *testing.B) {
	a := newAPI(b, storetest.New(b, store.SQLite))
	ada := a.register("Ada")
	tok := a.webhookToken(ada, "org", "")
	postInParallel(b, a, tok, richBody)
}

// BenchmarkInboundIngestSQLiteSync is BenchmarkInboundIngest with each of
// SQLite's settings of how a commit reaches the disk (PERCH_SQLITE_SYNC),
// in one run: full syncs the log at every commit, normal at checkpoints.
// Run it with -count to alternate them.
func BenchmarkInboundIngestSQLiteSync(b *testing.B) {
	for _, sync := range []store.Sync{store.SyncNormal, store.SyncFull} {
		b.Run("sync="+string(sync), func(b *testing.B) {
			a := newAPI(b, storetest.New(b, store.SQLite, store.WithSQLiteSync(sync)))
			ada := a.register("Ada")
			tok := a.webhookToken(ada, "org", "")
			postInParallel(b, a, tok, `{"title":"Deploy finished","message":"api v1.2.3 is live","severity":"info","tab":"Deploys"}`)
		})
	}
}

// postInParallel posts body to the inbound receiver with tok from many
// senders at once, as in production, b.N times in all.
func postInParallel(b *testing.B, a *api, tok, body string) {
	b.ReportAllocs()
	b.SetParallelism(16)
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
	b.StopTimer()
}

// BenchmarkIngestWorkflows is BenchmarkInboundIngest for an organisation
// with no workflow and with ten enabled ones (one matching each event, as
// in BenchmarkTenWorkflows of internal/workflow), in one run: ten should keep
// 80% or more of the throughput of none (docs/perf.md, Workflows cost).
func BenchmarkIngestWorkflows(b *testing.B) {
	for _, n := range []int{0, 10} {
		b.Run(fmt.Sprintf("workflows=%d", n), func(b *testing.B) {
			a := newAPI(b, storetest.New(b, store.SQLite))
			ada := a.register("Ada")
			tok := a.webhookToken(ada, "org", "")
			var last string
			for i := range n {
				cond := fmt.Sprintf(`event.source == "monitoring" && event.title.contains("svc-%d")`, i)
				if i%3 == 1 {
					cond = fmt.Sprintf(`has(payload.alert) && payload.alert.service == "svc-%d"`, i)
				}
				if i == n-1 {
					cond = `event.severity == "error" && has(payload.alert) && payload.alert.priority == "P1"`
				}
				a.clock.Advance(time.Millisecond)
				last = a.addWorkflow(ada, fmt.Sprintf("rule %d", i), cond, perch.Step{Set: map[string]string{"title": `"[P1] " + event.title`}})
			}
			postInParallel(b, a, tok, `{"title":"Deploy failed","message":"api v1.2.3 rolled back","severity":"error","tab":"Deploys","alert":{"priority":"P1","service":"api"}}`)
			if txs, ns := a.srv.ingest.Stats(); txs > 0 {
				b.ReportMetric(float64(ns)/float64(txs), "events/commit")
			}
			if n > 0 {
				if st := a.statsOf(ada.OrgID, last); st.Matched == 0 {
					b.Fatalf("the matching workflow never matched: %+v", st)
				}
			}
		})
	}
}

// BenchmarkWebSocketFanout is one organisation's notification handed to the
// hub and written to 1,000 connected WebSocket clients (read by clients in
// this process), per operation: the delivery half of the hot path.
func BenchmarkWebSocketFanout(b *testing.B) {
	const clients = 1000
	a := newAPI(b, storetest.New(b, store.SQLite), func(o *Options) { o.Limits.User = perch.Limit{Count: 2 * clients, Period: time.Minute} })
	ts := a.live()
	ada := a.register("Ada")
	a.apiToken(ada, "clients")
	conns := make([]*wsConn, clients)
	for i := range conns {
		conns[i] = dial(b, ts, ada.Token, "")
		conns[i].ready()
	}
	m := perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: &perch.Notification{
		ID: "1", Title: "Deploy finished", Message: "api v1.2.3 is live", Severity: "info", Tab: "Deploys",
		Scope: perch.Scope{Type: perch.ScopeOrg, ID: ada.OrgID}, CreatedAt: time.Now().UTC(),
	}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m.Notification.ID = fmt.Sprint(i + 1)
		a.srv.hub.Deliver(m)
		for _, c := range conns {
			c.next()
		}
	}
}
