// Package pagerdutyfake is an httptest fake of the one PagerDuty REST API
// v2 endpoint Perch calls, PUT /incidents/{id}, shaped as PagerDuty's
// reference describes it: it requires "Authorization: Token token=<key>",
// "Accept: application/vnd.pagerduty+json;version=2", "Content-Type:
// application/json" and a From address, and a body {"incident": {"type":
// "incident" | "incident_reference", "status": "acknowledged" |
// "resolved"}}. It answers 200 {"incident": {...}} with the incident as
// changed, 401 {"error": {"message", "code"}} for a wrong key, 404 for an
// incident it does not know, 400 for anything else wrong. It records the
// changes it made for tests to inspect.
package pagerdutyfake

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Change is one status change the fake made.
type Change struct {
	Incident string
	Status   string
	From     string
}

// Server is a running fake of PagerDuty's REST API for one API key and the
// incidents AddIncident made.
type Server struct {
	srv *httptest.Server
	key string

	mu        sync.Mutex
	incidents map[string]string // id → status
	changes   []Change
}

// Start runs a fake that accepts apiKey, until the test ends.
func Start(t testing.TB, apiKey string) *Server {
	t.Helper()
	s := &Server{key: apiKey, incidents: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the fake's base URL (PERCH_PAGERDUTY_API_URL).
func (s *Server) URL() string { return s.srv.URL }

// AddIncident makes an incident the fake knows, in status (triggered,
// acknowledged, resolved).
func (s *Server) AddIncident(id, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.incidents[id] = status
}

// Status is incident id's status, "" for one the fake does not know.
func (s *Server) Status(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.incidents[id]
}

// Changes are the status changes made so far, in order.
func (s *Server) Changes() []Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Change(nil), s.changes...)
}

// apiError answers PagerDuty's error object.
func apiError(w http.ResponseWriter, status, code int, message string, errs ...string) {
	body := map[string]any{"message": message, "code": code}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	answer(w, status, map[string]any{"error": body})
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	id, ok := strings.CutPrefix(r.URL.Path, "/incidents/")
	if !ok || id == "" || strings.Contains(id, "/") {
		apiError(w, http.StatusNotFound, 2100, "Not Found")
		return
	}
	if r.Method != http.MethodPut {
		apiError(w, http.StatusMethodNotAllowed, 2100, "Method Not Allowed")
		return
	}
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Token token=")
	if !ok || subtle.ConstantTimeCompare([]byte(key), []byte(s.key)) != 1 {
		apiError(w, http.StatusUnauthorized, 2006, "Authentication failed")
		return
	}
	var problems []string
	if got := r.Header.Get("Accept"); got != "application/vnd.pagerduty+json;version=2" {
		problems = append(problems, fmt.Sprintf("Accept must be application/vnd.pagerduty+json;version=2, not %q", got))
	}
	if got := r.Header.Get("Content-Type"); got != "application/json" {
		problems = append(problems, fmt.Sprintf("Content-Type must be application/json, not %q", got))
	}
	from := r.Header.Get("From")
	if !strings.Contains(from, "@") {
		problems = append(problems, "From must be the e-mail address of a user of the account")
	}
	var body struct {
		Incident *struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"incident"`
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || body.Incident == nil {
		problems = append(problems, "the body must be {\"incident\": {\"type\", \"status\"}}")
	} else {
		if t := body.Incident.Type; t != "incident" && t != "incident_reference" {
			problems = append(problems, "incident.type must be incident or incident_reference")
		}
		if st := body.Incident.Status; st != "acknowledged" && st != "resolved" {
			problems = append(problems, "incident.status must be acknowledged or resolved")
		}
	}
	if len(problems) > 0 {
		apiError(w, http.StatusBadRequest, 2001, "Invalid Input Provided", problems...)
		return
	}
	s.mu.Lock()
	if _, known := s.incidents[id]; !known {
		s.mu.Unlock()
		apiError(w, http.StatusNotFound, 2100, "Not Found")
		return
	}
	s.incidents[id] = body.Incident.Status
	s.changes = append(s.changes, Change{Incident: id, Status: body.Incident.Status, From: from})
	s.mu.Unlock()
	answer(w, http.StatusOK, map[string]any{"incident": map[string]any{
		"id":       id,
		"type":     "incident",
		"summary":  "[#1] " + id,
		"self":     s.srv.URL + "/incidents/" + id,
		"html_url": "https://perch-test.pagerduty.com/incidents/" + id,
		"status":   body.Incident.Status,
	}})
}
