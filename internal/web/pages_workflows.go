package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/perch-dev/perch"
)

// The Workflows pages (/org/workflows…): the organisation's workflows with
// their switches and counts, the editor with "Try it", and each workflow's
// runs. Every read and change goes through the API, which
// decides who may do what: members read, owners and admins change.

// Feature flags the pages look at (GET /api/v1/users/me/features).
const (
	featureWorkflows   = "workflows"
	featureMarketplace = "marketplace"
)

// featureFlags are the signed-in user's feature flags, read once per page
// request; none when they cannot be read (a flag is never worth failing a
// page for: what it hides stays hidden).
func (c *call) featureFlags() map[string]bool {
	if c.flags != nil {
		return c.flags
	}
	c.flags = map[string]bool{}
	if c.user == nil {
		return c.flags
	}
	var flags map[string]bool
	if err := c.do(http.MethodGet, "/api/v1/users/me/features", nil, &flags); err == nil && flags != nil {
		c.flags = flags
	}
	return c.flags
}

// workflowsPath is the API's path of the organisation's workflows, or of
// one of them and what follows it.
func workflowsPath(id string, rest ...string) string {
	p := "/api/v1/org/workflows"
	if id != "" {
		p += "/" + url.PathEscape(id)
	}
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// listedWorkflow is a workflow as the API lists it: with whether the
// marketplace has a newer version of the one it was installed from.
type listedWorkflow struct {
	perch.Workflow
	UpdateAvailable bool `json:"update_available"`
}

// workflowsData is what the list of workflows shows.
type workflowsData struct {
	Off         bool // the workflows feature is off for this user
	Workflows   []*listedWorkflow
	Manage      bool // an owner or admin: may switch, publish, update and delete
	Marketplace bool // the marketplace is on: workflows may be published
}

// Workflows lists the organisation's workflows.
func (d *Dashboard) Workflows(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.workflowsPage(http.StatusOK, view{})
}

// workflowsPage renders the list with status.
func (c *call) workflowsPage(status int, v view) error {
	data := &workflowsData{Manage: c.user.IsOrgAdmin(), Marketplace: c.featureFlags()[featureMarketplace]}
	v.Title, v.Nav, v.Data = "Workflows", "workflows", data
	if !c.featureFlags()[featureWorkflows] {
		data.Off = true
		c.render(http.StatusOK, "workflows", v)
		return nil
	}
	if err := c.do(http.MethodGet, workflowsPath(""), nil, &data.Workflows); err != nil {
		if perch.ErrorCode(err) == perch.EFEATUREDISABLED {
			data.Off = true
			c.render(http.StatusOK, "workflows", v)
			return nil
		}
		return err
	}
	c.render(status, "workflows", v)
	return nil
}

// workflowsAction runs one change from the list and comes back to it, with
// the API's message when it refused.
func (c *call) workflowsAction(method, path string, in any, done string) error {
	if err := c.do(method, path, in, nil); err != nil {
		return c.workflowsRefused(err)
	}
	return c.redirect("/org/workflows", done)
}

// workflowsRefused shows the list with the API's refusal err, or answers
// err itself when it is no refusal but a failure.
func (c *call) workflowsRefused(err error) error {
	if code := perch.ErrorCode(err); code == perch.EINTERNAL || code == perch.EUNAVAILABLE {
		return err
	}
	msg := c.say(err)
	if f := fieldsText(err); f != "" {
		msg += " " + f
	}
	return c.workflowsPage(perch.HTTPStatus(perch.ErrorCode(err)), view{Error: msg})
}

// SetWorkflowEnabled switches a workflow on or off.
func (d *Dashboard) SetWorkflowEnabled(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	on := r.PostForm.Get("enabled") == "true"
	done := "The workflow is off."
	if on {
		done = "The workflow is on."
	}
	return c.workflowsAction(http.MethodPatch, workflowsPath(r.PathValue("id")), map[string]bool{"enabled": on}, done)
}

// PublishWorkflow lists a workflow in the marketplace (again, with its
// current version, when it is listed already).
func (d *Dashboard) PublishWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.workflowsAction(http.MethodPost, workflowsPath(r.PathValue("id"), "publish"), nil, "The workflow is published in the marketplace.")
}

// WithdrawWorkflow takes a workflow out of the marketplace; installs keep
// their copies.
func (d *Dashboard) WithdrawWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.workflowsAction(http.MethodPatch, workflowsPath(r.PathValue("id")), map[string]bool{"published": false}, "The workflow is withdrawn from the marketplace.")
}

