package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/hub"
	"github.com/perch-dev/perch/internal/store"
)

// WebSocket settings of DESIGN.md §7.
const (
	wsQueue        = 4096 // frames a client may fall behind before it is cut off
	wsPingEvery    = 30 * time.Second
	wsPongWait     = 60 * time.Second
	wsWriteTimeout = 10 * time.Second
	wsReadLimit    = 64 << 10
	replayPage     = 500
)

// closeStatus is how a connection is closed for each reason the hub drops a
// client; all of them invite the client to reconnect.
var closeStatus = map[string]websocket.StatusCode{
	hub.ReasonSlow:     websocket.StatusTryAgainLater,
	hub.ReasonGrants:   websocket.StatusServiceRestart,
	hub.ReasonShutdown: websocket.StatusGoingAway,
	hub.ReasonLost:     websocket.StatusServiceRestart,
}

// websocket serves GET /ws: authenticate (401 before any upgrade), join the
// hub, replay from ?since= out of the store, say ready, then relay live
// frames. Joining the hub before reading the store is what closes the gap
// between replay and live delivery; frames the replay already sent are
// skipped by id.
func (s *Server) websocket(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principalFromRequest(r)
	if err != nil {
		return err
	}
	since := r.URL.Query().Get("since")
	if since != "" {
		if _, err := store.ParseNotificationID(since); err != nil {
			return err
		}
	}
	u := p.User
	audience, err := s.store.Audience(r.Context(), u)
	if err != nil {
		return err
	}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: s.originPatterns()})
	if err != nil {
		return nil // Accept has answered the request
	}
	conn.SetReadLimit(wsReadLimit)
	s.sockets.Add(1)
	client := hub.NewClient(*audience, wsQueue)
	s.hub.Add(client)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	done := func() {
		cancel()
		s.hub.Remove(client)
		s.sockets.Done()
	}
	go s.readFrames(ctx, cancel, conn, u)

	last, err := s.replay(ctx, conn, audience, since)
	if err != nil {
		conn.Close(websocket.StatusInternalError, "replay failed")
		if ctx.Err() == nil {
			s.log.Error("websocket replay failed", "user", u.ID, "err", err)
		}
		done()
		return nil
	}
	// The connection lives on in a fresh goroutine: this one's stack grew
	// deep in authentication, the store and the replay, and an idle
	// connection should not keep that memory for hours.
	go func() {
		defer done()
		s.relay(ctx, conn, client, last)
	}()
	return nil
}

// replay sends what the user missed after since and the ready frame, and
// returns the id of the newest notification the client now has. Without
// since nothing is replayed, but the newest visible id still counts as had:
// the ready frame tells the client, so it can resume from there.
func (s *Server) replay(ctx context.Context, conn *websocket.Conn, a *perch.Audience, since string) (int64, error) {
	var last int64
	replayed, gap := 0, false
	if since != "" {
		var err error
		if gap, err = s.store.ReplayGap(ctx, since); err != nil {
			return 0, err
		}
		last, _ = store.ParseNotificationID(since)
		for cursor := since; ; {
			page, err := s.store.Notifications(ctx, a, cursor, replayPage)
			if err != nil {
				return 0, err
			}
			for _, n := range page {
				f := hub.NotificationFrame(n)
				if err := write(ctx, conn, f.Data); err != nil {
					return 0, err
				}
				last, cursor = f.ID, n.ID
				replayed++
			}
			if len(page) < replayPage {
				break
			}
		}
	}
	if since == "" {
		newest, err := s.store.Notifications(ctx, a, "", 1)
		if err != nil {
			return 0, err
		}
		if len(newest) == 1 {
			last, _ = store.ParseNotificationID(newest[0].ID)
		}
	}
	return last, write(ctx, conn, hub.ReadyFrame(replayed, gap, last).Data)
}

// relay writes live frames until the connection ends or the hub drops the
// client, and pings so that a dead peer is noticed.
func (s *Server) relay(ctx context.Context, conn *websocket.Conn, client *hub.Client, last int64) {
	ping := time.NewTicker(wsPingEvery)
	defer ping.Stop()
	pinging := false
	pong := make(chan error, 1)
	var frames []hub.Frame
	for {
		select {
		case <-client.Wake():
			frames = client.Take(frames[:0])
			for _, f := range frames {
				if f.ID != 0 {
					if f.ID <= last {
						continue // the replay sent it already
					}
					last = f.ID
				}
				if err := write(ctx, conn, f.Data); err != nil {
					conn.CloseNow()
					return
				}
			}
			if cap(frames) > 64 {
				frames = nil
			}
		case <-client.Gone:
			conn.Close(closeStatus[client.Reason], client.Reason)
			return
		case <-ping.C:
			if pinging {
				continue
			}
			pinging = true
			go func() {
				pctx, cancel := context.WithTimeout(ctx, wsPongWait)
				defer cancel()
				pong <- conn.Ping(pctx)
			}()
		case err := <-pong:
			pinging = false
			if err != nil {
				conn.CloseNow() // no pong in time: the peer is gone
				return
			}
		case <-ctx.Done():
			conn.CloseNow()
			return
		}
	}
}

func write(ctx context.Context, conn *websocket.Conn, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, data)
}

// readFrames reads what the client sends (read receipts) and, by reading,
// lets pongs and close frames through. It cancels the connection's context
// when the peer goes away.
func (s *Server) readFrames(ctx context.Context, cancel context.CancelFunc, conn *websocket.Conn, u *perch.User) {
	defer cancel()
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var in struct {
			Type string `json:"type"`
			Data struct {
				IDs []string `json:"ids"`
			} `json:"data"`
		}
		if json.Unmarshal(data, &in) != nil || in.Type != "read" || len(in.Data.IDs) == 0 || len(in.Data.IDs) > maxHistoryLimit {
			continue // not something a client of ours sends; ignore it
		}
		if _, err := s.readAndTell(ctx, u, in.Data.IDs, false); err != nil && ctx.Err() == nil {
			s.log.Warn("websocket read receipt failed", "user", u.ID, "err", err)
		}
	}
}

// originPatterns admits browsers on the public address besides the request's
// own host (which coder/websocket always admits).
func (s *Server) originPatterns() []string {
	if u, err := url.Parse(s.opts.BaseURL); err == nil && u.Host != "" {
		return []string{u.Host}
	}
	return nil
}
