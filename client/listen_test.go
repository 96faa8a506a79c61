package client

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/perch-dev/perch"
)

func TestListenResumes(t *testing.T) {
	t.Parallel()
	f := &wsFake{script: func(n int, w http.ResponseWriter, r *http.Request) {
		conn := accept(w, r)
		switch n {
		case 0: // replay, then a server restart
			send(conn, note("6"), note("7"), ready(2, false))
			conn.Close(websocket.StatusGoingAway, "restarting")
		case 1: // a repeat and an old one among the replay, then a dropped line
			send(conn, note("7"), note("5"), note("8"), ready(1, false), note("10"))
			conn.CloseNow()
		default:
			send(conn, ready(0, false))
			holdOpen(conn)
		}
	}}
	c := listenClient(t, f, WithAPIToken("pat_t"))
	events, err := listen(t, c, "5", isType(EventReady, 3))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"connected", "notification 6", "notification 7", "ready 2 false", "disconnected",
		"connected", "notification 8", "ready 1 false", "notification 10", "disconnected",
		"connected", "ready 0 false",
	}
	if got := summary(events); !reflect.DeepEqual(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	for _, e := range events {
		if e.Type == EventDisconnected && (e.Err == nil || e.RetryIn < 0 || e.RetryIn > c.maxDelay) {
			t.Errorf("disconnected event %+v", e)
		}
	}
	sinces, auths := f.attempts()
	if !reflect.DeepEqual(sinces, []string{"5", "7", "10"}) {
		t.Errorf("since sent = %q, want the last id delivered", sinces)
	}
	if auths[0] != "Bearer pat_t" {
		t.Errorf("Authorization = %q", auths[0])
	}
}

func TestListenFrames(t *testing.T) {
	t.Parallel()
	f := &wsFake{script: func(n int, w http.ResponseWriter, r *http.Request) {
		conn := accept(w, r)
		send(conn,
			`{"type":"notification","data":{"id":"10","tab":"Code","title":"PR #1 opened","message":"m","severity":"warning","source":"code-host","url":"https://x","created_at":"2026-01-02T03:04:05Z","scope":{"type":"team","id":"9"},"read":false,"priority":5,"tags":["rotating_light"],"icon":"https://example.com/i.png","markdown":true,"actions":[{"id":"a1","type":"view","label":"Open","url":"https://x/1"},{"id":"a2","type":"http","label":"Merge"}]}}`,
			note("9"),   // not after since
			note("100"), // 100 > 10 as numbers, not as strings
			note("99"),  // a duplicate from the past
			ready(4, true),
			map[string]any{"type": "read", "data": map[string]any{"ids": []string{"10", "100"}}},
			map[string]any{"type": "announcement", "data": map[string]any{}}, // a kind it does not know
			"not JSON",
			note("101"),
		)
		holdOpen(conn)
	}}
	events, err := listen(t, listenClient(t, f), "9", isType(EventNotification, 3))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"connected", "notification 10", "notification 100", "ready 4 true", "read 10,100", "notification 101"}
	if got := summary(events); !reflect.DeepEqual(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	jsonEqual(t, events[1].Notification, `{"id":"10","tab":"Code","title":"PR #1 opened","message":"m","severity":"warning","source":"code-host","url":"https://x","created_at":"2026-01-02T03:04:05Z","scope":{"type":"team","id":"9"},"read":false,"priority":5,"tags":["rotating_light"],"icon":"https://example.com/i.png","markdown":true,"actions":[{"id":"a1","type":"view","label":"Open","url":"https://x/1"},{"id":"a2","type":"http","label":"Merge"}]}`)
}

// The ready frame may say where the live stream starts: a client that has
// seen no notification resumes from there.
func TestListenResumesFromReadyLastID(t *testing.T) {
	t.Parallel()
	f := &wsFake{script: func(n int, w http.ResponseWriter, r *http.Request) {
		conn := accept(w, r)
		if n == 0 {
			send(conn, map[string]any{"type": "ready", "data": map[string]any{"replayed": 0, "gap": false, "last_id": "57"}})
			conn.CloseNow()
			return
		}
		send(conn, ready(0, false))
		holdOpen(conn)
	}}
	events, err := listen(t, listenClient(t, f), "", isType(EventReady, 2))
	if err != nil {
		t.Fatal(err)
	}
	if sinces, _ := f.attempts(); !reflect.DeepEqual(sinces, []string{"", "57"}) {
		t.Errorf("since sent = %q", sinces)
	}
	// The ready events say where Listen resumes from, so that a caller can
	// record it before any notification arrives.
	var resume []string
	for _, e := range events {
		if e.Type == EventReady {
			resume = append(resume, e.LastID)
		}
	}
	if !reflect.DeepEqual(resume, []string{"57", "57"}) {
		t.Errorf("ready LastIDs = %q", resume)
	}
}