// UpdateWorkflow installs the marketplace's current version of the
// workflow an installed one came from (form field source). A version that
// changes what the workflow does arrives switched off, which the message
// says when it happened.
func (d *Dashboard) UpdateWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	var got struct {
		Enabled bool `json:"enabled"`
	}
	if err := c.do(http.MethodPost, workflowsPath(r.PostForm.Get("source"), "install"), nil, &got); err != nil {
		return c.workflowsRefused(err)
	}
	done := "The workflow is updated to the marketplace's version."
	if !got.Enabled {
		done = "The workflow is updated to the marketplace's version, and is off: read what it does now, then switch it on."
	}
	return c.redirect("/org/workflows", done)
}

// DeleteWorkflow deletes a workflow.
func (d *Dashboard) DeleteWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.workflowsAction(http.MethodDelete, workflowsPath(r.PathValue("id")), nil, "The workflow is deleted.")
}

// workflowData is what the editor shows.
type workflowData struct {
	Off      bool            // the workflows feature is off for this user
	Workflow *listedWorkflow // the saved workflow; nil for a new one
	Manage   bool            // may save
	// What the form shows: the saved workflow, or what was typed.
	Name, Description, Condition, Steps string
	Enabled                             bool
	// StepProblems are the problems the API found in the steps, each with
	// its path (steps[2].set.title), shown by the steps box.
	StepProblems []problem
	// TryProblems are problems with the sample (event, payload), shown by
	// the Try it form.
	TryProblems []problem
	Recent      []*perch.Notification // the last notifications, to try one
	Try         *tryResult            // what Try it answered
	StepTypes   []stepTemplate        // the "add a step" choices
}

// problem is one field's problem, as the API names the field.
type problem struct {
	Field, Problem string
}

// tryResult is the API's answer to POST …/test.
type tryResult struct {
	Matched      bool                `json:"matched"`
	Status       string              `json:"status"`
	Notification *perch.Notification `json:"notification"`
	Steps        []perch.RunStep     `json:"steps"`
	Forwards     int                 `json:"forwards"`
	Emails       int                 `json:"emails"`
	// Payload, PayloadSource and Missing: what the try read as payload,
	// where from, and what the workflow reads that it lacks.
	Payload       json.RawMessage `json:"payload"`
	PayloadSource string          `json:"payload_source"`
	Missing       []string        `json:"missing"`
}

// PayloadJSON is the payload the try ran on, indented for reading; "" when
// it was empty.
func (t *tryResult) PayloadJSON() string {
	var b bytes.Buffer
	if len(t.Payload) == 0 || string(t.Payload) == "{}" || json.Indent(&b, t.Payload, "", "  ") != nil {
		return ""
	}
	return b.String()
}

// editorFields are the editor's own fields: their problems show beside them.
var editorFields = []string{"name", "description", "condition", "enabled"}

// NewWorkflowPage shows an empty editor.
func (d *Dashboard) NewWorkflowPage(w http.ResponseWriter, r *http.Request, c *call) error {
	data := &workflowData{Steps: "[]", Enabled: true}
	return c.editorPage(http.StatusOK, view{}, data)
}

// WorkflowPage shows the editor of a saved workflow.
func (d *Dashboard) WorkflowPage(w http.ResponseWriter, r *http.Request, c *call) error {
	data := &workflowData{}
	if !c.featureFlags()[featureWorkflows] {
		return c.editorPage(http.StatusOK, view{}, data)
	}
	wf, err := c.readWorkflow(r.PathValue("id"))
	if err != nil {
		return err
	}
	data.Workflow, data.Name, data.Description, data.Condition, data.Enabled = wf, wf.Name, wf.Description, wf.Condition, wf.Enabled
	data.Steps = stepsJSON(wf.Steps)
	return c.editorPage(http.StatusOK, view{}, data)
}

// readWorkflow reads one workflow.
func (c *call) readWorkflow(id string) (*listedWorkflow, error) {
	var wf listedWorkflow
	if err := c.do(http.MethodGet, workflowsPath(id), nil, &wf); err != nil {
		return nil, err
	}
	return &wf, nil
}

// stepsJSON is steps as the editor's JSON box shows them.
func stepsJSON(steps []perch.Step) string {
	if len(steps) == 0 {
		return "[]"
	}
	b, err := json.MarshalIndent(steps, "", "  ")
	if err != nil {
		return "[]"
	}
	return string(b)
}

