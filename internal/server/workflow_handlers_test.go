package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

const workflowsPath = "/api/v1/org/workflows"

// dropErrors is a small valid workflow: drop error notifications.
func dropErrors(name string) map[string]any {
	return map[string]any{"name": name, "description": "Drops error notifications", "enabled": true,
		"condition": `event.severity == "error"`, "steps": []any{map[string]any{"drop": map[string]any{}}}}
}

// mustCreateWorkflow makes a workflow as acc and answers it.
func (a *api) mustCreateWorkflow(acc *account, body any) map[string]any {
	a.t.Helper()
	return expect(a.t, a.call("POST", workflowsPath, acc.Access, body), 201).Data()
}

// workflowAudits are the audit entries of action, newest first.
func (a *api) workflowAudits(action string) []*perch.AuditEntry {
	a.t.Helper()
	entries, _, err := a.store.AuditLog(a.t.Context(), perch.AuditFilter{Action: action})
	if err != nil {
		a.t.Fatal(err)
	}
	return entries
}

func TestWorkflowsCreateReadUpdateDelete(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")

		made := a.mustCreateWorkflow(ada, dropErrors("Quiet errors"))
		id := made["id"].(string)
		if made["name"] != "Quiet errors" || made["enabled"] != true || made["version"] != 1.0 || made["published"] != false ||
			made["source"] != nil || made["forked_from"] != nil || made["update_available"] != false || made["created_by"] != ada.ID {
			t.Fatalf("made = %v", made)
		}
		// Members read; the list is newest first.
		a.clock.Advance(time.Second)
		second := a.mustCreateWorkflow(ada, dropErrors("Second"))
		list := expect(t, a.call("GET", workflowsPath, bob.Access, nil), 200).List()
		if len(list) != 2 || list[0]["id"] != second["id"] || list[1]["id"] != id {
			t.Fatalf("list = %v", list)
		}
		if got := expect(t, a.call("GET", workflowsPath+"/"+id, bob.Access, nil), 200).Data(); got["name"] != "Quiet errors" {
			t.Fatalf("get = %v", got)
		}

		// Owners and admins write; members may not.
		for _, c := range []struct{ method, path string }{{"POST", workflowsPath}, {"PATCH", workflowsPath + "/" + id}, {"DELETE", workflowsPath + "/" + id}} {
			if res := expect(t, a.call(c.method, c.path, bob.Access, dropErrors("Mine")), 403); res.ErrorCode() != perch.EFORBIDDEN {
				t.Errorf("%s as a member: %s", c.method, res.Raw)
			}
		}

		// A change of condition bumps the version; a rename does not.
		patched := expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"name": "Calm", "enabled": false}), 200).Data()
		if patched["name"] != "Calm" || patched["enabled"] != false || patched["version"] != 1.0 {
			t.Fatalf("renamed = %v", patched)
		}
		patched = expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"condition": `event.severity == "warning"`}), 200).Data()
		if patched["condition"] != `event.severity == "warning"` || patched["version"] != 2.0 {
			t.Fatalf("new condition = %v", patched)
		}

		expect(t, a.call("DELETE", workflowsPath+"/"+id, ada.Access, nil), 204)
		expect(t, a.call("GET", workflowsPath+"/"+id, ada.Access, nil), 404)
		expect(t, a.call("DELETE", workflowsPath+"/"+id, ada.Access, nil), 404)

		// Another organisation sees none of it.
		eve := a.register("Eve")
		if list := expect(t, a.call("GET", workflowsPath, eve.Access, nil), 200).List(); len(list) != 0 {
			t.Fatalf("Eve sees %v", list)
		}
		expect(t, a.call("GET", workflowsPath+"/"+second["id"].(string), eve.Access, nil), 404)
		expect(t, a.call("PATCH", workflowsPath+"/"+second["id"].(string), eve.Access, map[string]any{"name": "Mine"}), 404)

		// Every change is in the audit log.
		for _, action := range []string{perch.AuditWorkflowCreated, perch.AuditWorkflowUpdated, perch.AuditWorkflowDeleted} {
			entries := a.workflowAudits(action)
			if len(entries) == 0 || entries[0].Target.Type != "workflow" || entries[0].Actor.ID != ada.ID || entries[0].OrgID != ada.OrgID {
				t.Errorf("%s: %+v", action, entries)
			}
		}
		if got := len(a.workflowAudits(perch.AuditWorkflowUpdated)); got != 2 {
			t.Errorf("%d update entries, want 2", got)
		}
	})
}

