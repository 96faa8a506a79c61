package server

import (
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

const marketplacePath = "/api/v1/marketplace/workflows"

// TestMarketplaceRoundTrip: Ada's organisation publishes a workflow, Bob's
// installs it, Ada republishes, Bob sees the update and takes it, forks
// it, and Ada withdraws it.
func TestMarketplaceRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, bob := a.register("Ada"), a.register("Bob")
		bobMember := a.invite(bob, "Cleo", "member")
		team := expect(t, a.call("POST", "/api/v1/org/teams", ada.Access, map[string]string{"name": "Ops"}), 201).Data()["id"].(string)
		const hook, secret = "https://ada-private.example.com/hook", "ada-signing-secret"
		src := a.mustCreateWorkflow(ada, map[string]any{"name": "Escalate errors", "description": "Page the team", "enabled": true,
			"condition": `event.severity == "error"`,
			"steps": []any{
				map[string]any{"set": map[string]any{"title": `"[prod] " + event.title`}},
				map[string]any{"forward": map[string]any{"url": hook, "secret": secret}},
				map[string]any{"email": map[string]any{"to": team}},
			}})
		id := src["id"].(string)

		// Not listed until published.
		if list := expect(t, a.call("GET", marketplacePath, bob.Access, nil), 200).List(); len(list) != 0 {
			t.Fatalf("listed before publishing: %v", list)
		}
		expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bob.Access, nil), 404)
		pub := expect(t, a.call("POST", workflowsPath+"/"+id+"/publish", ada.Access, nil), 200).Data()
		if pub["published"] != true || pub["version"] != 1.0 {
			t.Fatalf("published = %v", pub)
		}
		res := expect(t, a.call("GET", marketplacePath, bobMember.Access, nil), 200)
		list := res.List()
		if len(list) != 1 || list[0]["id"] != id || list[0]["name"] != "Escalate errors" || list[0]["version"] != 1.0 ||
			list[0]["installs"] != 0.0 || list[0]["author"].(map[string]any)["org_name"] != "Ada's organisation" ||
			list[0]["condition"] != `event.severity == "error"` {
			t.Fatalf("listing = %v", list)
		}
		steps := list[0]["steps"].([]any)
		if len(steps) != 3 || len(steps[1].(map[string]any)["forward"].(map[string]any)) != 0 || len(steps[2].(map[string]any)["email"].(map[string]any)) != 0 {
			t.Fatalf("listed steps = %v", steps)
		}
		for _, private := range []string{hook, secret, team, sealedPrefix, ada.OrgID, ada.ID} {
			if strings.Contains(res.Raw, private) {
				t.Errorf("the listing shows %q: %s", private, res.Raw)
			}
		}

		// Bob's organisation installs it: a disabled copy linked to its
		// source, without Ada's forward URL, secret or team. Members may
		// not install, and Ada cannot install her own.
		expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bobMember.Access, nil), 403)
		expect(t, a.call("POST", workflowsPath+"/"+id+"/install", ada.Access, nil), 409)
		inst := expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bob.Access, nil), 201)
		copied := inst.Data()
		copyID := copied["id"].(string)
		if copied["enabled"] != false || copied["update_available"] != false ||
			copied["source"].(map[string]any)["workflow_id"] != id || copied["source"].(map[string]any)["version"] != 1.0 {
			t.Fatalf("installed = %v", copied)
		}
		for _, private := range []string{hook, secret, team} {
			if strings.Contains(inst.Raw, private) {
				t.Errorf("the install carries %q: %s", private, inst.Raw)
			}
		}
		stored, err := s.Workflow(t.Context(), bob.OrgID, copyID)
		if err != nil || stored.Steps[1].Forward.URL != "" || stored.Steps[1].Forward.Secret != "" || stored.Steps[2].Email.To != "" {
			t.Fatalf("stored install = %+v, %v", stored, err)
		}
		if l := expect(t, a.call("GET", marketplacePath, bob.Access, nil), 200).List(); l[0]["installs"] != 1.0 {
			t.Fatalf("installs = %v", l[0]["installs"])
		}
		// Renaming the install keeps its blanks; enabling it needs them
		// filled in.
		expect(t, a.call("PATCH", workflowsPath+"/"+copyID, bob.Access, map[string]any{"name": "Ours"}), 200)
		res = expect(t, a.call("PATCH", workflowsPath+"/"+copyID, bob.Access, map[string]any{"enabled": true}), 422)
		if f := res.Fields(); f["steps[1].forward.url"] == nil || f["steps[2].email.to"] == nil {
			t.Fatalf("enabling with blanks: %v", f)
		}
		mine := []any{
			map[string]any{"set": map[string]any{"title": `"[prod] " + event.title`}},
			map[string]any{"forward": map[string]any{"url": "https://bob.example.com/in"}},
			map[string]any{"email": map[string]any{"to": "owners"}},
		}
		expect(t, a.call("PATCH", workflowsPath+"/"+copyID, bob.Access, map[string]any{"steps": mine, "enabled": true}), 200)

		// Ada edits and republishes: version 2, an update for Bob.
		expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"condition": `event.severity != "info"`}), 200)
		if l := expect(t, a.call("GET", marketplacePath, bob.Access, nil), 200).List(); l[0]["version"] != 1.0 {
			t.Fatalf("an unpublished edit reached the listing: %v", l[0])
		}
		if again := expect(t, a.call("POST", workflowsPath+"/"+id+"/publish", ada.Access, nil), 200).Data(); again["version"] != 2.0 {
			t.Fatalf("republished = %v", again)
		}
		if got := expect(t, a.call("GET", workflowsPath, bobMember.Access, nil), 200).List(); len(got) != 1 || got[0]["update_available"] != true {
			t.Fatalf("Bob's list after republishing = %v", got)
		}
		// Taking it switches the copy off until Bob switches it on again
		// (TestTakingAMarketplaceUpdateSwitchesTheCopyOff), and brings the
		// source's name over Bob's own ("Ours"), as it brings its condition
		// (TestTakingAMarketplaceUpdateBringsNameAndDescription).
		updated := expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bob.Access, nil), 200).Data()
		if updated["id"] != copyID || updated["update_available"] != false || updated["condition"] != `event.severity != "info"` ||
			updated["source"].(map[string]any)["version"] != 2.0 || updated["name"] != "Escalate errors" || updated["description"] != "Page the team" ||
			updated["enabled"] != false {
			t.Fatalf("updated install = %v", updated)
		}
		kept, _ := s.Workflow(t.Context(), bob.OrgID, copyID)
		if kept.Steps[1].Forward.URL != "https://bob.example.com/in" || kept.Steps[2].Email.To != "owners" {
			t.Fatalf("the update lost Bob's own targets: %+v", kept.Steps)
		}
		if got := expect(t, a.call("GET", workflowsPath+"/"+copyID, bob.Access, nil), 200).Data(); got["update_available"] != false {
			t.Fatalf("after updating = %v", got)
		}

		// A fork is independent: no source, forked_from set.
		fork := expect(t, a.call("POST", workflowsPath+"/"+id+"/fork", bob.Access, nil), 201).Data()
		if fork["source"] != nil || fork["forked_from"] != id || fork["enabled"] != false || fork["update_available"] != false {
			t.Fatalf("fork = %v", fork)
		}
		expect(t, a.call("POST", workflowsPath+"/"+id+"/fork", bobMember.Access, nil), 403)
		expect(t, a.call("POST", workflowsPath+"/nosuchworkflow/fork", bob.Access, nil), 404)

		// Ada withdraws it: gone from the listing, installs refused.
		if w := expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"published": false}), 200).Data(); w["published"] != false {
			t.Fatalf("withdrawn = %v", w)
		}
		if list := expect(t, a.call("GET", marketplacePath, bob.Access, nil), 200).List(); len(list) != 0 {
			t.Fatalf("listed after withdrawing: %v", list)
		}
		expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bob.Access, nil), 404)

		for _, action := range []string{perch.AuditWorkflowPublished, perch.AuditWorkflowInstalled, perch.AuditWorkflowForked, perch.AuditWorkflowWithdrawn} {
			if entries := a.workflowAudits(action); len(entries) == 0 || entries[0].Target.Type != "workflow" {
				t.Errorf("%s: %+v", action, entries)
			}
		}
		if got := len(a.workflowAudits(perch.AuditWorkflowInstalled)); got != 2 {
			t.Errorf("%d install entries, want 2 (an install and an update)", got)
		}
	})
}