// editorPage renders the editor with status; a saved workflow's editor
// offers the last notifications to try it on.
func (c *call) editorPage(status int, v view, data *workflowData) error {
	data.Manage, data.StepTypes = c.user.IsOrgAdmin(), stepTemplates
	v.Title, v.Nav, v.Data = "New workflow", "workflows", data
	if data.Workflow != nil {
		v.Title = data.Workflow.Name
		if v.Title == "" {
			v.Title = "Workflow"
		}
	}
	if !c.featureFlags()[featureWorkflows] {
		data.Off, v.Title = true, "Workflows"
		c.render(http.StatusOK, "workflow", v)
		return nil
	}
	if data.Workflow != nil {
		// Without them, Try it still takes a sample event.
		_ = c.do(http.MethodGet, "/api/v1/notifications?limit=10", nil, &data.Recent)
	}
	c.render(status, "workflow", v)
	return nil
}

// editorForm is the editor as it was posted: what to show again, and the
// problems found before the API was asked (steps that are not JSON).
func (c *call) editorForm(data *workflowData) (steps json.RawMessage, fields map[string]string) {
	f := c.r.PostForm
	data.Name, data.Description, data.Condition = f.Get("name"), f.Get("description"), f.Get("condition")
	data.Enabled = f.Get("enabled") == "on"
	data.Steps = f.Get("steps")
	fields = map[string]string{}
	text := strings.TrimSpace(data.Steps)
	if text == "" {
		text = "[]"
	}
	if !json.Valid([]byte(text)) {
		fields["steps"] = "is not JSON: write the steps as a JSON list, such as [{\"drop\": {}}]"
		return nil, fields
	}
	return json.RawMessage(text), fields
}

// CreateWorkflow saves a new workflow and opens it.
func (d *Dashboard) CreateWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	data := &workflowData{}
	steps, fields := c.editorForm(data)
	if len(fields) > 0 {
		return c.editorRefused(data, validation(fields), false)
	}
	in := map[string]any{"name": data.Name, "description": data.Description, "enabled": data.Enabled, "condition": data.Condition, "steps": steps}
	var wf perch.Workflow
	if err := c.do(http.MethodPost, workflowsPath(""), in, &wf); err != nil {
		return c.editorRefused(data, err, false)
	}
	return c.redirect("/org/workflows/"+url.PathEscape(wf.ID), "The workflow is saved.")
}

// SaveWorkflow saves the editor's changes to a workflow.
func (d *Dashboard) SaveWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	id := r.PathValue("id")
	wf, err := c.readWorkflow(id)
	if err != nil {
		return err
	}
	data := &workflowData{Workflow: wf}
	steps, fields := c.editorForm(data)
	if len(fields) > 0 {
		return c.editorRefused(data, validation(fields), false)
	}
	in := map[string]any{"name": data.Name, "description": data.Description, "enabled": data.Enabled, "condition": data.Condition, "steps": steps}
	if err := c.do(http.MethodPatch, workflowsPath(id), in, nil); err != nil {
		return c.editorRefused(data, err, false)
	}
	return c.redirect("/org/workflows/"+url.PathEscape(id), "The workflow is saved.")
}

// TryWorkflow runs the editor's condition and steps, as typed, on a sample
// event or one of the last notifications, and shows what they did. Nothing
// is delivered, forwarded or mailed.
func (d *Dashboard) TryWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	id := r.PathValue("id")
	wf, err := c.readWorkflow(id)
	if err != nil {
		return err
	}
	data := &workflowData{Workflow: wf}
	steps, fields := c.editorForm(data)
	f := r.PostForm
	in := map[string]any{"condition": data.Condition, "steps": steps}
	if n := f.Get("try_notification"); n != "" {
		in["notification_id"] = n
	} else {
		in["event"] = map[string]string{"title": f.Get("try_title"), "message": f.Get("try_message"),
			"severity": f.Get("try_severity"), "source": f.Get("try_source")}
		if p := strings.TrimSpace(f.Get("try_payload")); p != "" {
			if !json.Valid([]byte(p)) {
				fields["payload"] = "is not JSON: write the payload as a JSON object, such as {\"env\": \"prod\"}"
			} else {
				in["payload"] = json.RawMessage(p)
			}
		}
	}
	if len(fields) > 0 {
		return c.editorRefused(data, validation(fields), true)
	}
	var out tryResult
	if err := c.do(http.MethodPost, workflowsPath(id, "test"), in, &out); err != nil {
		return c.editorRefused(data, err, true)
	}
	data.Try = &out
	v := view{Form: tryForm(f)}
	return c.editorPage(http.StatusOK, v, data)
}

