package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

func TestWebSocketRefusesBeforeUpgrade(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ada := a.register("Ada")
	expect(t, a.call("GET", "/ws", "", nil), 401)
	expect(t, a.call("GET", "/ws", "pac_forged", nil), 401)
	expect(t, a.call("GET", "/ws?since=abc", ada.Access, nil), 400)

	// Not a handshake: 426 in the error shape, saying what to upgrade to.
	res := expect(t, a.call("GET", "/ws", ada.Access, nil), 426)
	if res.Header.Get("Upgrade") != "websocket" || res.Header.Get("Sec-WebSocket-Version") != "13" {
		t.Fatalf("426 without Upgrade and version: %v", res.Header)
	}
	old := append(slices.Clone(handshakeHeaders[:6]), "Sec-WebSocket-Version", "8")
	expect(t, a.call("GET", "/ws", ada.Access, nil, old...), 426)
	// A page of another site: 403 in the error shape, before any upgrade.
	expect(t, a.call("GET", "/ws", ada.Access, nil, append(slices.Clone(handshakeHeaders), "Origin", "https://evil.example")...), 403)
}

// TestDeliveryByScope posts through a token of each scope and checks the
// exact set of connected clients that receive the event.
func TestDeliveryByScope(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")              // owner of org A; not in the team
		bob := a.invite(ada, "Bob", "member") // in the team
		carol := a.invite(ada, "Carol", "member")
		eve := a.register("Eve") // another organisation
		team := expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "Ops"}), 201).Data()["id"].(string)
		expect(t, a.call("PUT", "/api/v1/org/teams/"+team+"/members/"+bob.ID, ada.Access, nil), 204)
		userToken, teamToken, orgToken := a.webhookToken(ada, "user", ""), a.webhookToken(ada, "team", team), a.webhookToken(ada, "org", "")

		clients := map[string]*wsConn{
			"ada laptop": dial(t, ts, ada.Access, ""), "ada phone": dial(t, ts, ada.Access, ""),
			"bob": dial(t, ts, bob.Access, ""), "carol": dial(t, ts, carol.Access, ""), "eve": dial(t, ts, eve.Access, ""),
		}
		for _, c := range clients {
			c.ready()
		}
		cases := []struct {
			token string
			want  []string
		}{
			{userToken, []string{"ada laptop", "ada phone"}},
			{teamToken, []string{"bob"}},
			{orgToken, []string{"ada laptop", "ada phone", "bob", "carol"}},
			{"", []string{"ada laptop", "ada phone", "bob", "carol", "eve"}}, // anonymous broadcast
		}
		for i, c := range cases {
			title := fmt.Sprintf("event %d", i)
			a.post(c.token, title)
			a.post("", fmt.Sprintf("sentinel %d", i)) // reaches everyone, after the event
			var got []string
			for name, conn := range clients {
				switch titles := conn.until(fmt.Sprintf("sentinel %d", i)); {
				case len(titles) == 1 && titles[0] == title:
					got = append(got, name)
				case len(titles) > 0:
					t.Errorf("%s got %v", name, titles)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("case %d: received by %v, want %v", i, got, c.want)
			}
		}
	})
}

