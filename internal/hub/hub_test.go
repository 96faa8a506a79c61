package hub

import (
	"slices"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
)

func note(id, scopeType, scopeID string) perch.FanoutMessage {
	return perch.FanoutMessage{Kind: perch.FanoutNotification, Notification: &perch.Notification{ID: id, Title: id, Scope: perch.Scope{Type: scopeType, ID: scopeID}}}
}

func nop() {}

func received(c *Client) []int64 {
	var ids []int64
	for _, f := range c.Take(nil) {
		ids = append(ids, f.ID)
	}
	return ids
}

func TestDeliverByAudience(t *testing.T) {
	t.Parallel()
	h := New()
	ada := NewClient(perch.Audience{UserID: "ada", OrgID: "a", TeamIDs: []string{"ops"}}, 8, nop)
	bob := NewClient(perch.Audience{UserID: "bob", OrgID: "a"}, 8, nop)
	eve := NewClient(perch.Audience{UserID: "eve", OrgID: "e", TeamIDs: []string{"ops2"}}, 8, nop)
	for _, c := range []*Client{ada, bob, eve} {
		h.Add(c)
	}
	h.Deliver(note("1", perch.ScopeUser, "ada"))
	h.Deliver(note("2", perch.ScopeTeam, "ops"))
	h.Deliver(note("3", perch.ScopeOrg, "a"))
	h.Deliver(note("4", perch.ScopeAll, ""))
	h.Deliver(note("5", perch.ScopeOrg, "nobody"))
	want := map[*Client][]int64{ada: {1, 2, 3, 4}, bob: {3, 4}, eve: {4}}
	for c, ids := range want {
		if got := received(c); !slices.Equal(got, ids) {
			t.Errorf("%s got %v, want %v", c.Audience.UserID, got, ids)
		}
	}
	h.Remove(bob)
	h.Deliver(note("6", perch.ScopeOrg, "a"))
	if got := received(bob); len(got) != 0 {
		t.Errorf("a removed client got %v", got)
	}
	if h.Len() != 2 {
		t.Errorf("Len = %d", h.Len())
	}
}

func TestSlowClientIsDroppedWithoutHoldingUpOthers(t *testing.T) {
	t.Parallel()
	h := New()
	slow := NewClient(perch.Audience{UserID: "slow", OrgID: "a"}, 2, nop)
	fast := NewClient(perch.Audience{UserID: "fast", OrgID: "a"}, 100, nop)
	h.Add(slow)
	h.Add(fast)
	for i := range 10 {
		h.Deliver(note(string(rune('1'+i)), perch.ScopeOrg, "a"))
	}
	if r := slow.Dropped(); r != ReasonSlow {
		t.Fatalf("the slow client was not dropped for being slow: %q", r)
	}
	if got := received(fast); len(got) != 10 {
		t.Fatalf("the fast client got %d frames, want 10", len(got))
	}
}

func TestReadAndGrantsConcernOnlyTheUser(t *testing.T) {
	t.Parallel()
	h := New()
	var calls [2]int
	ada1 := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8, func() { calls[0]++ })
	ada2 := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8, func() { calls[1]++ })
	bob := NewClient(perch.Audience{UserID: "bob", OrgID: "a"}, 8, nop)
	for _, c := range []*Client{ada1, ada2, bob} {
		h.Add(c)
	}
	h.Deliver(perch.FanoutMessage{Kind: perch.FanoutRead, UserID: "ada", IDs: []string{"7"}})
	if calls != [2]int{1, 1} {
		t.Fatalf("notify called %v times, want once for each of Ada's clients", calls)
	}
	for _, c := range []*Client{ada1, ada2} {
		if f := c.Take(nil); len(f) != 1 || string(f[0].Data) != `{"type":"read","data":{"ids":["7"]}}` {
			t.Fatalf("frames %v", f)
		}
	}
	if got := received(bob); len(got) != 0 {
		t.Fatalf("bob got %v", got)
	}
	h.Deliver(perch.FanoutMessage{Kind: perch.FanoutGrants, UserID: "bob"})
	if r := bob.Dropped(); r != ReasonGrants {
		t.Fatalf("bob was not told to reconnect: %q", r)
	}
	if r := ada1.Dropped(); r != "" {
		t.Fatalf("ada was dropped too: %q", r)
	}
}

// TestGrantsDropOnlyClientsOfAnOldAudience: a client that connected after
// the change has the new audience already, and is not made to reconnect.
func TestGrantsDropOnlyClientsOfAnOldAudience(t *testing.T) {
	t.Parallel()
	h := New()
	before := NewClient(perch.Audience{UserID: "bob", OrgID: "a"}, 8, nop)
	after := NewClient(perch.Audience{UserID: "bob", OrgID: "a", TeamIDs: []string{"t2", "t1"}}, 8, nop)
	h.Add(before)
	h.Add(after)
	now := perch.Audience{UserID: "bob", OrgID: "a", TeamIDs: []string{"t1", "t2"}}
	h.Deliver(perch.FanoutMessage{Kind: perch.FanoutGrants, UserID: "bob", Audience: &now})
	if r := before.Dropped(); r != ReasonGrants {
		t.Fatalf("the client of the old audience: dropped %q, want %q", r, ReasonGrants)
	}
	if r := after.Dropped(); r != "" {
		t.Fatalf("the client of the new audience was dropped: %q", r)
	}
}

