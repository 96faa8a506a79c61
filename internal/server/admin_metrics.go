package server

import (
	"context"
	"net/http"
	"time"

	"github.com/perch-dev/perch"
)

// HeartbeatEvery is how often perch serve calls Heartbeat.
const HeartbeatEvery = 15 * time.Second

// metricsSummary answers the admin summary, counted in the database;
// connected_clients is summed over every instance heard from lately.
func (s *Server) metricsSummary(w http.ResponseWriter, r *http.Request) error {
	m, err := s.adminDB.MetricsSummary(r.Context())
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, m)
}

// metricSeries answers one metric per hour or day over a range, every
// bucket present (see perch.ParseMetricQuery for the parameters).
func (s *Server) metricSeries(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	q, err := perch.ParseMetricQuery(v.Get("metric"), v.Get("interval"), v.Get("from"), v.Get("to"), s.now())
	if err != nil {
		return err
	}
	points, err := s.adminDB.MetricSeries(r.Context(), q)
	if err != nil {
		return err
	}
	return respond(w, http.StatusOK, points)
}

// Heartbeat records in the database how many WebSocket clients this
// instance holds, under the instance's id, for the summary's
// connected_clients. perch serve calls it every HeartbeatEvery; Close
// deletes the record, and no beat after Close writes it again.
func (s *Server) Heartbeat(ctx context.Context) error {
	s.beat.Lock()
	defer s.beat.Unlock()
	if s.stopped {
		return nil
	}
	clients := 0
	if s.hub != nil {
		clients = s.hub.Len()
	}
	return s.adminDB.Heartbeat(ctx, s.instance, clients)
}

// forgetInstance deletes this instance's heartbeat, for Close.
func (s *Server) forgetInstance(ctx context.Context) {
	s.beat.Lock()
	defer s.beat.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	if err := s.adminDB.DropInstance(context.WithoutCancel(ctx), s.instance); err != nil {
		s.log.Warn("forgetting this instance's heartbeat failed", "instance", s.instance, "err", err)
	}
}