// TestReplayGivesExactlyWhatWasMissed: a client that comes back with
// ?since= gets the events it missed, in order, then live ones.
func TestReplayGivesExactlyWhatWasMissed(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "user", "")
		first := a.post(tok, "before")
		c := dial(t, ts, ada.Access, "")
		if f := c.next(); f.Type != "ready" || string(f.Data) != `{"gap":false,"last_id":"`+first+`","preferences":{"muted":[],"quiet_hours":null,"snooze_until":null,"email_unread":null},"replayed":0}` {
			t.Fatalf("ready without since: %s", f.Data)
		}
		seen := a.post(tok, "seen")
		if n := c.next().notification(t); n.ID != seen {
			t.Fatalf("live: %v", n)
		}
		c.conn.CloseNow()
		var missed []string
		for i := range 3 {
			missed = append(missed, a.post(tok, fmt.Sprintf("missed %d", i)))
		}
		c = dial(t, ts, ada.Access, seen)
		for _, id := range missed {
			if n := c.next().notification(t); n.ID != id || n.Read {
				t.Fatalf("replayed %v, want id %s", n, id)
			}
		}
		if replayed, gap := c.ready(); replayed != 3 || gap {
			t.Fatalf("ready: replayed %d, gap %v", replayed, gap)
		}
		live := a.post(tok, "live")
		if n := c.next().notification(t); n.ID != live {
			t.Fatalf("after replay: %v", n)
		}
		// Resuming from before everything replays it all.
		c2 := dial(t, ts, ada.Access, "0")
		if n := c2.next().notification(t); n.ID != first {
			t.Fatalf("first replayed %v", n)
		}
	})
}

func TestReplayReportsAGapPastRetention(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	tok := a.webhookToken(ada, "user", "")
	a.apiToken(ada, "outlives the access token")
	old := a.post(tok, "old")
	a.post(tok, "pruned too")
	a.clock.Advance(31 * 24 * time.Hour)
	kept := a.post(tok, "kept")
	if _, err := a.store.PruneNotifications(t.Context(), a.clock.Now().Add(-30*24*time.Hour).UnixMilli()); err != nil {
		t.Fatal(err)
	}
	c := dial(t, ts, ada.Token, old)
	if n := c.next().notification(t); n.ID != kept {
		t.Fatalf("replayed %v", n)
	}
	if replayed, gap := c.ready(); replayed != 1 || !gap {
		t.Fatalf("ready: replayed %d, gap %v; want 1, true", replayed, gap)
	}
	c = dial(t, ts, ada.Token, kept)
	if _, gap := c.ready(); gap {
		t.Fatal("gap after a retained id")
	}
}

func TestReadStateSyncsAcrossAUsersClients(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada, bob := a.register("Ada"), a.register("Bob")
		tok := a.webhookToken(ada, "user", "")
		laptop, phone, other := dial(t, ts, ada.Access, ""), dial(t, ts, ada.Access, ""), dial(t, ts, bob.Access, "")
		for _, c := range []*wsConn{laptop, phone, other} {
			c.ready()
		}
		id1, id2 := a.post(tok, "one"), a.post(tok, "two")
		laptop.next()
		laptop.next()
		phone.next()
		phone.next()

		// Marked read through the API: both clients hear of it.
		expect(t, a.call("POST", "/api/v1/notifications/read", ada.Access, map[string]any{"ids": []string{id1}}), 200)
		for _, c := range []*wsConn{laptop, phone} {
			if f := c.next(); f.Type != "read" || string(f.Data) != `{"ids":["`+id1+`"]}` {
				t.Fatalf("got %s %s", f.Type, f.Data)
			}
		}
		// Marked read by one client over the socket: the other hears of it.
		laptop.conn.Write(t.Context(), websocket.MessageText, []byte(`{"type":"read","data":{"ids":["`+id2+`"]}}`))
		if f := phone.next(); f.Type != "read" || string(f.Data) != `{"ids":["`+id2+`"]}` {
			t.Fatalf("got %s %s", f.Type, f.Data)
		}
		history := expect(t, a.call("GET", "/api/v1/notifications", ada.Access, nil), 200).List()
		if len(history) != 2 || history[0]["read"] != true || history[1]["read"] != true {
			t.Fatalf("history = %v", history)
		}
		a.post("", "sentinel")
		if got := other.until("sentinel"); len(got) != 0 {
			t.Fatalf("Bob got %v", got)
		}
	})
}

