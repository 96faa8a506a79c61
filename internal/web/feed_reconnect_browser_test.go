package web_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestFeedCatchesUpAfterAReconnect: a user with no notification yet is
// added to a team (the server makes the page reconnect, for the new
// audience) and a notification for the team arrives while the page is away:
// the page replays it when it is back. It used to reconnect without since,
// having none, and lose it.
func TestFeedCatchesUpAfterAReconnect(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	b := newChrome(t, base)
	const email, password = "ada.lovelace@example.com", "correct horse battery"
	b.signUp("Ada Lovelace", email, password)
	b.open("/notifications", ".live")
	b.waitLive()
	login := expect(t, a.call("POST", "/api/v1/auth/login", "", map[string]string{"email": email, "password": password}), 200).Data()
	access := login["access_token"].(string)
	me := login["user"].(map[string]any)["id"].(string)
	team := expect(t, a.call("POST", "/api/v1/org/teams", access, map[string]string{"name": "On call"}), 201).Data()["id"].(string)
	expect(t, a.call("PUT", "/api/v1/org/teams/"+team+"/members/"+me, access, nil), 204)
	url := expect(t, a.call("POST", "/api/v1/webhook-tokens", access, map[string]string{"label": "On call", "sender": "inbound", "scope": "team", "team_id": team}), 201).Data()["url"].(string)
	body, _ := json.Marshal(map[string]string{"title": "For the team"})
	if res := postJSON(t, url, string(body)); res.StatusCode != http.StatusOK {
		t.Fatal(res.StatusCode)
	}
	b.waitFor("the team's notification", `document.querySelectorAll("ol.feed li").length === 1`)
	b.waitLive()
	checkConsole(t, b)
}
