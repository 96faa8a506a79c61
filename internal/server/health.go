package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
)

// healthStore is what liveness and readiness need from storage.
type healthStore interface {
	Ping(ctx context.Context) error
	ProbeWrite(ctx context.Context) error
	WriteHealth() store.WriteHealth
}

var _ healthStore = (*store.Store)(nil)

// Readiness: an instance is ready while its database answers and its writes
// succeed. A database can answer every read and ping while it refuses every
// write (a full disk, a standby after a failover), so the store counts the
// writes that fail for an outage (store.WriteHealth), and a run of
// writeFailuresUnready of them makes the instance unready until a write
// succeeds.
const (
	// writeFailuresUnready is how many writes in a row must fail for an
	// outage before the instance says it is not ready. One is not enough:
	// a single failure can be a passing thing (a connection the database
	// closed, one lock held past the busy timeout), and taking an instance
	// out of rotation for it would move its load onto others for nothing.
	// A full disk or a database refusing writes fails every write, and
	// under load three transactions fail within milliseconds (each may
	// carry many deliveries, which group commit shares out), so the
	// instance goes unready at once where it matters.
	writeFailuresUnready = 3
	// writeProbeAfter is how long after the last failed write readiness
	// tries a write of its own (store.ProbeWrite). An unready instance gets
	// no traffic once its load balancer takes it out of rotation, so
	// without the probe it would never see the write that makes it ready
	// again; while writes are still being tried and failing, the probe is
	// not needed and not made.
	writeProbeAfter = 10 * time.Second
	// readyTimeout bounds the checks, well inside a probe's usual timeout.
	readyTimeout = 2 * time.Second
)

// healthz says the process is up; it touches nothing else.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readiness is /readyz's answer: what each check found ("ok", or "failing:
// …" saying what is wrong), with "status" when the instance can serve and
// the error shape (503 unavailable) when it cannot.
type readiness struct {
	Status string       `json:"status,omitempty"` // "ready", or "degraded" when only a check that does not stop service fails
	Error  *errorDetail `json:"error,omitempty"`
	Checks checks       `json:"checks"`
}

type checks struct {
	Database string `json:"database"`          // the database answers a ping
	Writes   string `json:"writes"`            // writes succeed (store.WriteHealth)
	Wakeups  string `json:"wakeups,omitempty"` // the wake-up channel between instances (Options.WakeupHealth), when there is one
}

const checkOK = "ok"

// readyz says whether this instance can serve: its database answers and
// its writes succeed (a failing wake-up channel is reported, but leaves it
// ready: every instance shares that channel, and delivery goes on without
// it). Not ready is 503 unavailable in the error shape, with Retry-After
// and the checks beside the error.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	var c checks
	var failing []string
	if err := s.healthDB.Ping(ctx); err != nil {
		s.log.Warn("not ready: the database does not answer", "err", err)
		c.Database = "failing: " + cmp.Or(store.OutageCause(err), "the database does not answer")
		failing = append(failing, "the database does not answer")
	} else {
		c.Database = checkOK
	}
	if ok, text := s.writesCheck(ctx); ok {
		c.Writes = checkOK
	} else {
		c.Writes = text
		failing = append(failing, "writes are failing")
	}
	degraded := false
	if s.opts.WakeupHealth != nil {
		c.Wakeups = checkOK
		if err := s.opts.WakeupHealth(); err != nil {
			s.log.Warn("the wake-up channel is down", "err", err)
			c.Wakeups, degraded = wakeupFailure(err), true
		}
	}
	if len(failing) > 0 {
		w.Header().Set("Retry-After", retryUnavailable)
		writeJSON(w, http.StatusServiceUnavailable, readiness{Checks: c, Error: &errorDetail{
			Code: perch.EUNAVAILABLE, Message: "Not ready: " + strings.Join(failing, ", and ") + ".",
		}})
		return nil
	}
	status := "ready"
	if degraded {
		status = "degraded"
	}
	writeJSON(w, http.StatusOK, readiness{Status: status, Checks: c})
	return nil
}

// writesCheck reports whether writes are succeeding, or what is wrong. When
// they have been failing and none has been tried for writeProbeAfter, it
// tries one (one /readyz at a time: the others report what is known).
func (s *Server) writesCheck(ctx context.Context) (ok bool, text string) {
	h := s.healthDB.WriteHealth()
	if h.Failures >= writeFailuresUnready && s.storeNow().Sub(h.Last) >= writeProbeAfter && s.probing.TryLock() {
		if err := s.healthDB.ProbeWrite(ctx); err != nil {
			s.log.Warn("not ready: a probe write failed", "err", err)
		}
		s.probing.Unlock()
		h = s.healthDB.WriteHealth()
	}
	if h.Failures < writeFailuresUnready {
		return true, ""
	}
	return false, fmt.Sprintf("failing: %d writes in a row since %s: %s", h.Failures, h.Since.UTC().Format(time.RFC3339), h.Cause)
}

// wakeupFailure is the wakeups check's text for err: what err says to
// people when it is one of Perch's errors, else that the channel is down
// (the error itself, which may name hosts, goes to the log: /readyz is
// public).
func wakeupFailure(err error) string {
	if e, ok := errors.AsType[*perch.Error](err); ok {
		return "failing: " + strings.TrimSuffix(e.Message, ".")
	}
	return "failing: the wake-up channel is down"
}
