package web_test

import (
	"fmt"
	"html"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
	"github.com/perch-dev/perch/internal/testenv"
)

// The Workflows and Marketplace pages, over HTTP: an owner writes a
// workflow in the editor (its problems shown by the fields they name),
// switches it, tries it and reads its runs; publishes it; another
// organisation installs and forks it; a member reads but changes nothing.

// featuresOn turns feature flags on for everyone, as a platform admin does.
func featuresOn(t *testing.T, s *store.Store, keys ...string) {
	t.Helper()
	on := true
	for _, k := range keys {
		if _, _, err := s.UpdateFeatureFlag(t.Context(), k, perch.FeatureUpdate{Enabled: &on}); err != nil {
			t.Fatal(err)
		}
	}
}

// invited registers name into by's organisation with role, through an
// invitation's link, and signs the new member in to the dashboard.
func (a *site) invited(t *testing.T, by *account, name, role string) (*account, *browser) {
	t.Helper()
	a.clock.Advance(time.Second)
	inv := expect(t, a.call("POST", "/api/v1/org/invitations", by.Access, map[string]string{"email": emailFor(name), "role": role}), 201).Data()
	link, err := url.Parse(inv["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	res := expect(t, a.call("POST", "/api/v1/auth/register", "", map[string]string{"name": name, "email": emailFor(name),
		"password": goodPassword, "invitation_token": link.Query().Get("token")}), 201).Data()
	u := res["user"].(map[string]any)
	acct := &account{ID: u["id"].(string), Email: emailFor(name), OrgID: u["org_id"].(string), Access: res["access_token"].(string)}
	return acct, signedIn(t, a, name)
}

// workflowID is the id at the end of an editor's address.
func workflowID(t *testing.T, location string) string {
	t.Helper()
	id, ok := strings.CutPrefix(location, "/org/workflows/")
	if !ok || id == "" || strings.Contains(id, "/") {
		t.Fatalf("%q is not a workflow's editor", location)
	}
	return id
}