func TestChangeOfTeamsMakesTheClientReconnect(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	bob := a.invite(ada, "Bob", "member")
	team := expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "Ops"}), 201).Data()["id"].(string)
	c := dial(t, ts, bob.Access, "")
	c.ready()
	expect(t, a.call("PUT", "/api/v1/org/teams/"+team+"/members/"+bob.ID, ada.Access, nil), 204)
	if got := c.closeStatus(); got != websocket.StatusServiceRestart {
		t.Fatalf("close status %v, want 1012", got)
	}
	// Reconnected, Bob now hears the team.
	c = dial(t, ts, bob.Access, "")
	c.ready()
	a.post(a.webhookToken(ada, "team", team), "for the team")
	if n := c.next().notification(t); n.Title != "for the team" {
		t.Fatalf("got %v", n)
	}
}

func TestShutdownClosesSocketsWithGoingAway(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	c := dial(t, ts, ada.Access, "")
	c.ready()
	if err := a.srv.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := c.closeStatus(); got != websocket.StatusGoingAway {
		t.Fatalf("close status %v, want 1001", got)
	}
}

// TestNoGapNoDuplicateUnderConcurrentWrites: writers post concurrently
// while clients keep dropping and resuming with ?since=; in the end every
// client has seen every notification exactly once, in order.
func TestNoGapNoDuplicateUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		tok := a.webhookToken(ada, "org", "")
		a.apiToken(ada, "for the clients")
		const writers, perWriter, clients = 4, 50, 3
		total := writers * perWriter

		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					a.post(tok, fmt.Sprintf("w%d-%d", w, i))
				}
			})
		}
		results := make([][]int64, clients)
		for c := range clients {
			wg.Go(func() {
				var seen []int64
				since := "0"
				for round := 0; len(seen) < total; round++ {
					conn := dial(t, ts, ada.Token, since)
					// Read a few frames, then drop the connection mid-stream.
					for k := 0; k < 7+round%5 && len(seen) < total; k++ {
						f := conn.next()
						if f.Type != "notification" {
							continue
						}
						id, _ := strconv.ParseInt(f.notification(t).ID, 10, 64)
						seen = append(seen, id)
						since = strconv.FormatInt(id, 10)
					}
					conn.conn.CloseNow()
				}
				results[c] = seen
			})
		}
		wg.Wait()
		for c, seen := range results {
			if len(seen) != total {
				t.Fatalf("client %d saw %d notifications, want %d", c, len(seen), total)
			}
			for i := 1; i < len(seen); i++ {
				if seen[i] <= seen[i-1] {
					t.Fatalf("client %d: id %d after %d (duplicate or out of order)", c, seen[i], seen[i-1])
				}
			}
		}
	})
}

// TestASlowClientIsCutOffWithoutHoldingUpOthers: a client that stops
// reading is disconnected once what waits for it passes the limit, while a
// client of the same user that reads along gets every notification.
func TestASlowClientIsCutOffWithoutHoldingUpOthers(t *testing.T) {
	t.Parallel()
	a := newAPI(t, storetest.New(t, store.SQLite))
	ts := a.live()
	ada := a.register("Ada")
	tok := a.webhookToken(ada, "org", "")
	a.apiToken(ada, "for the clients")
	fast := dial(t, ts, ada.Token, "")
	fast.ready()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	slow, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + ada.Token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow() // and never reads
	for a.srv.hub.Len() < 2 {
		time.Sleep(time.Millisecond)
	}

	// 12 MB: more than loopback's socket buffers and wsMaxUnsent hold.
	const total = 3000
	message := strings.Repeat("x", 4000)
	for i := range total {
		expect(t, a.call("POST", "/webhooks/inbound?token="+tok, "", map[string]string{"title": fmt.Sprint("n", i), "message": message}), 200)
	}
	for i := range total {
		if n := fast.next().notification(t); n.Title != fmt.Sprint("n", i) {
			t.Fatalf("the reading client got %q, want n%d", n.Title, i)
		}
	}
	testenv.EventuallyNil(t, 10*time.Second, func() error {
		if n := a.srv.hub.Len(); n > 1 {
			return fmt.Errorf("the client that does not read is still connected: %d clients", n)
		}
		return nil
	})
}
