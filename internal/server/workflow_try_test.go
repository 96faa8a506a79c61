package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// TestTryingAWorkflowChangesNothing: "try it" answers what a workflow, or
// a draft of it, would do with an event, and records no run, counts no
// stats and keeps no state.
func TestTryingAWorkflowChangesNothing(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		// A notification stored before the workflow existed, which ingest
		// would otherwise have run it on.
		_, raw := a.whToken(ada, perch.SenderInbound, perch.ScopeOrg, "")
		seen := a.whOK("/webhooks/inbound", raw, `{"title":"CPU hot","severity":"error"}`).IDs[0]
		id := a.mustCreateWorkflow(ada, map[string]any{"name": "Prod", "enabled": true, "condition": `event.severity == "error"`,
			"steps": []any{
				map[string]any{"set": map[string]any{"title": `"[prod] " + event.title`, "severity": `"warning"`}},
				map[string]any{"throttle": map[string]any{"key": "event.source", "max": 1, "per": "10m"}},
				map[string]any{"forward": map[string]any{"url": "https://hooks.example.com/x", "secret": "s"}},
				map[string]any{"email": map[string]any{"to": "owners"}},
			}})["id"].(string)
		path := workflowsPath + "/" + id + "/test"
		try := func(acc *account, body any) map[string]any {
			t.Helper()
			return expect(t, a.call("POST", path, acc.Access, body), 200).Data()
		}

		// A member may try it; twice, since a try's throttle counts nothing.
		for range 2 {
			got := try(bob, map[string]any{"event": map[string]any{"title": "Disk full", "severity": "error"}})
			n := got["notification"].(map[string]any)
			if got["matched"] != true || got["status"] != perch.RunDelivered || n["title"] != "[prod] Disk full" || n["severity"] != "warning" ||
				n["tab"] != "inbound" || n["source"] != "inbound" || n["scope"].(map[string]any)["type"] != "org" || n["scope"].(map[string]any)["id"] != ada.OrgID ||
				got["forwards"] != 1.0 || got["emails"] != 1.0 || len(got["steps"].([]any)) != 4 {
				t.Fatalf("try = %v", got)
			}
		}
		// The defaults: an info "Test event", which the condition passes by.
		if got := try(bob, nil); got["matched"] != false || got["status"] != "not_matched" ||
			got["notification"].(map[string]any)["title"] != "Test event" || len(got["steps"].([]any)) != 0 {
			t.Fatalf("a try with no body = %v", got)
		}
		// A draft replaces the saved condition and steps.
		got := try(bob, map[string]any{"condition": `payload.env == "staging"`, "payload": map[string]any{"env": "staging"},
			"steps": []any{map[string]any{"drop": map[string]any{}}}})
		if got["status"] != perch.RunDropped || got["matched"] != true {
			t.Fatalf("a dropping draft = %v", got)
		}
		res := expect(t, a.call("POST", path, bob.Access, map[string]any{"condition": "payload.env ==", "steps": []any{map[string]any{"set": map[string]any{"title": "1"}}}}), 422)
		if f := res.Fields(); f["condition"] == nil || f["steps[0].set.title"] == nil {
			t.Fatalf("a draft that does not compile: %v", f)
		}
		if res := expect(t, a.call("POST", path, bob.Access, map[string]any{"event": map[string]any{"severity": "panic"}}), 422); res.Fields()["event.severity"] == nil {
			t.Fatalf("a bad severity: %s", res.Raw)
		}
		expect(t, a.call("POST", path, bob.Access, map[string]any{"events": map[string]any{}}), 400)

		// A stored notification the caller can see; another's is 404.
		got = try(bob, map[string]any{"notification_id": seen})
		if got["notification"].(map[string]any)["title"] != "[prod] CPU hot" || got["status"] != perch.RunDelivered {
			t.Fatalf("a try on a stored notification = %v", got)
		}
		eve := a.register("Eve")
		_, eveRaw := a.whToken(eve, perch.SenderInbound, perch.ScopeOrg, "")
		hidden := a.whOK("/webhooks/inbound", eveRaw, `{"title":"Eve's","severity":"error"}`).IDs[0]
		for _, nid := range []string{hidden, "999999", "ntf_nonsense"} {
			expect(t, a.call("POST", path, bob.Access, map[string]any{"notification_id": nid}), 404)
		}
		expect(t, a.call("POST", path, eve.Access, nil), 404) // and Eve cannot try Ada's workflow

		// Nothing was recorded.
		runs, _, err := s.WorkflowRuns(t.Context(), ada.OrgID, id, "", perch.Page{})
		if err != nil || len(runs) != 0 {
			t.Fatalf("runs after trying = %v, %v", runs, err)
		}
		w, err := s.Workflow(t.Context(), ada.OrgID, id)
		if err != nil || w.Stats != (perch.WorkflowStats{}) || w.Version != 1 || w.Steps[0].Set["title"] != `"[prod] " + event.title` {
			t.Fatalf("the workflow after trying = %+v, %v", w, err)
		}
	})
}

