package server

import (
	"context"
	"net/http"
	"time"

	"github.com/perch-dev/perch"
)

// healthz says the process is up; it touches nothing else.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz says whether this instance can serve: its database answers.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.log.Warn("not ready", "err", err)
		return perch.Errorf(perch.EUNAVAILABLE, "The database is not reachable.")
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