func TestRevocationDropsOnlyWhatTheCredentialOpened(t *testing.T) {
	t.Parallel()
	h := New()
	client := func(user, session, token string) *Client {
		c := NewClient(perch.Audience{UserID: user, OrgID: "a"}, 8, nop)
		c.SessionID, c.APITokenID = session, token
		h.Add(c)
		return c
	}
	laptop := client("ada", "s1", "")
	phone := client("ada", "s2", "")
	script := client("ada", "", "t1")
	other := client("ada", "", "t2")
	bob := client("bob", "s1", "t1") // ids are only unique per kind; the user must match too

	h.Deliver(perch.FanoutMessage{Kind: perch.FanoutRevoked, UserID: "ada", Sessions: []string{"s1"}, APITokens: []string{"t1"}})
	for _, c := range []*Client{laptop, script} {
		if r := c.Dropped(); r != ReasonRevoked {
			t.Fatalf("client of a revoked credential: dropped %q, want %q", r, ReasonRevoked)
		}
	}
	for _, c := range []*Client{phone, other, bob} {
		if r := c.Dropped(); r != "" {
			t.Fatalf("client of a live credential dropped: %q", r)
		}
	}
	// A message that names no credential ends nothing: "" is no wildcard.
	h.Deliver(perch.FanoutMessage{Kind: perch.FanoutRevoked, UserID: "ada", Sessions: []string{""}, APITokens: []string{""}})
	if r := phone.Dropped(); r != "" {
		t.Fatalf("an empty id dropped a session client: %q", r)
	}
}

func TestNotificationFrame(t *testing.T) {
	t.Parallel()
	f := NotificationFrame(&perch.Notification{ID: "42", Title: "T", Scope: perch.Scope{Type: perch.ScopeAll}})
	if f.ID != 42 || !strings.HasPrefix(string(f.Data), `{"type":"notification","data":{"id":"42",`) {
		t.Fatalf("frame %d %s", f.ID, f.Data)
	}
}

// notify is called when frames start waiting, not for every frame, so that
// a busy client's writer is started once per burst; and once when dropped.
func TestNotifyOncePerBurstAndOnDrop(t *testing.T) {
	t.Parallel()
	h := New()
	calls := 0
	c := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8, func() { calls++ })
	h.Add(c)
	for i := range 3 {
		h.Deliver(note(string(rune('1'+i)), perch.ScopeUser, "ada"))
	}
	if calls != 1 || !c.Pending() {
		t.Fatalf("after a burst: %d calls, pending %v; want 1, true", calls, c.Pending())
	}
	received(c)
	if c.Pending() {
		t.Fatal("pending after Take")
	}
	h.Deliver(note("4", perch.ScopeUser, "ada"))
	h.DropAll(ReasonShutdown)
	h.DropAll(ReasonLost)
	if calls != 3 || c.Dropped() != ReasonShutdown || !c.Pending() {
		t.Fatalf("%d calls, dropped %q; want 3 calls and the first reason", calls, c.Dropped())
	}
	if got := received(c); len(got) != 0 {
		t.Fatalf("a dropped client still has frames %v", got)
	}
}

func TestAFrameIsEncodedOnceForEveryClient(t *testing.T) {
	t.Parallel()
	f := NotificationFrame(&perch.Notification{ID: "7", Title: "Deploy finished"})
	calls := 0
	encode := func(data []byte) []byte {
		calls++
		return append([]byte("wire:"), data...)
	}
	copies := []Frame{f, f, f}
	for _, c := range copies {
		if got, want := string(c.Encoded(encode)), "wire:"+string(f.Data); got != want {
			t.Fatalf("Encoded = %q, want %q", got, want)
		}
	}
	if calls != 1 {
		t.Fatalf("encoded %d times for three copies of one frame, want once", calls)
	}
	if got := string(Frame{Data: []byte("x")}.Encoded(encode)); got != "wire:x" {
		t.Fatalf("a frame made elsewhere: Encoded = %q", got)
	}
}

// TestExpireSaysWhichCredentialEnded: an access token's end invites a
// renewal; an API token's is final, and says so.
func TestExpireSaysWhichCredentialEnded(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		session, token, want string
	}{
		{"s1", "", ReasonExpired},
		{"", "t1", ReasonTokenExpired},
	} {
		cl := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8, nop)
		cl.SessionID, cl.APITokenID = c.session, c.token
		cl.Expire()
		if got := cl.Dropped(); got != c.want {
			t.Errorf("session %q, token %q: dropped %q, want %q", c.session, c.token, got, c.want)
		}
	}
}