// tryForm is what was typed into Try it, to show it again.
func tryForm(f url.Values) url.Values {
	kept := url.Values{}
	for k, vals := range f {
		if strings.HasPrefix(k, "try_") {
			kept[k] = vals
		}
	}
	return kept
}

// validation is the editor's own finding of problems, in the API's shape.
func validation(fields map[string]string) error {
	return &perch.Error{Code: perch.EVALIDATION, Message: "Some fields need another look.", Fields: fields}
}

// editorRefused shows the editor again, with what was typed and what the
// API said: each problem beside the field it names (the condition, the
// steps box with each step's path, the Try it sample).
func (c *call) editorRefused(data *workflowData, err error, trying bool) error {
	if code := perch.ErrorCode(err); code == perch.EINTERNAL || code == perch.EUNAVAILABLE {
		return err
	}
	v := view{Error: c.say(err), Fields: map[string]string{}, Form: tryForm(c.r.PostForm)}
	var pe *perch.Error
	if errors.As(err, &pe) {
		for _, k := range slices.Sorted(maps.Keys(pe.Fields)) {
			msg := pe.Fields[k]
			switch {
			case slices.Contains(editorFields, k):
				v.Fields[k] = msg
			case k == "steps" || strings.HasPrefix(k, "steps[") || strings.HasPrefix(k, "steps."):
				data.StepProblems = append(data.StepProblems, problem{Field: k, Problem: msg})
			default:
				data.TryProblems = append(data.TryProblems, problem{Field: k, Problem: msg})
			}
		}
	}
	if !trying && len(data.TryProblems) > 0 {
		// Not from Try it: say them in the message at the top.
		for _, p := range data.TryProblems {
			v.Error += " " + p.Field + " " + p.Problem + "."
		}
		data.TryProblems = nil
	}
	return c.editorPage(perch.HTTPStatus(perch.ErrorCode(err)), v, data)
}

// stepTemplate is one choice of "add a step": the step app.js appends to
// the steps box.
type stepTemplate struct {
	Label string
	JSON  string
}

// stepTemplates are the "add a step" choices, each a working example.
var stepTemplates = []stepTemplate{
	{"Set the title", `{"set": {"title": "'[' + event.severity + '] ' + event.title"}}`},
	{"Drop", `{"drop": {}}`},
	{"Throttle", `{"throttle": {"key": "event.title", "max": 5, "per": "10m"}}`},
	{"Digest", `{"digest": {"key": "event.tab", "window": "1h"}}`},
	{"Forward", `{"forward": {"url": "https://example.com/hook", "secret": ""}}`},
	{"E-mail", `{"email": {"to": "admins"}}`},
	{"Route", `{"route": {"scope": "org"}}`},
}

// runsData is what a workflow's runs page shows.
type runsData struct {
	Off      bool
	Workflow *listedWorkflow
	Runs     []*perch.WorkflowRun
	Status   string   // the status filter; "" is every run
	Statuses []string // the filter's choices
	Older    string   // the next page's address; "" on the last
	Newest   string   // the first page's address; "" on the first
}

// WorkflowRuns shows a workflow's runs, newest first, a page at a time,
// filtered by status.
func (d *Dashboard) WorkflowRuns(w http.ResponseWriter, r *http.Request, c *call) error {
	data := &runsData{Statuses: []string{perch.RunDelivered, perch.RunDropped, perch.RunThrottled, perch.RunDigested, perch.RunFailed}}
	v := view{Title: "Runs", Nav: "workflows", Data: data}
	if !c.featureFlags()[featureWorkflows] {
		data.Off = true
		return c.page("workflow_runs", v)
	}
	id := r.PathValue("id")
	wf, err := c.readWorkflow(id)
	if err != nil {
		return err
	}
	data.Workflow = wf
	v.Title = "Runs of " + wf.Name
	form := r.URL.Query()
	data.Status = form.Get("status")
	next, err := c.api.CallPage(r.Context(), withQuery(workflowsPath(id, "runs"), apiQuery(form, "status", "cursor", "limit")), &data.Runs)
	if perch.ErrorCode(err) == perch.EBADREQUEST || perch.ErrorCode(err) == perch.EVALIDATION {
		v.Error = c.say(err)
		c.render(http.StatusBadRequest, "workflow_runs", v)
		return nil
	}
	if err != nil {
		return err
	}
	p := pagerOf(r.URL, next)
	data.Older, data.Newest = p.Next, p.First
	return c.page("workflow_runs", v)
}
