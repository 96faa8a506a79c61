// Package hub keeps this instance's connected clients and delivers fan-out
// messages to the ones they concern. Each notification is encoded once,
// whatever the number of clients, and handed to each client's bounded queue
// without waiting: a client too slow to keep up is cut off, never allowed to
// hold up the others.
package hub

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/perch-dev/perch"
)

// Frame is one WebSocket text message for a client, with the notification id
// it carries (0 for other frames), so a client replaying history can skip
// what it has sent already.
type Frame struct {
	ID   int64
	Data []byte
	// The message as its writers put it on the wire, made once for every
	// client that gets this frame (see Encoded).
	wire *encoding
}

type encoding struct {
	once sync.Once
	b    []byte

	// A notification frame's variant that says "silent": true, made
	// lazily by the first client whose preferences silence it, then
	// shared by the others (see Silent).
	silent  bool // this frame says silent already
	altOnce sync.Once
	alt     Frame
}

func newFrame(id int64, data []byte) Frame {
	return Frame{ID: id, Data: data, wire: &encoding{}}
}

// Encoded returns the frame's data as encode turns it into what goes on the
// wire (the WebSocket framing, say). One notification goes to every client
// of an organisation: the first of their writers to get here encodes it,
// and the others send the same bytes. encode must give the same result
// every time; the result must not be changed.
func (f Frame) Encoded(encode func(data []byte) []byte) []byte {
	if f.wire == nil {
		return encode(f.Data)
	}
	f.wire.once.Do(func() { f.wire.b = encode(f.Data) })
	return f.wire.b
}

// Silent returns the notification frame f as it says "silent": true, made
// once for every client that needs it; f itself when it says so already
// (a min notification is silent for everyone) or is no notification frame.
func (f Frame) Silent() Frame {
	e := f.wire
	if e == nil || e.silent || f.ID == 0 {
		return f
	}
	e.altOnce.Do(func() {
		e.alt = newFrame(f.ID, silenced(f.Data))
		e.alt.wire.silent = true
	})
	return e.alt
}

// silenced is a notification frame's data, {"type":"notification","data":{…}},
// with "silent": true added to the notification: the same bytes as encoding
// it so, without encoding it again.
func silenced(data []byte) []byte {
	const tail = "}}"
	if !bytes.HasSuffix(data, []byte(tail)) {
		return data // not a frame NotificationFrame made
	}
	out := make([]byte, 0, len(data)+len(`,"silent":true`))
	out = append(out, data[:len(data)-len(tail)]...)
	return append(out, `,"silent":true}}`...)
}

// Client is one connection's place in the hub. The hub never waits for a
// client and holds no goroutine for it: it queues frames and calls the
// client's notify function, which starts whatever writes them out.
type Client struct {
	Audience perch.Audience
	// The credential the connection was opened with: a sign-in or an API
	// token. When it is revoked, the connection ends.
	SessionID, APITokenID string

	// The queue grows with a burst and is let go when drained, so an idle
	// client costs next to nothing while a busy one can fall up to max
	// frames behind before it counts as too slow.
	mu     sync.Mutex
	queue  []Frame
	max    int
	reason string // why the hub dropped the client; "" while it is connected
	notify func()

	// The user's preferences as the client holds them: nil until set,
	// which silences what the defaults do.
	prefs atomic.Pointer[clientPrefs]
}

// clientPrefs are preferences as a client holds them: as they were stored
// (for the ready frame), compiled (nil: nothing beyond the defaults), and
// their version, so that an older copy never replaces a newer one.
type clientPrefs struct {
	version  int64
	p        *perch.Preferences
	silencer *perch.Silencer
}

// SetPreferences has the client follow the user's preferences p of version
// v from now on, unless it holds a newer version already (one loaded at
// connect may race with a change announced meanwhile); it reports whether
// they were taken.
func (c *Client) SetPreferences(v int64, p *perch.Preferences, now time.Time) bool {
	next := &clientPrefs{version: v, p: p, silencer: p.Compile(now)}
	for {
		cur := c.prefs.Load()
		if cur != nil && cur.version >= v {
			return false
		}
		if c.prefs.CompareAndSwap(cur, next) {
			return true
		}
	}
}

// Preferences are the user's preferences the client follows: the
// defaults until set.
func (c *Client) Preferences() *perch.Preferences {
	if cp := c.prefs.Load(); cp != nil && cp.p != nil {
		return cp.p
	}
	return perch.DefaultPreferences()
}

// Silent reports whether n should not pop up on this client at now.
func (c *Client) Silent(n *perch.Notification, now time.Time) bool {
	var s *perch.Silencer
	if cp := c.prefs.Load(); cp != nil {
		s = cp.silencer
	}
	return s.Silent(n, now)
}

// NotificationFrame is n's frame for this client: silent when its
// preferences say so at now (for a replay; live frames are the hub's).
func (c *Client) NotificationFrame(n *perch.Notification, now time.Time) Frame {
	f := NotificationFrame(n)
	if c.Silent(n, now) {
		return f.Silent()
	}
	return f
}