func TestDashboardWorkflows(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newSite(t, s)
		featuresOn(t, s, "workflows", "marketplace")
		olive := a.register("Olive")
		b := signedIn(t, a, "Olive")

		b.get("/org/workflows").expect(t, 200, "").contains(t, "<h1>Workflows</h1>",
			`<a href="/org/workflows" aria-current="page">Workflows</a>`, `<a href="/marketplace">Marketplace</a>`,
			"No workflows yet.", `id="new-workflow"`)
		b.get("/org/workflows/new").expect(t, 200, "").contains(t, "<h1>New workflow</h1>", `action="/org/workflows"`,
			"Save the workflow first")

		// A condition that does not compile: the API's problem right under
		// the condition, and everything typed kept.
		p := b.post("/org/workflows", url.Values{"name": {"Quiet nights"}, "description": {"Fewer pages at night"},
			"condition": {"event.severity =="}, "steps": {`[{"drop": {}}]`}, "enabled": {"on"}}).expect(t, 422, "")
		p.contains(t, `event.severity ==</textarea>`+"\n    "+`<div class="problem compiler" id="condition-problem">`,
			`value="Quiet nights"`, `value="Fewer pages at night"`, `[{&#34;drop&#34;: {}}]</textarea>`)
		// A step's problem by the steps box, with its path; a list that is
		// not JSON is caught before the API is asked.
		b.post("/org/workflows", url.Values{"name": {"Quiet nights"}, "steps": {`[{"set": {"title": "event.nope"}}]`}}).expect(t, 422, "").
			contains(t, `<ul class="problem plain compiler" id="steps-problems"><li><code>steps[0].set.title</code>`)
		b.post("/org/workflows", url.Values{"name": {"Quiet nights"}, "steps": {`[{"drop": {}}`}}).expect(t, 422, "").
			contains(t, `<li><code>steps</code> is not JSON`, `[{&#34;drop&#34;: {}}</textarea>`)
		if list := expect(t, a.call("GET", "/api/v1/org/workflows", olive.Access, nil), 200).List(); len(list) != 0 {
			t.Fatalf("refused forms made workflows: %v", list)
		}

		// A valid one: saved, opened, listed, switched off and on.
		p = b.post("/org/workflows", url.Values{"name": {"Tag errors"}, "condition": {`event.severity == "error"`},
			"steps": {`[{"set": {"title": "'[prod] ' + event.title"}}]`}, "enabled": {"on"}}).expect(t, 303, "")
		id := workflowID(t, p.Location)
		b.get(p.Location).expect(t, 200, "").contains(t, "The workflow is saved.", "<h1>Tag errors</h1>", `id="try"`,
			`&#34;title&#34;: &#34;&#39;[prod] &#39; &#43; event.title&#34;`)
		row := `<tr id="workflow-` + id + `">`
		b.get("/org/workflows").expect(t, 200, "").contains(t, row, "Tag errors", `aria-checked="true"`, "0 / 0 / 0")
		b.post("/org/workflows/"+id+"/enabled", url.Values{"enabled": {"false"}}).expect(t, 303, "/org/workflows")
		b.get("/org/workflows").expect(t, 200, "").contains(t, "The workflow is off.", `aria-checked="false"`)
		if on := expect(t, a.call("GET", "/api/v1/org/workflows/"+id, olive.Access, nil), 200).Data()["enabled"]; on != false {
			t.Fatalf("switched off, the API says enabled %v", on)
		}
		b.post("/org/workflows/"+id+"/enabled", url.Values{"enabled": {"true"}}).expect(t, 303, "/org/workflows")

		// Try it with a draft that drops: "dropped", and the saved
		// workflow is as it was.
		p = b.post("/org/workflows/"+id+"/test", url.Values{"name": {"Tag errors"}, "condition": {""}, "steps": {`[{"drop": {}}]`},
			"try_title": {"Disk full"}, "try_severity": {"error"}, "try_source": {"inbound"}}).expect(t, 200, "")
		p.contains(t, `id="try-status">dropped</span>`, `<td>1. drop</td>`, `value="Disk full"`, `[{&#34;drop&#34;: {}}]</textarea>`)
		// The draft as saved, on the sample: delivered, retitled.
		b.post("/org/workflows/"+id+"/test", url.Values{"condition": {`event.severity == "error"`}, "steps": {`[{"set": {"title": "'[prod] ' + event.title"}}]`},
			"try_title": {"Disk full"}, "try_severity": {"error"}}).expect(t, 200, "").
			contains(t, `id="try-status">delivered</span>`, "<strong>[prod] Disk full</strong>")
		if steps := expect(t, a.call("GET", "/api/v1/org/workflows/"+id, olive.Access, nil), 200).Data()["steps"].([]any); len(steps) != 1 || steps[0].(map[string]any)["set"] == nil {
			t.Fatalf("trying changed the saved steps: %v", steps)
		}

		// Or on one of the last notifications, chosen from the list (one
		// that came while the workflow was off, so ingest left it as sent).
		b.post("/org/workflows/"+id+"/enabled", url.Values{"enabled": {"false"}}).expect(t, 303, "/org/workflows")
		hook := expect(t, a.call("POST", "/api/v1/webhook-tokens", olive.Access, map[string]string{"label": "CI", "sender": "inbound", "scope": "org"}), 201).Data()
		expect(t, a.call("POST", "/webhooks/inbound?token="+url.QueryEscape(hook["raw_token"].(string)), "",
			map[string]string{"title": "Deploy failed", "severity": "error", "tab": "Deploys"}), 200)
		stored := waitForNotification(t, a, olive)
		b.get("/org/workflows/"+id).expect(t, 200, "").contains(t, `<option value="`+stored+`">Deploy failed (error, Deploys)</option>`)
		b.post("/org/workflows/"+id+"/test", url.Values{"condition": {`event.severity == "error"`}, "steps": {`[{"set": {"title": "'[prod] ' + event.title"}}]`},
			"try_notification": {stored}}).expect(t, 200, "").
			contains(t, `id="try-status">delivered</span>`, "<strong>[prod] Deploy failed</strong>", `<option value="`+stored+`" selected>`)
		b.post("/org/workflows/"+id+"/enabled", url.Values{"enabled": {"true"}}).expect(t, 303, "/org/workflows")

		// Its runs, as the engine records them: newest first, filtered by
		// status, and older ones a page further.
		for i, status := range []string{perch.RunDelivered, perch.RunDropped, perch.RunDelivered} {
			a.clock.Advance(time.Second)
			run := &perch.WorkflowRun{WorkflowID: id, WorkflowVersion: 1, NotificationID: fmt.Sprintf("n%d", i), Status: status,
				Steps: []perch.RunStep{{Type: "set", Status: "ok", Detail: fmt.Sprintf("run %d", i)}}}
			if err := s.AddWorkflowRuns(t.Context(), olive.OrgID, []*perch.WorkflowRun{run}); err != nil {
				t.Fatal(err)
			}
		}
		runs := b.get("/org/workflows/"+id+"/runs?limit=2").expect(t, 200, "")
		runs.contains(t, "<h1>Runs of Tag errors</h1>", `<span class="badge run-delivered">delivered</span>`, "set: ok — run 2", "run 1").
			lacks(t, "run 0")
		older := b.get(runs.link(t, "Older")).expect(t, 200, "")
		older.contains(t, "run 0", `>Newest</a>`).lacks(t, "run 2", `id="older"`)
		b.get("/org/workflows/"+id+"/runs?status=dropped").expect(t, 200, "").contains(t, "run 1", `<option value="dropped" selected>`).lacks(t, "run 0", "run 2")
		b.get("/org/workflows/"+id+"/runs?status=throttled").expect(t, 200, "").contains(t, "No runs that are throttled.")

		// Published, then installed and forked by another organisation.
		b.post("/org/workflows/"+id+"/publish", nil).expect(t, 303, "/org/workflows")
		b.get("/org/workflows").expect(t, 200, "").contains(t, "The workflow is published", `action="/org/workflows/`+id+`/withdraw"`)
		tess := a.register("Tess")
		other := signedIn(t, a, "Tess")
		author := expect(t, a.call("GET", "/api/v1/org", olive.Access, nil), 200).Data()["name"].(string)
		market := other.get("/marketplace").expect(t, 200, "")
		market.contains(t, "<h1>Marketplace</h1>", `id="listing-`+id+`"`, "Tag errors", "by "+html.EscapeString(author), "0 installs",
			`action="/marketplace/`+id+`/install"`, `action="/marketplace/`+id+`/fork"`)
		other.get("/marketplace?q=nothing+like+it").expect(t, 200, "").contains(t, "No workflows match").lacks(t, `id="listing-`+id+`"`)
		// Installed: back on the marketplace, which says the copy is off,
		// with a switch to turn it on.
		p = other.post("/marketplace/"+id+"/install", nil).expect(t, 303, "")
		installed, ok := strings.CutPrefix(p.Location, "/marketplace?installed=")
		if !ok || installed == "" {
			t.Fatalf("after installing, the browser goes to %q", p.Location)
		}
		other.get(p.Location).expect(t, 200, "").contains(t, `id="installed"`, "“Tag errors” is installed, and off",
			`action="/org/workflows/`+installed+`/enabled"`, `id="switch-on"`, `href="/org/workflows/`+installed+`"`)
		other.get("/org/workflows/"+installed).expect(t, 200, "").contains(t, "installed from the marketplace")
		p = other.post("/marketplace/"+id+"/fork", nil).expect(t, 303, "")
		forked := workflowID(t, p.Location)
		if forked == installed || forked == id {
			t.Fatalf("the fork %s is not a workflow of its own (installed %s, original %s)", forked, installed, id)
		}
		other.get("/org/workflows").expect(t, 200, "").contains(t, `<tr id="workflow-`+installed+`">`, `<tr id="workflow-`+forked+`">`,
			"Installed from the marketplace", "Forked from the marketplace").lacks(t, "an update is available")
		other.get("/marketplace").expect(t, 200, "").contains(t, "1 install ·") // a fork is no install

		// A new version published: the install offers its update.
		b.post("/org/workflows/"+id, url.Values{"name": {"Tag errors"}, "condition": {`event.severity == "error"`},
			"steps": {`[{"set": {"title": "'[production] ' + event.title"}}]`}, "enabled": {"on"}}).expect(t, 303, "/org/workflows/"+id)
		b.post("/org/workflows/"+id+"/publish", nil).expect(t, 303, "/org/workflows")
		p = other.get("/org/workflows").expect(t, 200, "").contains(t, "an update is available", `action="/org/workflows/`+installed+`/update"`)
		other.post("/org/workflows/"+installed+"/update", url.Values{"source": {id}}).expect(t, 303, "/org/workflows")
		other.get("/org/workflows").expect(t, 200, "").contains(t, "updated to the marketplace", "and is off").lacks(t, "an update is available")
		if steps := expect(t, a.call("GET", "/api/v1/org/workflows/"+installed, tess.Access, nil), 200).Data()["steps"].([]any); !strings.Contains(
			steps[0].(map[string]any)["set"].(map[string]any)["title"].(string), "[production]") {
			t.Fatalf("after the update the install's steps are %v", steps)
		}

		// A member reads, and may try, but sees no way to change anything;
		// a change sent anyway shows the API's refusal.
		_, member := a.invited(t, olive, "Mel", "member")
		member.get("/org/workflows").expect(t, 200, "").contains(t, row, `<span class="badge on">On</span>`).
			lacks(t, `id="new-workflow"`, `/enabled"`, `/delete"`, `/publish"`, `/withdraw"`)
		member.get("/org/workflows/"+id).expect(t, 200, "").contains(t, `id="read-only"`, `id="try"`).lacks(t, `id="save"`)
		member.get("/marketplace").expect(t, 200, "").contains(t, `id="members-note"`).lacks(t, `/install"`, `/fork"`)
		member.post("/org/workflows/"+id+"/delete", nil).expect(t, 403, "").contains(t, `role="alert"`, row)
		member.post("/org/workflows/"+id, url.Values{"name": {"Mine now"}, "steps": {"[]"}}).expect(t, 403, "").contains(t, `value="Mine now"`)
		member.post("/marketplace/"+id+"/install", nil).expect(t, 403, "").contains(t, `role="alert"`)
		b.get("/org/workflows").expect(t, 200, "").contains(t, row)

		// The owner deletes it.
		b.post("/org/workflows/"+id+"/delete", nil).expect(t, 303, "/org/workflows")
		b.get("/org/workflows").expect(t, 200, "").contains(t, "The workflow is deleted.").lacks(t, row)
	})
}