func TestWorkflowsRefuseBadInput(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		id := a.mustCreateWorkflow(ada, dropErrors("Quiet"))["id"].(string)
		outsider := a.register("Eve")
		eveTeam := expect(t, a.call("POST", "/api/v1/org/teams", outsider.Access, map[string]string{"name": "Theirs"}), 201).Data()["id"].(string)

		for _, c := range []struct {
			name   string
			body   any
			fields []string
		}{
			{"no name, no steps", map[string]any{}, []string{"name", "steps"}},
			{"a condition that does not compile", map[string]any{"name": "x", "condition": "event.title ==", "steps": []any{map[string]any{"drop": map[string]any{}}}}, []string{"condition"}},
			{"a set that is not a string", map[string]any{"name": "x", "steps": []any{map[string]any{"drop": map[string]any{}}, map[string]any{"drop": map[string]any{}}, map[string]any{"set": map[string]any{"title": "1 + 2"}}}}, []string{"steps[2].set.title"}},
			{"a route to another organisation's team", map[string]any{"name": "x", "steps": []any{map[string]any{"route": map[string]any{"scope": "team", "id": eveTeam}}}}, []string{"steps[0].route.id"}},
			{"a route to nobody", map[string]any{"name": "x", "steps": []any{map[string]any{"route": map[string]any{"scope": "user", "id": outsider.ID}}}}, []string{"steps[0].route.id"}},
			{"an enabled forward without a URL", map[string]any{"name": "x", "enabled": true, "steps": []any{map[string]any{"forward": map[string]any{"url": ""}}}}, []string{"steps[0].forward.url"}},
			{"a secret too long", map[string]any{"name": "x", "steps": []any{map[string]any{"forward": map[string]any{"url": "https://example.com/h", "secret": strings.Repeat("s", 151)}}}}, []string{"steps[0].forward.secret"}},
			{"a name too long", map[string]any{"name": strings.Repeat("n", perch.MaxWorkflowNameLen+1), "steps": []any{map[string]any{"drop": map[string]any{}}}}, []string{"name"}},
		} {
			res := expect(t, a.call("POST", workflowsPath, ada.Access, c.body), 422)
			got := res.Fields()
			for _, f := range c.fields {
				if got[f] == nil {
					t.Errorf("%s: fields = %v, want %s", c.name, got, f)
				}
			}
			if len(got) != len(c.fields) {
				t.Errorf("%s: fields = %v, want only %v", c.name, got, c.fields)
			}
		}
		// The same checks on PATCH, against the workflow as it would be.
		res := expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"condition": "nope("}), 422)
		if res.Fields()["condition"] == nil {
			t.Errorf("PATCH fields = %v", res.Fields())
		}

		for _, c := range []struct {
			body  any
			field string
		}{
			{`{"name": "x", "colour": "red"}`, "colour"},
			{`{"name": "x", "steps": [{"drop": {"why": 1}}]}`, "why"},
			{`{"name": 5}`, "name"},
			{`{"name": "x",`, ""},
			{`{"name": "x", "steps": [{"throttle": {"max": 1, "per": "soon"}}]}`, ""},
		} {
			res := expect(t, a.call("POST", workflowsPath, ada.Access, c.body), 400)
			if c.field != "" && res.Fields()[c.field] == nil {
				t.Errorf("%s: fields = %v, want %s named", c.body, res.Fields(), c.field)
			}
		}
		big := fmt.Sprintf(`{"name": "x", "description": %q}`, strings.Repeat("d", workflowBodyLimit))
		expect(t, a.call("POST", workflowsPath, ada.Access, big), 413)
		expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, `{"published": "no"}`), 400)
	})
}