// NewClient returns a client that may fall up to max frames behind. notify
// is called, without blocking, whenever frames start waiting in an empty
// queue and when the client is dropped; then call Take and Dropped.
func NewClient(a perch.Audience, max int, notify func()) *Client {
	return &Client{Audience: a, max: max, notify: notify}
}

// Take appends every waiting frame to buf, in order, and empties the queue.
func (c *Client) Take(buf []Frame) []Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	buf = append(buf, c.queue...)
	if cap(c.queue) > 64 {
		c.queue = nil // give a burst's memory back
	} else {
		c.queue = c.queue[:0]
	}
	return buf
}

// Pending reports whether frames are waiting or the client was dropped:
// whether there is anything for its writer to do.
func (c *Client) Pending() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue) > 0 || c.reason != ""
}

// Dropped returns why the hub dropped the client, or "" if it has not: too
// slow, its grants changed (it must reconnect to get its new audience), or
// the server is going away.
func (c *Client) Dropped() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason
}

// offer queues f without waiting; false when the client is too far behind.
func (c *Client) offer(f Frame) bool {
	c.mu.Lock()
	if c.reason != "" {
		c.mu.Unlock()
		return true // on its way out; nothing more to send
	}
	if len(c.queue) >= c.max {
		c.mu.Unlock()
		return false
	}
	first := len(c.queue) == 0
	c.queue = append(c.queue, f)
	c.mu.Unlock()
	if first {
		c.notify()
	}
	return true
}

func (c *Client) drop(reason string) {
	c.mu.Lock()
	first := c.reason == ""
	if first {
		c.reason = reason
		c.queue = nil
	}
	c.mu.Unlock()
	if first {
		c.notify()
	}
}

// Reasons a client is dropped.
const (
	ReasonSlow     = "too slow to keep up"
	ReasonGrants   = "access changed; reconnect"
	ReasonShutdown = "server shutting down; reconnect"
	ReasonLost     = "live delivery interrupted; reconnect"
	ReasonRevoked  = "credential revoked"
	ReasonExpired  = "access token expired; renew it and reconnect"
	// ReasonTokenExpired ends a socket opened with an API token that has
	// expired: unlike an access token's, nothing renews it.
	ReasonTokenExpired = "API token expired"
)

type set map[*Client]struct{}

// Hub is the registry. It is safe for concurrent use.
type Hub struct {
	mu     sync.RWMutex
	all    set
	byUser map[string]set
	byOrg  map[string]set
	byTeam map[string]set
	now    func() time.Time
}

// Option configures a Hub.
type Option func(*Hub)

// WithClock has the hub read the time from now (whether quiet hours or a
// snooze silence a notification) rather than time.Now: the server's clock,
// which tests move.
func WithClock(now func() time.Time) Option { return func(h *Hub) { h.now = now } }

// New returns an empty hub.
func New(opts ...Option) *Hub {
	h := &Hub{all: set{}, byUser: map[string]set{}, byOrg: map[string]set{}, byTeam: map[string]set{}, now: time.Now}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Add registers c; from now on it receives what concerns its audience.
func (h *Hub) Add(c *Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.all[c] = struct{}{}
	add(h.byUser, c.Audience.UserID, c)
	add(h.byOrg, c.Audience.OrgID, c)
	for _, t := range c.Audience.TeamIDs {
		add(h.byTeam, t, c)
	}
}

// Remove unregisters c.
func (h *Hub) Remove(c *Client) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.all, c)
	remove(h.byUser, c.Audience.UserID, c)
	remove(h.byOrg, c.Audience.OrgID, c)
	for _, t := range c.Audience.TeamIDs {
		remove(h.byTeam, t, c)
	}
}

// Len is the number of connected clients.
func (h *Hub) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.all)
}

func add(m map[string]set, key string, c *Client) {
	s := m[key]
	if s == nil {
		s = set{}
		m[key] = s
	}
	s[c] = struct{}{}
}

func remove(m map[string]set, key string, c *Client) {
	if s := m[key]; s != nil {
		delete(s, c)
		if len(s) == 0 {
			delete(m, key)
		}
	}
}

// wire is a server-to-client WebSocket frame: {"type": ..., "data": ...}.
type wire struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

// NotificationFrame encodes a notification frame as it goes to a client
// without preferences: silent when n has min priority, which never pops
// up. Frame.Silent is the frame for clients whose preferences silence it.
func NotificationFrame(n *perch.Notification) Frame {
	id, _ := strconv.ParseInt(n.ID, 10, 64)
	data, _ := json.Marshal(wire{Type: "notification", Data: n})
	f := newFrame(id, data)
	if n.Priority == perch.PriorityMin {
		f.Data = silenced(data)
		f.wire.silent = true
	}
	return f
}

