package server

import (
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/store"
	"github.com/perch-dev/perch/internal/store/storetest"
)

// Taking an update from the marketplace brings the source's new name and
// description with its condition and steps, audited from and to; an
// update that changes only the words keeps the copy on, at its version.
func TestTakingAMarketplaceUpdateBringsNameAndDescription(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, s *store.Store) {
		a := newAPI(t, s)
		ada, bob := a.register("Ada"), a.register("Bob")
		id := a.mustCreateWorkflow(ada, map[string]any{"name": "Tag errors", "description": "Marks errors", "enabled": true,
			"condition": `event.severity == "error"`,
			"steps":     []any{map[string]any{"set": map[string]any{"title": `"[err] " + event.title`}}}})["id"].(string)
		expect(t, a.call("POST", workflowsPath+"/"+id+"/publish", ada.Access, nil), 200)
		copyID := expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bob.Access, nil), 201).Data()["id"].(string)
		expect(t, a.call("PATCH", workflowsPath+"/"+copyID, bob.Access, map[string]any{"enabled": true}), 200)

		// Ada renames it and rewords it, then changes the condition too.
		expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"name": "Tag errors and warnings",
			"description": "Marks errors and warnings"}), 200)
		expect(t, a.call("POST", workflowsPath+"/"+id+"/publish", ada.Access, nil), 200)
		if l := expect(t, a.call("GET", workflowsPath, bob.Access, nil), 200).List(); len(l) != 1 || l[0]["update_available"] != true {
			t.Fatalf("Bob's workflows = %v, want the copy with an update available", l)
		}
		got := expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bob.Access, nil), 200).Data()
		if got["id"] != copyID || got["name"] != "Tag errors and warnings" || got["description"] != "Marks errors and warnings" ||
			got["enabled"] != true || got["version"] != 1.0 || got["update_available"] != false {
			t.Fatalf("the update of the words = %v, want the new name and description, still on at version 1", got)
		}
		if w := expect(t, a.call("GET", workflowsPath+"/"+copyID, bob.Access, nil), 200).Data(); w["name"] != "Tag errors and warnings" ||
			w["description"] != "Marks errors and warnings" {
			t.Fatalf("the copy read back = %v", w)
		}
		entry := a.workflowAudits(perch.AuditWorkflowInstalled)[0]
		name, _ := entry.Changes["name"].(map[string]any)
		desc, _ := entry.Changes["description"].(map[string]any)
		if name["from"] != "Tag errors" || name["to"] != "Tag errors and warnings" || desc["from"] != "Marks errors" ||
			desc["to"] != "Marks errors and warnings" {
			t.Fatalf("the update's audit changes = %v", entry.Changes)
		}

		expect(t, a.call("PATCH", workflowsPath+"/"+id, ada.Access, map[string]any{"name": "Tag the bad ones",
			"condition": `event.severity != "info"`}), 200)
		expect(t, a.call("POST", workflowsPath+"/"+id+"/publish", ada.Access, nil), 200)
		got = expect(t, a.call("POST", workflowsPath+"/"+id+"/install", bob.Access, nil), 200).Data()
		if got["name"] != "Tag the bad ones" || got["condition"] != `event.severity != "info"` || got["description"] != "Marks errors and warnings" ||
			got["enabled"] != false || got["version"] != 2.0 {
			t.Fatalf("the update of name and condition = %v", got)
		}
		if _, said := a.workflowAudits(perch.AuditWorkflowInstalled)[0].Changes["description"]; said {
			t.Fatalf("an unchanged description is audited as changed")
		}
	})
}