// TestTakingAMarketplaceUpdateSwitchesTheCopyOff: an author who adds a
// forward step to a published workflow cannot have it run in the copies
// other organisations run. Installing again takes the new version switched
// off, says so in the answer and the audit entry, and the copy runs on
// nothing until an owner or admin, having filled in the new step, switches
// it on again.
func TestTakingAMarketplaceUpdateSwitchesTheCopyOff(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, bob := a.register("Ada"), a.register("Bob")
		id := a.mustCreateWorkflow(ada, map[string]any{"name": "Tag errors", "enabled": true, "condition": `event.severity == "error"`,
			"steps": []any{map[string]any{"set": map[string]any{"title": `"[err] " + event.title`}}}})["id"].(string)
		expect(t, a.call("POST", workflowsPath+"/"+id+"/publish", ada.Access, nil), 200)
		copyID := expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bob.Access, nil), 201).Data()["id"].(string)
		expect(t, a.call("PATCH", workflowsPath+"/"+copyID, bob.Access, map[string]any{"enabled": true}), 200)
		tok := a.webhookToken(bob, "org", "")
		a.deliver(tok, map[string]any{"title": "first", "severity": "error"})
		if runs := a.runsOf(bob.OrgID, copyID); len(runs) != 1 {
			t.Fatalf("runs before the update = %+v, want the one", runs)
		}

		// Ada adds a forward step and republishes; Bob's admin takes it.
		expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"steps": []any{
			map[string]any{"set": map[string]any{"title": `"[err] " + event.title`}},
			map[string]any{"forward": map[string]any{"url": "https://ada.example.com/collect", "secret": "s"}},
		}}), 200)
		expect(t, a.call("POST", workflowsPath+"/"+id+"/publish", ada.Access, nil), 200)
		got := expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bob.Access, nil), 200).Data()
		if got["id"] != copyID || got["enabled"] != false || got["version"] != 2.0 || len(got["steps"].([]any)) != 2 {
			t.Fatalf("the update taken = %v, want the copy switched off at version 2", got)
		}
		if w := expect(t, a.call("GET", workflowsPath+"/"+copyID, bob.Access, nil), 200).Data(); w["enabled"] != false {
			t.Fatalf("the copy read back = %v", w)
		}
		entries := a.workflowAudits(perch.AuditWorkflowInstalled)
		if len(entries) != 2 || entries[0].Target.ID != copyID || entries[0].Changes["enabled"] != false || entries[0].Changes["updated"] != true {
			t.Fatalf("install entries = %+v, want the update's to say enabled false", entries)
		}
		if _, said := entries[1].Changes["enabled"]; said {
			t.Fatalf("the first install's entry says %v", entries[1].Changes)
		}

		// Switched off, it runs on nothing.
		a.deliver(tok, map[string]any{"title": "second", "severity": "error"})
		if runs := a.runsOf(bob.OrgID, copyID); len(runs) != 1 {
			t.Fatalf("runs after the update = %+v, want still the one", runs)
		}
		if jobs, err := s.ClaimJobs(t.Context(), a.clock.Now().Add(time.Hour), time.Minute, 10); err != nil || len(jobs) != 0 {
			t.Fatalf("jobs queued after the update = %+v, %v; want no forward", jobs, err)
		}
		// Bob reviews it: the forward step wants his own target first.
		res := expect(t, a.call("PATCH", workflowsPath+"/"+copyID, bob.Access, map[string]any{"enabled": true}), 422)
		if res.Fields()["steps[1].forward.url"] == nil {
			t.Fatalf("switching it on with the blank forward: %s", res.Raw)
		}
	})
}