// TestTryingAPastNotificationSeesItsPayload: a notification that a workflow
// ran on keeps the sender's payload, so "Try it" on it later sees what the
// live run saw; one that came while no workflow was on kept none, and the
// try names what the workflow reads that its sample lacks.
func TestTryingAPastNotificationSeesItsPayload(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		_, raw := a.whToken(ada, perch.SenderInbound, perch.ScopeOrg, "")
		alert := `{"title":"DB down","severity":"error","alert":{"priority":"P1"}}`
		before := a.whOK("/webhooks/inbound", raw, alert).IDs[0]
		id := a.mustCreateWorkflow(ada, map[string]any{"name": "P1s", "enabled": true, "condition": `payload.alert.priority == "P1"`,
			"steps": []any{map[string]any{"set": map[string]any{"title": `"[P1] " + event.title`}}}})["id"].(string)
		live := a.whOK("/webhooks/inbound", raw, alert).IDs[0]
		if h := a.whHistory(ada, ""); h[len(h)-1].ID != live || h[len(h)-1].Title != "[P1] DB down" {
			t.Fatalf("the live run left %+v", h[len(h)-1])
		}
		huge := a.whOK("/webhooks/inbound", raw, `{"title":"Big","alert":{"priority":"P1"},"blob":"`+strings.Repeat("x", store.MaxKeptPayload)+`"}`).IDs[0]
		a.srv.runs.Wait() // payloads are kept after their notifications, in the recorder's batch
		try := func(nid string) map[string]any {
			t.Helper()
			return expect(t, a.call("POST", workflowsPath+"/"+id+"/test", ada.Access, map[string]any{"notification_id": nid}), 200).Data()
		}

		got := try(live)
		if got["matched"] != true || got["payload_source"] != "kept" || len(got["missing"].([]any)) != 0 ||
			got["payload"].(map[string]any)["alert"].(map[string]any)["priority"] != "P1" {
			t.Fatalf("a try on the notification the workflow ran on = %v", got)
		}
		for name, nid := range map[string]string{"before the workflow": before, "larger than is kept": huge} {
			got := try(nid)
			// The condition fails to read what is not there.
			if got["matched"] != false || got["status"] != perch.RunFailed || got["payload_source"] != "none" ||
				!reflect.DeepEqual(got["missing"], []any{"payload.alert.priority"}) {
				t.Errorf("a try on a notification %s = %v", name, got)
			}
		}
		// A payload given with the try stands in for the kept one.
		got = expect(t, a.call("POST", workflowsPath+"/"+id+"/test", ada.Access, map[string]any{"notification_id": live, "payload": map[string]any{"alert": map[string]any{}}}), 200).Data()
		if got["matched"] != false || got["payload_source"] != "request" || !reflect.DeepEqual(got["missing"], []any{"payload.alert.priority"}) {
			t.Fatalf("a try with its own payload = %v", got)
		}
	})
}