// A user with no notification yet gets a ready frame without last_id: the
// next connection must still resume, from before the first, or what
// arrives while it is away is lost.
func TestListenResumesFromTheStartWhenThereWasNothing(t *testing.T) {
	t.Parallel()
	f := &wsFake{script: func(n int, w http.ResponseWriter, r *http.Request) {
		conn := accept(w, r)
		send(conn, ready(0, false))
		if n == 0 {
			conn.CloseNow()
			return
		}
		holdOpen(conn)
	}}
	events, err := listen(t, listenClient(t, f), "", isType(EventReady, 2))
	if err != nil {
		t.Fatal(err)
	}
	if sinces, _ := f.attempts(); !reflect.DeepEqual(sinces, []string{"", "0"}) {
		t.Errorf("since sent = %q, want the reconnection to resume from 0", sinces)
	}
	for _, e := range events {
		if e.Type == EventReady && e.LastID != "0" {
			t.Errorf("ready LastID = %q, want 0", e.LastID)
		}
	}
}

func TestListenRefreshesOn401(t *testing.T) {
	t.Parallel()
	var refreshes atomic.Int32
	f := &wsFake{rest: refreshServer(&refreshes, false), script: func(n int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer pac_2" {
			writeError(w, 401, "unauthorized", "The access token has expired.")
			return
		}
		conn := accept(w, r)
		send(conn, ready(0, false))
		holdOpen(conn)
	}}
	var updates []string
	c := listenClient(t, f, WithAccessToken("pac_1", "prf_1"), WithTokenUpdate(func(a, r string) { updates = append(updates, a+" "+r) }))
	events, err := listen(t, c, "3", isType(EventReady, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(events); !reflect.DeepEqual(got, []string{"connected", "ready 0 false"}) {
		t.Errorf("events %q", got)
	}
	sinces, auths := f.attempts()
	if !reflect.DeepEqual(auths, []string{"Bearer pac_1", "Bearer pac_2"}) || !reflect.DeepEqual(sinces, []string{"3", "3"}) {
		t.Errorf("attempts: auth %q, since %q", auths, sinces)
	}
	if refreshes.Load() != 1 || !reflect.DeepEqual(updates, []string{"pac_2 prf_2"}) {
		t.Errorf("%d refreshes, updates %q", refreshes.Load(), updates)
	}
}

func TestListenFinalErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opt       Option
		status    int
		refuse    bool // the refresh
		code      string
		attempts  int
		refreshes int32
	}{
		{"API token refused", WithAPIToken("pat_gone"), 401, false, perch.EUNAUTHORIZED, 1, 0},
		{"refresh refused", WithAccessToken("pac_1", "prf_1"), 401, true, perch.EUNAUTHORIZED, 1, 1},
		{"refused after a refresh", WithAccessToken("pac_1", "prf_1"), 401, false, perch.EUNAUTHORIZED, 2, 1},
		{"forbidden", WithAPIToken("pat_t"), 403, false, perch.EFORBIDDEN, 1, 0},
		{"not found", WithAPIToken("pat_t"), 404, false, perch.ENOTFOUND, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var refreshes atomic.Int32
			f := &wsFake{rest: refreshServer(&refreshes, tt.refuse), script: func(n int, w http.ResponseWriter, r *http.Request) {
				writeError(w, tt.status, tt.code, "No.")
			}}
			events, err := listen(t, listenClient(t, f, tt.opt), "", func(Event) bool { return false })
			if perch.ErrorCode(err) != tt.code {
				t.Errorf("Listen = %v, want %s", err, tt.code)
			}
			if sinces, _ := f.attempts(); len(sinces) != tt.attempts || refreshes.Load() != tt.refreshes {
				t.Errorf("%d attempts, %d refreshes; want %d, %d", len(sinces), refreshes.Load(), tt.attempts, tt.refreshes)
			}
			if len(events) != 0 {
				t.Errorf("events %q", summary(events))
			}
		})
	}
}

