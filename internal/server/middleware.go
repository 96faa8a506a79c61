package server

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"
)

// Body limits: 1 MiB, and 5 MiB for the code host, whose
// push events can be large.
const (
	defaultBodyLimit  = 1 << 20
	codeHostBodyLimit = 5 << 20
)

var bodyLimits = map[string]int64{
	"/webhooks/code-host": codeHostBodyLimit,
	"/webhooks/github":    codeHostBodyLimit,
}

// Time a request body has to arrive, once the headers are in (http.Server's
// ReadHeaderTimeout covers those): senders post small bodies at once, so the
// receivers' is short.
const (
	defaultBodyTimeout  = 30 * time.Second
	receiverBodyTimeout = 10 * time.Second
)

// limitBodies caps every request body, in size and in the time it may take
// to arrive. Reading past the cap fails with an *http.MaxBytesError that
// writeError turns into 413; reading past the deadline fails, and bodyError
// makes that a 400.
func (s *Server) limitBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit, ok := bodyLimits[r.URL.Path]
		if !ok {
			limit = defaultBodyLimit
		}
		if r.ContentLength > limit {
			s.writeError(w, r, &http.MaxBytesError{Limit: limit})
			return
		}
		if r.ContentLength != 0 { // a body, of known or unknown length
			timeout := s.opts.Limits.BodyTimeout
			if strings.HasPrefix(r.URL.Path, "/webhooks/") {
				timeout = s.opts.Webhooks.ReceiverBodyTimeout
			}
			// Not every ResponseWriter can (httptest's cannot); they need not.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		next.ServeHTTP(w, r)
	})
}

type ctxKey int

const principalKey ctxKey = 0

// requestID is the request's id. observe has made the request's
// X-Request-Id header into it, which spares a copy of the request (as a
// context value would take) on every request.
func requestID(r *http.Request) string {
	return r.Header.Get("X-Request-Id")
}

// validRequestID accepts a caller's X-Request-Id only when it is short and
// plain, so it cannot forge log lines.
func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// observe gives each request an ID, then logs one line and records metrics
// for it once it is answered. Every answer, whoever writes it (the API, a
// receiver, a page, an asset, /metrics, an error), carries
// X-Content-Type-Options: nosniff, so that no browser runs a body as
// something other than its declared type.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			var b [8]byte
			rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		r.Header.Set("X-Request-Id", id)
		h := w.Header()
		h.Set("X-Request-Id", id)
		h["X-Content-Type-Options"] = noSniff
		if s.opts.Region != "" {
			h.Set("X-Perch-Region", s.opts.Region)
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)

		d := time.Since(start)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		s.metrics.observe(methodLabel(r.Method), route, rec.status, d)
		if level := levelFor(rec.status); s.log.Enabled(r.Context(), level) {
			attrs := make([]slog.Attr, 0, 6)
			attrs = append(attrs, slog.String("method", r.Method), slog.String("route", route))
			if rec.status == http.StatusNotFound {
				// What was asked for, which the route (a pattern, or
				// "unmatched") does not say; never the query, which can carry
				// a token.
				attrs = append(attrs, slog.String("path", loggedPath(r.URL.Path)))
			}
			attrs = append(attrs, slog.Int("status", rec.status), slog.Duration("duration", d), slog.String("request_id", id))
			s.log.LogAttrs(r.Context(), level, "request", attrs...)
		}
	})
}

// maxLoggedPath bounds the path a log line quotes: a 404 may be asked for
// with any path, as long as the server takes.
const maxLoggedPath = 256

// loggedPath is a request's path as a log line shows it, cut to
// maxLoggedPath bytes (at a character's boundary).
func loggedPath(path string) string {
	if len(path) <= maxLoggedPath {
		return path
	}
	cut := maxLoggedPath
	for cut > 0 && !utf8.RuneStart(path[cut]) {
		cut--
	}
	return path[:cut] + "…"
}

// recoverPanics turns a panic in a handler into a logged 500 that says
// nothing about the cause.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			s.writeError(w, r, fmt.Errorf("panic: %v\n%s", v, debug.Stack()))
		}()
		next.ServeHTTP(w, r)
	})
}

// recorder remembers the status a handler wrote. It passes Flush and
// Hijack through, which streaming and the WebSocket need.
type recorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	h, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("hijacking not supported")
	}
	r.status, r.wroteHeader = http.StatusSwitchingProtocols, true
	return h.Hijack()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// methodLabel keeps the metrics' method label to a known set, whatever
// methods clients invent.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}
