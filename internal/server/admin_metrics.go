package server

import (
	"net/http"

	"github.com/perch-dev/perch"
)

// metricsSummary answers the admin summary, counted in the database;
// connected_clients is summed over every instance heard from lately
// (internal/heartbeat).
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