// Listen's waits grow while attempts fail, and start over after a
// connection that lasted.
func TestListenBackoff(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name   string
		stable time.Duration
		want   []time.Duration
	}{
		{"short connection", time.Hour, []time.Duration{1 * ms, 2 * ms, 4 * ms, 4 * ms, 4 * ms, 4 * ms}},
		{"lasting connection", 0, []time.Duration{1 * ms, 2 * ms, 4 * ms, 4 * ms, 1 * ms, 2 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &wsFake{script: func(n int, w http.ResponseWriter, r *http.Request) {
				if n != 4 {
					writeError(w, 503, "unavailable", "Starting up.")
					return
				}
				conn := accept(w, r)
				conn.Close(websocket.StatusGoingAway, "bye")
			}}
			c := listenClient(t, f)
			c.stableAfter = tt.stable
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			var got []time.Duration
			c.jitter = func(n int64) int64 {
				if got = append(got, time.Duration(n-1)); len(got) == len(tt.want) {
					cancel()
				}
				return 0
			}
			var errs []string
			err := c.Listen(ctx, "", func(e Event) {
				if e.Type == EventDisconnected {
					errs = append(errs, perch.ErrorCode(e.Err))
				}
			})
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Listen = %v; ceilings %v, want %v", err, got, tt.want)
			}
			want := []string{"unavailable", "unavailable", "unavailable", "unavailable", "internal", "unavailable"}
			if !reflect.DeepEqual(errs, want) {
				t.Errorf("disconnection errors %q, want %q", errs, want)
			}
		})
	}
}

func TestListenAnswersPings(t *testing.T) {
	t.Parallel()
	pinged := make(chan error, 1)
	f := &wsFake{script: func(n int, w http.ResponseWriter, r *http.Request) {
		conn := accept(w, r)
		closed := conn.CloseRead(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		pinged <- conn.Ping(ctx)
		send(conn, ready(0, false))
		<-closed.Done()
	}}
	if _, err := listen(t, listenClient(t, f), "", isType(EventReady, 1)); err != nil {
		t.Fatal(err)
	}
	if err := <-pinged; err != nil {
		t.Errorf("the server's ping: %v", err)
	}
}

// A server that stops answering is found out by Listen's own pings.
func TestListenDropsSilentServer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	f := &wsFake{script: func(n int, w http.ResponseWriter, r *http.Request) {
		conn := accept(w, r)
		if n == 0 { // never reads, so never answers a ping
			<-release
			conn.CloseNow()
			return
		}
		send(conn, ready(0, false))
		holdOpen(conn)
	}}
	c := listenClient(t, f)
	c.pingEvery, c.pingTimeout = 5*time.Millisecond, 50*time.Millisecond
	events, err := listen(t, c, "", isType(EventReady, 1))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(events); !reflect.DeepEqual(got, []string{"connected", "disconnected", "connected", "ready 0 false"}) {
		t.Fatalf("events %q", got)
	}
	if err := events[1].Err; err == nil || !strings.Contains(err.Error(), "ping") {
		t.Errorf("disconnected because %v, want the missing pong", err)
	}
}

// Listen returns at once when its context ends, connected or waiting to
// reconnect, and leaves no goroutine behind.
func TestListenStopsOnCancel(t *testing.T) {
	tests := []struct {
		name  string
		until EventType
		ws    func(w http.ResponseWriter, r *http.Request)
	}{
		{"connected", EventReady, func(w http.ResponseWriter, r *http.Request) {
			conn := accept(w, r)
			send(conn, ready(0, false))
			holdOpen(conn)
		}},
		{"waiting to reconnect", EventDisconnected, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, 503, "unavailable", "Down for maintenance.")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			f := &wsFake{script: func(_ int, w http.ResponseWriter, r *http.Request) { tt.ws(w, r) }}
			srv := mustServer(t, f)
			defer srv.Close()
			c := New(srv.URL, WithReconnectDelay(time.Hour, time.Hour))
			c.jitter = func(n int64) int64 { return n - 1 }

			ctx, cancel := context.WithCancel(t.Context())
			reached := make(chan struct{})
			done := make(chan error)
			go func() {
				done <- c.Listen(ctx, "", func(e Event) {
					if e.Type == tt.until {
						close(reached)
					}
				})
			}()
			select {
			case <-reached:
			case <-time.After(5 * time.Second):
				t.Fatal("Listen never got there")
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Listen = %v, want nil", err)
				}
			case <-time.After(time.Second):
				t.Fatal("Listen did not return after cancel")
			}
		})
	}
}

// BenchmarkHandleNotificationFrame is a listening client's work per
// notification once the frame is read.
func BenchmarkHandleNotificationFrame(b *testing.B) {
	frame := []byte(`{"type":"notification","data":{"id":"10","tab":"Deploys","title":"Deploy finished","message":"api v1.2.3 is live","severity":"info","source":"inbound","url":"","created_at":"2026-01-02T03:04:05Z","scope":{"type":"org","id":"org_1"},"read":false}}`)
	got := 0
	s := &stream{fn: func(e Event) { got++ }}
	b.ReportAllocs()
	for b.Loop() {
		s.last = ""
		s.handle(frame)
	}
	if got == 0 {
		b.Fatal("no notification reported")
	}
}
