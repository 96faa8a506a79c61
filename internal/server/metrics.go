package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/ingest"
)

// metrics are the server's Prometheus collectors.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// auditFailures counts audit entries that could not be written.
	auditFailures prometheus.Counter
	// series keeps each method, route and status's collectors once looked
	// up (a seriesKey to a *series): the labels are few, bounded by the
	// routes, and WithLabelValues hashes and checks them on every call.
	series sync.Map
}

type seriesKey struct {
	method, route string
	status        int
}

type series struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

func newMetrics(reg *prometheus.Registry, w *ingest.Writer, h *hub.Hub) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "perch_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "perch_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by method and route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route"}),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "perch_audit_write_failures_total",
			Help: "Audit entries that could not be written (each is logged).",
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.auditFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if w != nil {
		// Their ratio is how many notifications group commit puts in one
		// transaction.
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "perch_ingest_transactions_total",
			Help: "Transactions the ingest writer committed.",
		}, func() float64 { tx, _ := w.Stats(); return float64(tx) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "perch_ingest_notifications_total",
				Help: "Notifications the ingest writer stored.",
			}, func() float64 { _, n := w.Stats(); return float64(n) }))
	}
	if h != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "perch_websocket_clients",
			Help: "WebSocket clients connected to this instance.",
		}, func() float64 { return float64(h.Len()) }))
	}
	return m
}

func (m *metrics) observe(method, route string, status int, d time.Duration) {
	k := seriesKey{method, route, status}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &series{
			requests: m.requests.WithLabelValues(method, route, strconv.Itoa(status)),
			duration: m.duration.WithLabelValues(method, route),
		})
	}
	se := v.(*series)
	se.requests.Inc()
	se.duration.Observe(d.Seconds())
}

func levelFor(status int) slog.Level {
	if status >= 500 {
		return slog.LevelError
	}
	return slog.LevelInfo
}

// serveMetrics answers /metrics: the registry in Prometheus's text format,
// only to the bearer of the metrics token when one is set.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Metrics.Token != "" && !s.scrapeAllowed(r) {
		return perch.Errorf(perch.EUNAUTHORIZED, "/metrics needs Authorization: Bearer <the metrics token>.")
	}
	s.prom.ServeHTTP(w, r)
	return nil
}

// scrapeAllowed reports whether r bears the metrics token. The hashes are
// compared, in constant time, so that neither the token's bytes nor its
// length show in the time an answer takes.
func (s *Server) scrapeAllowed(r *http.Request) bool {
	scheme, raw, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(raw)))
	return subtle.ConstantTimeCompare(got[:], s.scraper[:]) == 1
}

// MetricsHandler serves /metrics alone, for a listener of its own (with
// Options.Metrics.Separate): anything else there is 404. Its requests are
// logged and counted like the main handler's.
func (s *Server) MetricsHandler() http.Handler {
	m := http.NewServeMux()
	m.Handle("GET /metrics", s.handle(s.serveMetrics))
	m.Handle("/", s.handle(func(w http.ResponseWriter, r *http.Request) error {
		r.Pattern = "" // counted with every other miss
		return perch.Errorf(perch.ENOTFOUND, "There is nothing at %s: this address serves /metrics only.", r.URL.Path)
	}))
	return s.observe(s.recoverPanics(m))
}