// TestDashboardWorkflowsOff: with the features off, the pages say so
// instead of failing, and the navigation offers neither.
func TestDashboardWorkflowsOff(t *testing.T) {
	t.Parallel()
	s := storetest.New(t, store.SQLite)
	a := newSite(t, s)
	off := false
	for _, k := range []string{"workflows", "marketplace"} {
		if _, _, err := s.UpdateFeatureFlag(t.Context(), k, perch.FeatureUpdate{Enabled: &off}); err != nil {
			t.Fatal(err)
		}
	}
	a.register("Olive")
	b := signedIn(t, a, "Olive")
	b.get("/org/workflows").expect(t, 200, "").contains(t, `id="feature-off"`, "Workflows are not on").lacks(t, `id="new-workflow"`)
	b.get("/org/workflows/new").expect(t, 200, "").contains(t, `id="feature-off"`).lacks(t, `id="editor"`)
	b.get("/marketplace").expect(t, 200, "").contains(t, `id="feature-off"`, "The marketplace is not on")
	b.get("/notifications").expect(t, 200, "").lacks(t, `href="/org/workflows"`, `href="/marketplace"`)
}

// waitForNotification waits for by's first notification, which the ingest
// writer stores after the receiver has answered, and returns its id.
func waitForNotification(t *testing.T, a *site, by *account) string {
	t.Helper()
	var id string
	testenv.Eventually(t, browserStepTimeout, func() bool {
		list := expect(t, a.call("GET", "/api/v1/notifications", by.Access, nil), 200).List()
		if len(list) > 0 {
			id = list[0]["id"].(string)
		}
		return id != ""
	}, "the notification was never stored")
	return id
}