func TestMarketplaceSearchSortAndPages(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, bob := a.register("Ada"), a.register("Bob")
		var ids []string
		for _, name := range []string{"Quiet nights", "Loud errors", "Quiet weekends"} {
			id := a.mustCreateWorkflow(ada, dropErrors(name))["id"].(string)
			a.clock.Advance(1e9)
			expect(t, a.call("POST", workflowsPath+"/"+id+"/publish", ada.Access, nil), 200)
			ids = append(ids, id)
		}
		expect(t, a.call("POST", workflowsPath+"/"+ids[1]+"/install", bob.Access, nil), 201)

		names := func(list []map[string]any) string {
			var out []string
			for _, l := range list {
				out = append(out, l["name"].(string))
			}
			return strings.Join(out, ", ")
		}
		if got := names(expect(t, a.call("GET", marketplacePath, bob.Access, nil), 200).List()); got != "Loud errors, Quiet weekends, Quiet nights" {
			t.Errorf("popular = %s", got)
		}
		if got := names(expect(t, a.call("GET", marketplacePath+"?sort=recent", bob.Access, nil), 200).List()); got != "Quiet weekends, Loud errors, Quiet nights" {
			t.Errorf("recent = %s", got)
		}
		if got := names(expect(t, a.call("GET", marketplacePath+"?q=QUIET", bob.Access, nil), 200).List()); got != "Quiet weekends, Quiet nights" {
			t.Errorf("q=QUIET = %s", got)
		}
		var paged []string
		cursor := ""
		for range 4 {
			res := expect(t, a.call("GET", marketplacePath+"?sort=recent&limit=2&cursor="+cursor, bob.Access, nil), 200)
			paged = append(paged, names(res.List()))
			next, _ := res.Body["next_cursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		if strings.Join(paged, " | ") != "Quiet weekends, Loud errors | Quiet nights" {
			t.Errorf("pages = %v", paged)
		}
		expect(t, a.call("GET", marketplacePath+"?sort=newest", bob.Access, nil), 400)
		expect(t, a.call("GET", marketplacePath+"?cursor=garbage", bob.Access, nil), 400)
		expect(t, a.call("GET", marketplacePath+"?limit=500", bob.Access, nil), 400)
		expect(t, a.call("GET", marketplacePath, "", nil), 401)
	})
}
