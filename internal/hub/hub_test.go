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

func received(c *Client) []int64 {
	var ids []int64
	for _, f := range c.Take(nil) {
		ids = append(ids, f.ID)
	}
	return ids
}

func TestDeliverByAudience(t *testing.T) {
	h := New()
	ada := NewClient(perch.Audience{UserID: "ada", OrgID: "a", TeamIDs: []string{"ops"}}, 8)
	bob := NewClient(perch.Audience{UserID: "bob", OrgID: "a"}, 8)
	eve := NewClient(perch.Audience{UserID: "eve", OrgID: "e", TeamIDs: []string{"ops2"}}, 8)
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
	h := New()
	slow := NewClient(perch.Audience{UserID: "slow", OrgID: "a"}, 2)
	fast := NewClient(perch.Audience{UserID: "fast", OrgID: "a"}, 100)
	h.Add(slow)
	h.Add(fast)
	for i := range 10 {
		h.Deliver(note(string(rune('1'+i)), perch.ScopeOrg, "a"))
	}
	select {
	case <-slow.Gone:
		if slow.Reason != ReasonSlow {
			t.Fatalf("reason %q", slow.Reason)
		}
	default:
		t.Fatal("the slow client was not dropped")
	}
	if got := received(fast); len(got) != 10 {
		t.Fatalf("the fast client got %d frames, want 10", len(got))
	}
}

func TestReadAndGrantsConcernOnlyTheUser(t *testing.T) {
	h := New()
	ada1 := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8)
	ada2 := NewClient(perch.Audience{UserID: "ada", OrgID: "a"}, 8)
	bob := NewClient(perch.Audience{UserID: "bob", OrgID: "a"}, 8)
	for _, c := range []*Client{ada1, ada2, bob} {
		h.Add(c)
	}
	h.Deliver(perch.FanoutMessage{Kind: perch.FanoutRead, UserID: "ada", IDs: []string{"7"}})
	for _, c := range []*Client{ada1, ada2} {
		<-c.Wake()
		if f := c.Take(nil); len(f) != 1 || string(f[0].Data) != `{"type":"read","data":{"ids":["7"]}}` {
			t.Fatalf("frames %v", f)
		}
	}
	if got := received(bob); len(got) != 0 {
		t.Fatalf("bob got %v", got)
	}
	h.Deliver(perch.FanoutMessage{Kind: perch.FanoutGrants, UserID: "bob"})
	select {
	case <-bob.Gone:
	default:
		t.Fatal("bob was not told to reconnect")
	}
	select {
	case <-ada1.Gone:
		t.Fatal("ada was dropped too")
	default:
	}
}

func TestNotificationFrame(t *testing.T) {
	f := NotificationFrame(&perch.Notification{ID: "42", Title: "T", Scope: perch.Scope{Type: perch.ScopeAll}})
	if f.ID != 42 || !strings.HasPrefix(string(f.Data), `{"type":"notification","data":{"id":"42",`) {
		t.Fatalf("frame %d %s", f.ID, f.Data)
	}
}