// TestWorkflowForwardSecretsAreSealedAndNeverAnswered: the database holds
// the secret sealed, no answer holds it in any form, and saving the
// workflow as answered keeps it.
func TestWorkflowForwardSecretsAreSealedAndNeverAnswered(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		const secret, url = "hunter2-signing-secret", "https://hooks.example.com/perch"
		body := map[string]any{"name": "Out", "enabled": true, "steps": []any{map[string]any{"forward": map[string]any{"url": url, "secret": secret}}}}
		res := expect(t, a.call("POST", workflowsPath, ada.Access, body), 201)
		id := res.Data()["id"].(string)
		answers := []*response{res,
			expect(t, a.call("GET", workflowsPath, ada.Access, nil), 200),
			expect(t, a.call("GET", workflowsPath+"/"+id, ada.Access, nil), 200)}

		stored := func() string {
			t.Helper()
			w, err := s.Workflow(t.Context(), ada.OrgID, id)
			if err != nil {
				t.Fatal(err)
			}
			return w.Steps[0].Forward.Secret
		}
		sealed := stored()
		if !strings.HasPrefix(sealed, sealedPrefix) || strings.Contains(sealed, secret) {
			t.Fatalf("stored secret = %q, want it sealed", sealed)
		}
		if plain, err := a.srv.openSecret(sealed); err != nil || plain != secret {
			t.Fatalf("the sealed secret opens to %q, %v", plain, err)
		}

		// The dashboard saves the steps as answered, without the secret.
		steps := res.Data()["steps"]
		answers = append(answers, expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"steps": steps, "name": "Out 2"}), 200))
		if stored() != sealed {
			t.Fatalf("saving the answered steps changed the secret: %q", stored())
		}
		// A new URL without a secret has none; a new secret is sealed anew.
		moved := []any{map[string]any{"forward": map[string]any{"url": url + "/v2"}}}
		answers = append(answers, expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"steps": moved}), 200))
		if stored() != "" {
			t.Fatalf("a forward to a new URL kept the old secret")
		}
		// A client cannot hand in a sealed value of its own.
		forged := []any{map[string]any{"forward": map[string]any{"url": url, "secret": sealed}}}
		if res := expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"steps": forged}), 422); res.Fields()["steps[0].forward.secret"] == nil {
			t.Errorf("a sealed secret from the client: %s", res.Raw)
		}
		for _, r := range answers {
			if strings.Contains(r.Raw, secret) || strings.Contains(r.Raw, sealedPrefix) || strings.Contains(r.Raw, `"secret"`) {
				t.Errorf("an answer holds the secret: %s", r.Raw)
			}
		}
	})
}

