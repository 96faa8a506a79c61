package web_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestWorkflowEditorInTheBrowser: in Chromium, an owner writes a workflow
// with a broken condition and sees the problem under the condition, with
// what they typed kept; fixes and saves it; appends a drop step with "add
// a step"; and tries the draft on a sample event: "dropped".
func TestWorkflowEditorInTheBrowser(t *testing.T) {
	t.Parallel()
	a, base := liveDashboard(t)
	featuresOn(t, a.store, "workflows", "marketplace")
	b := newChrome(t, base)
	t.Logf("screenshots: %s", b.dir)
	b.signUp("Olive Owner", emailFor("Olive Owner"), goodPassword)

	b.open("/notifications", `a[href="/org/workflows"]`)
	b.click(`a[href="/org/workflows"]`)
	b.do("wait for the workflows", waitVisible("#new-workflow"))
	b.checkPage("workflows-empty")
	b.click("#new-workflow")
	b.do("wait for the editor", waitVisible("#wf-condition"))
	if !evaluate[bool](b, `!document.querySelector("[data-add-step]").hidden`) {
		t.Error(`with the script, "add a step" is still hidden`)
	}

	// A broken condition: its problem under it, the input kept.
	b.fill("#wf-name", "Quiet nights", "#wf-condition", "event.severity ==")
	b.paste("#wf-steps", `[{"set": {"title": "'[night] ' + event.title"}}]`)
	b.click("#save")
	b.do("wait for the condition's problem", waitVisible("#condition-problem"))
	if got := b.value("#wf-condition"); got != "event.severity ==" {
		t.Errorf("after the refusal the condition reads %q", got)
	}
	if got := b.value("#wf-name"); got != "Quiet nights" {
		t.Errorf("after the refusal the name reads %q", got)
	}
	if got := evaluate[string](b, `document.querySelector("#wf-condition").getAttribute("aria-invalid") || ""`); got != "true" {
		t.Errorf("the refused condition has aria-invalid %q", got)
	}
	b.checkPage("workflow-invalid")
	b.screenshot("workflow-invalid")

	// Fixed, and saved.
	b.paste("#wf-condition", `event.severity == "info"`)
	b.click("#save")
	b.do("wait for the saved workflow", waitVisible(".flash"), waitVisible("#try"))
	if got := b.text(".flash"); got != "The workflow is saved." {
		t.Fatalf("after saving, the page says %q", got)
	}
	if got := b.text("h1"); got != "Quiet nights" {
		t.Errorf("the saved workflow's page is headed %q", got)
	}

	// "Add a step": a drop step appended to the JSON list.
	b.choose("#add-step", "Drop")
	b.click("#add-step-button")
	var steps []map[string]any
	if err := json.Unmarshal([]byte(b.value("#wf-steps")), &steps); err != nil || len(steps) != 2 || steps[0]["set"] == nil || steps[1]["drop"] == nil {
		t.Fatalf("after adding a drop step the steps read %q (%v)", b.value("#wf-steps"), err)
	}
	if got := b.text("#add-step-status"); !strings.Contains(got, "Drop") {
		t.Errorf("adding a step says %q", got)
	}

	// Try it, on a sample event: the draft drops it; nothing was saved.
	b.fill("#try-title-input", "Nightly backup done")
	b.click("#try")
	b.do("wait for the result", waitVisible("#try-status"))
	if got := b.text("#try-status"); got != "dropped" {
		t.Errorf("trying the draft says %q, want dropped", got)
	}
	if got := b.text("#try-steps tbody"); !strings.Contains(got, "1. set") || !strings.Contains(got, "2. drop") {
		t.Errorf("the result's steps read %q", got)
	}
	if !strings.Contains(b.value("#wf-steps"), "drop") {
		t.Error("after trying, the steps box lost the draft")
	}
	if got := evaluate[string](b, `document.querySelector("#try-result").getAttribute("aria-live")`); got != "polite" {
		t.Errorf("the result is not announced: aria-live %q", got)
	}
	b.checkPage("workflow-try")
	b.screenshot("workflow-try")

	// The list: its switch turns the workflow off.
	b.click(`a[href="/org/workflows"][aria-current="page"]`)
	b.do("wait for the list", waitVisible(`button.switch[aria-checked="true"]`))
	b.checkPage("workflows")
	b.screenshot("workflows")
	b.click(`button.switch`)
	b.do("wait for the switch to be off", waitVisible(`button.switch[aria-checked="false"]`))
	b.open("/marketplace", "#market-q")
	b.checkPage("marketplace")
	b.screenshot("marketplace")
	checkConsole(t, b, base+"/org/workflows: error: Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)")
}

// choose selects the option labelled label of the select sel, as a person
// picking it does.
func (b *chrome) choose(sel, label string) {
	b.t.Helper()
	js, _ := json.Marshal([]string{sel, label})
	if !evaluate[bool](b, `(([sel, label]) => {
		const s = document.querySelector(sel);
		const o = s && [...s.options].find((o) => o.textContent.trim() === label);
		if (!o) return false;
		s.value = o.value;
		s.dispatchEvent(new Event("change", {bubbles: true}));
		return true;
	})(`+string(js)+`)`) {
		b.t.Fatalf("no option %q in %s\n%s", label, sel, b.where())
	}
}