// PreferencesFrame encodes the frame that tells a user's clients their
// preferences changed.
func PreferencesFrame(p *perch.Preferences) Frame {
	data, _ := json.Marshal(wire{Type: "preferences", Data: p})
	return newFrame(0, data)
}

// ReadFrame encodes the frame that tells a user's clients what was read.
func ReadFrame(ids []string) Frame {
	data, _ := json.Marshal(wire{Type: "read", Data: map[string][]string{"ids": ids}})
	return newFrame(0, data)
}

// ReadyFrame encodes the frame that ends a replay. lastID is the newest
// notification the client has now (0: none), so a client that connected
// without ?since= still knows where to resume after a drop.
// prefs are the preferences the client follows.
func ReadyFrame(replayed int, gap bool, lastID int64, prefs *perch.Preferences) Frame {
	if prefs == nil {
		prefs = perch.DefaultPreferences()
	}
	d := map[string]any{"replayed": replayed, "gap": gap, "preferences": prefs}
	if lastID > 0 {
		d["last_id"] = strconv.FormatInt(lastID, 10)
	}
	data, _ := json.Marshal(wire{Type: "ready", Data: d})
	return newFrame(0, data)
}

// Deliver hands a fan-out message to the clients it concerns. It never
// blocks: it is the fan-out subscriber for the whole instance.
func (h *Hub) Deliver(m perch.FanoutMessage) {
	switch m.Kind {
	case perch.FanoutNotification:
		if m.Notification == nil {
			return
		}
		f := NotificationFrame(m.Notification)
		h.mu.RLock()
		defer h.mu.RUnlock()
		switch s := m.Notification.Scope; s.Type {
		case perch.ScopeAll:
			h.offerNotification(h.all, f, m.Notification)
		case perch.ScopeUser:
			h.offerNotification(h.byUser[s.ID], f, m.Notification)
		case perch.ScopeOrg:
			h.offerNotification(h.byOrg[s.ID], f, m.Notification)
		case perch.ScopeTeam:
			h.offerNotification(h.byTeam[s.ID], f, m.Notification)
		}
	case perch.FanoutRead:
		f := ReadFrame(m.IDs)
		h.mu.RLock()
		defer h.mu.RUnlock()
		offerAll(h.byUser[m.UserID], f)
	case perch.FanoutGrants:
		h.mu.RLock()
		defer h.mu.RUnlock()
		for c := range h.byUser[m.UserID] {
			// A client that joined after the change has the new audience
			// already; only the others must reconnect.
			if m.Audience == nil || !c.Audience.Equal(*m.Audience) {
				c.drop(ReasonGrants)
			}
		}
	case perch.FanoutPreferences:
		if m.Preferences == nil {
			return
		}
		f := PreferencesFrame(m.Preferences)
		now := h.now()
		h.mu.RLock()
		defer h.mu.RUnlock()
		for c := range h.byUser[m.UserID] {
			// A client that loaded these (or newer) at connect has them.
			if c.SetPreferences(m.Version, m.Preferences, now) && !c.offer(f) {
				c.drop(ReasonSlow)
			}
		}
	case perch.FanoutRevoked:
		h.mu.RLock()
		defer h.mu.RUnlock()
		for c := range h.byUser[m.UserID] {
			if c.SessionID != "" && slices.Contains(m.Sessions, c.SessionID) ||
				c.APITokenID != "" && slices.Contains(m.APITokens, c.APITokenID) {
				c.drop(ReasonRevoked)
			}
		}
	}
}

// Expire drops c because the credential it was opened with has expired:
// an access token (ReasonExpired) or an API token (ReasonTokenExpired).
func (c *Client) Expire() {
	if c.APITokenID != "" {
		c.drop(ReasonTokenExpired)
		return
	}
	c.drop(ReasonExpired)
}

// Revoke drops c because the credential it was opened with was revoked.
func (c *Client) Revoke() { c.drop(ReasonRevoked) }

// DropAll drops every client with reason, as on shutdown or when fan-out
// may have lost messages: clients reconnect and replay from the store.
func (h *Hub) DropAll(reason string) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	for c := range h.all {
		c.drop(reason)
	}
}

// offerNotification offers n's frame f to the clients of s, the silent
// variant to those whose preferences silence it. A client without
// preferences costs one atomic load more than offerAll; the clock is read
// once, for the first client that has some.
func (h *Hub) offerNotification(s set, f Frame, n *perch.Notification) {
	if f.wire.silent { // min: silent for everyone
		offerAll(s, f)
		return
	}
	var now time.Time
	for c := range s {
		g := f
		if cp := c.prefs.Load(); cp != nil && cp.silencer != nil {
			if now.IsZero() {
				now = h.now()
			}
			if cp.silencer.Silent(n, now) {
				g = f.Silent()
			}
		}
		if !c.offer(g) {
			c.drop(ReasonSlow)
		}
	}
}

func offerAll(s set, f Frame) {
	for c := range s {
		if !c.offer(f) {
			c.drop(ReasonSlow)
		}
	}
}