// TestWorkflowFeatureFlags: a platform admin turning a feature off makes
// its routes 403 feature_disabled at once.
func TestWorkflowFeatureFlags(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		root := a.platformAdmin("Root")
		ada := a.register("Ada")
		id := a.mustCreateWorkflow(ada, dropErrors("Quiet"))["id"].(string)
		expect(t, a.call("GET", "/api/v1/marketplace/workflows", ada.Access, nil), 200)

		expect(t, a.call("PATCH", "/api/v1/admin/features/marketplace", root.Access, map[string]any{"enabled": false}), 200)
		for _, c := range []struct{ method, path string }{
			{"GET", "/api/v1/marketplace/workflows"},
			{"POST", workflowsPath + "/" + id + "/publish"},
			{"POST", workflowsPath + "/" + id + "/install"},
		} {
			if res := expect(t, a.call(c.method, c.path, ada.Access, nil), 403); res.ErrorCode() != perch.EFEATUREDISABLED {
				t.Errorf("%s %s with the marketplace off: %s", c.method, c.path, res.Raw)
			}
		}
		if res := expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"published": true}), 403); res.ErrorCode() != perch.EFEATUREDISABLED {
			t.Errorf("publishing through PATCH with the marketplace off: %s", res.Raw)
		}
		// Workflows themselves still work, and so does forking one's own.
		expect(t, a.call("GET", workflowsPath, ada.Access, nil), 200)
		expect(t, a.call("POST", workflowsPath+"/"+id+"/fork", ada.Access, nil), 201)

		expect(t, a.call("PATCH", "/api/v1/admin/features/workflows", root.Access, map[string]any{"enabled": false}), 200)
		for _, c := range []struct{ method, path string }{
			{"GET", workflowsPath},
			{"POST", workflowsPath},
			{"GET", workflowsPath + "/" + id},
			{"PATCH", workflowsPath + "/" + id},
			{"DELETE", workflowsPath + "/" + id},
			{"GET", workflowsPath + "/" + id + "/runs"},
			{"POST", workflowsPath + "/" + id + "/test"},
			{"POST", workflowsPath + "/" + id + "/fork"},
		} {
			res := expect(t, a.call(c.method, c.path, ada.Access, dropErrors("x")), 403)
			if res.ErrorCode() != perch.EFEATUREDISABLED || !strings.Contains(res.ErrorMessage(), "workflows") {
				t.Errorf("%s %s with workflows off: %s", c.method, c.path, res.Raw)
			}
		}
		// On again for Ada's organisation alone.
		expect(t, a.call("PATCH", "/api/v1/admin/features/workflows", root.Access,
			map[string]any{"org_overrides": []map[string]any{{"org_id": ada.OrgID, "enabled": true}}}), 200)
		expect(t, a.call("GET", workflowsPath, ada.Access, nil), 200)
	})
}

func TestWorkflowRunsPageAndFilter(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada := a.register("Ada")
		bob := a.invite(ada, "Bob", "member")
		id := a.mustCreateWorkflow(ada, dropErrors("Quiet"))["id"].(string)
		start := a.clock.Now()
		var runs []*perch.WorkflowRun
		for i := range 5 {
			status := perch.RunDropped
			if i%2 == 1 {
				status = perch.RunFailed
			}
			runs = append(runs, &perch.WorkflowRun{WorkflowID: id, WorkflowVersion: 1, Status: status, DurationUS: 12,
				Steps: []perch.RunStep{{Type: "drop", Status: "ok"}}, CreatedAt: start.Add(time.Duration(i) * time.Second)})
		}
		if err := s.AddWorkflowRuns(t.Context(), ada.OrgID, runs); err != nil {
			t.Fatal(err)
		}
		path := workflowsPath + "/" + id + "/runs"
		var seen []string
		cursor := ""
		for page := 0; ; page++ {
			res := expect(t, a.call("GET", path+"?limit=2&cursor="+cursor, bob.Access, nil), 200)
			for _, r := range res.List() {
				seen = append(seen, r["id"].(string))
			}
			next, _ := res.Body["next_cursor"].(string)
			if next == "" {
				break
			}
			if page > 3 {
				t.Fatal("paging does not end")
			}
			cursor = next
		}
		want := []string{runs[4].ID, runs[3].ID, runs[2].ID, runs[1].ID, runs[0].ID}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Fatalf("runs = %v, want newest first %v", seen, want)
		}
		failed := expect(t, a.call("GET", path+"?status=failed", bob.Access, nil), 200).List()
		if len(failed) != 2 || failed[0]["id"] != runs[3].ID || failed[0]["status"] != "failed" {
			t.Fatalf("failed runs = %v", failed)
		}
		expect(t, a.call("GET", path+"?status=exploded", bob.Access, nil), 400)
		expect(t, a.call("GET", path+"?cursor=nonsense", bob.Access, nil), 400)
		expect(t, a.call("GET", path+"?limit=0", bob.Access, nil), 400)
		expect(t, a.call("GET", workflowsPath+"/nosuchworkflow/runs", bob.Access, nil), 404)
	})
}
