package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// whMarkRead posts body to /api/v1/notifications/read and returns the ids
// the answer says were marked.
func (a *api) whMarkRead(acc *account, body any) []string {
	a.t.Helper()
	res := expect(a.t, a.call("POST", "/api/v1/notifications/read", acc.Access, body), 200)
	var out struct {
		Data struct {
			IDs []string `json:"ids"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(res.Raw), &out); err != nil {
		a.t.Fatal(err)
	}
	if out.Data.IDs == nil {
		a.t.Fatalf("answer has no ids list: %s", res.Raw)
	}
	return out.Data.IDs
}

func whReadIDs(notes []whNote) []string {
	var ids []string
	for _, n := range notes {
		if n.Read {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

func TestNotificationHistoryPages(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		if hist := a.whHistory(ada, ""); len(hist) != 0 {
			t.Fatalf("a new user has %d notifications", len(hist))
		}
		_, raw := a.whToken(ada, "inbound", "user", "")
		var ids []string
		for i := range 5 {
			ids = append(ids, a.whOK("/webhooks/inbound", raw, fmt.Sprintf(`{"title":"n%d"}`, i)).IDs[0])
		}
		cases := []struct {
			query string
			want  []string
		}{
			{"", ids},
			{"?limit=2", ids[3:]}, // the newest page, still oldest first
			{"?limit=500", ids},   // the maximum
			{"?since=" + ids[0], ids[1:]},
			{"?since=" + ids[0] + "&limit=2", ids[1:3]}, // the oldest after since
			{"?since=" + ids[2] + "&limit=2", ids[3:5]},
			{"?since=" + ids[4], nil},
			{"?since=0", ids},
		}
		for _, c := range cases {
			if got := whIDs(a.whHistory(ada, c.query)); !slices.Equal(got, c.want) {
				t.Errorf("%q: ids = %v, want %v", c.query, got, c.want)
			}
		}
		hist := a.whHistory(ada, "?limit=1")
		if len(hist) != 1 || hist[0].Title != "n4" {
			t.Fatalf("newest = %+v", hist)
		}
		// Every member of a notification is there.
		res := expect(t, a.call("GET", "/api/v1/notifications?limit=1", ada.Access, nil), 200)
		want := []string{"created_at", "id", "message", "priority", "read", "scope", "severity", "source", "tab", "title", "url"}
		if got := whKeys(res.List()[0]); !slices.Equal(got, want) {
			t.Fatalf("notification keys = %v, want %v", got, want)
		}
		for _, q := range []string{"?limit=0", "?limit=501", "?limit=-1", "?limit=ten", "?since=abc", "?since=-3"} {
			expect(t, a.call("GET", "/api/v1/notifications"+q, ada.Access, nil), 400)
		}
		expect(t, a.call("GET", "/api/v1/notifications", "", nil), 401)
	})
}

func TestNotificationsMarkRead(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		eve := a.register("Eve") // another organisation
		_, mine := a.whToken(ada, "inbound", "user", "")
		_, org := a.whToken(ada, "inbound", "org", "")
		_, eves := a.whToken(eve, "inbound", "user", "")
		n1 := a.whOK("/webhooks/inbound", mine, `{"title":"one"}`).IDs[0]
		n2 := a.whOK("/webhooks/inbound", org, `{"title":"two"}`).IDs[0]
		n3 := a.whOK("/webhooks/inbound", mine, `{"title":"three"}`).IDs[0]
		e1 := a.whOK("/webhooks/inbound", eves, `{"title":"Eve's"}`).IDs[0]

		if got := whReadIDs(a.whHistory(ada, "")); len(got) != 0 {
			t.Fatalf("read before anything was marked: %v", got)
		}
		if got := a.whMarkRead(ada, map[string]any{"ids": []string{n1, n2}}); !slices.Equal(got, []string{n1, n2}) {
			t.Fatalf("marked %v, want %v", got, []string{n1, n2})
		}
		if got := whReadIDs(a.whHistory(ada, "")); !slices.Equal(got, []string{n1, n2}) {
			t.Fatalf("read in history = %v", got)
		}
		// Marking again marks nothing new.
		if got := a.whMarkRead(ada, map[string]any{"ids": []string{n1}}); len(got) != 0 {
			t.Fatalf("marked again: %v", got)
		}
		// Read state is per user: Bob still has the organisation's notification unread.
		if hist := a.whHistory(bob, ""); len(hist) != 1 || hist[0].ID != n2 || hist[0].Read {
			t.Fatalf("Bob's history = %+v", hist)
		}
		// Ids the user cannot see are passed over, and stay unread for those who can.
		if got := a.whMarkRead(eve, map[string]any{"ids": []string{n3, n2, "999999"}}); len(got) != 0 {
			t.Fatalf("Eve marked %v", got)
		}
		if got := a.whMarkRead(bob, map[string]any{"ids": []string{n1, n2, n3, e1}}); !slices.Equal(got, []string{n2}) {
			t.Fatalf("Bob marked %v, want only %s", got, n2)
		}
		if got := whReadIDs(a.whHistory(ada, "")); !slices.Equal(got, []string{n1, n2}) {
			t.Fatalf("Ada's read after others marked = %v", got)
		}
		if got := whReadIDs(a.whHistory(eve, "")); len(got) != 0 {
			t.Fatalf("Eve's read = %v", got)
		}
		// all: everything still unread that the user can see.
		if got := a.whMarkRead(ada, map[string]any{"all": true}); !slices.Equal(got, []string{n3}) {
			t.Fatalf("all marked %v, want %v", got, []string{n3})
		}
		if got := whReadIDs(a.whHistory(ada, "")); !slices.Equal(got, []string{n1, n2, n3}) {
			t.Fatalf("read after all = %v", got)
		}
		if got := a.whMarkRead(ada, map[string]any{"all": true}); len(got) != 0 {
			t.Fatalf("all again marked %v", got)
		}
		if got := whReadIDs(a.whHistory(eve, "")); len(got) != 0 {
			t.Fatalf("Ada's all reached Eve: %v", got)
		}

		for _, c := range []struct {
			name   string
			body   any
			status int
		}{
			{"bad id", map[string]any{"ids": []string{"abc"}}, 400},
			{"negative id", map[string]any{"ids": []string{"-1"}}, 400},
			{"ids not strings", `{"ids": [1, 2]}`, 400},
			{"not JSON", `{"ids": `, 400},
			{"empty object", map[string]any{}, 422},
			{"empty ids", map[string]any{"ids": []string{}}, 422},
			{"all false", map[string]any{"all": false}, 422},
			{"too many ids", map[string]any{"ids": slices.Repeat([]string{n1}, 501)}, 400},
		} {
			t.Run(c.name, func(t *testing.T) {
				res := expect(t, a.call("POST", "/api/v1/notifications/read", ada.Access, c.body), c.status)
				if c.status == 422 {
					if _, ok := res.Fields()["ids"]; !ok {
						t.Fatalf("fields = %v", res.Fields())
					}
				}
			})
		}
		expect(t, a.call("POST", "/api/v1/notifications/read", "", map[string]any{"all": true}), 401)
	})
}

// TestBroadcastsAreForTheAccountsOfTheirTime: a token-less broadcast reaches
// everyone there when it is sent; an account made later does not find
// strangers' old broadcasts in its history or replay, nor mark them read.
func TestBroadcastsAreForTheAccountsOfTheirTime(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ts := a.live()
		ada := a.register("Ada")
		old := a.post("", "before Bob")
		bob := a.register("Bob")
		fresh := a.post("", "after Bob")

		titles := func(notes []whNote) []string {
			var out []string
			for _, n := range notes {
				out = append(out, n.Title)
			}
			return out
		}
		if got := titles(a.whHistory(ada, "")); !slices.Equal(got, []string{"before Bob", "after Bob"}) {
			t.Fatalf("Ada's history: %q", got)
		}
		for _, q := range []string{"", "?since=0"} {
			if got := titles(a.whHistory(bob, q)); !slices.Equal(got, []string{"after Bob"}) {
				t.Fatalf("Bob's history%s: %q, want only what was broadcast once he was there", q, got)
			}
		}
		c := dial(t, ts, bob.Access, "0")
		if n := c.next().notification(t); n.ID != fresh {
			t.Fatalf("Bob's replay began with %v", n)
		}
		if replayed, _ := c.ready(); replayed != 1 {
			t.Fatalf("Bob's replay: %d notifications, want 1", replayed)
		}
		if got := a.whMarkRead(bob, map[string]any{"ids": []string{old, fresh}}); !slices.Equal(got, []string{fresh}) {
			t.Fatalf("Bob marked %v read, want only %s", got, fresh)
		}
	})
}
