package web

import (
	"net/http"
	"net/url"
	"time"

	"github.com/perch-dev/perch"
)

// The Marketplace page (/marketplace): the workflows organisations have
// published, searched and sorted, each with Install (a copy kept in step
// with the original) and Fork (a copy of one's own).

// marketItem is one listing of the marketplace, as the API answers it.
type marketItem struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Author      struct {
		OrgName string `json:"org_name"`
	} `json:"author"`
	Version     int          `json:"version"`
	Installs    int          `json:"installs"`
	PublishedAt time.Time    `json:"published_at"`
	Condition   string       `json:"condition"`
	Steps       []perch.Step `json:"steps"`
}

// StepTypes names the listing's steps in order: "throttle, forward".
func (m *marketItem) StepTypes() []string {
	types := make([]string, 0, len(m.Steps))
	for _, s := range m.Steps {
		types = append(types, s.Type())
	}
	return types
}

// marketData is what the marketplace page shows.
type marketData struct {
	Off       bool       // the marketplace feature is off for this user
	Installed *installed // the copy just installed, when the page follows an install
	Items     []*marketItem
	Manage    bool   // an owner or admin: may install and fork
	Q         string // the search
	Sort      string // popular or recent
	Pager     pager
}

// installed is the organisation's copy of a marketplace workflow, as the
// page shows it after an install: an install starts switched off (the
// API's answer says so), so the page says that, with a switch, or, while
// the copy lacks the targets the marketplace never carries, a link to fill
// them in.
type installed struct {
	ID, Name     string
	Enabled      bool
	NeedsTargets bool // a forward URL or an e-mail target is blank
}

// Marketplace lists the published workflows; ?installed= names the copy an
// install just made.
func (d *Dashboard) Marketplace(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.marketplacePage(http.StatusOK, view{})
}

// installedCopy reads the organisation's workflow id for the notice after
// an install; nil when there is none to show (a stale or foreign id).
func (c *call) installedCopy(id string) *installed {
	if id == "" {
		return nil
	}
	var wf perch.Workflow
	if err := c.do(http.MethodGet, workflowsPath(id), nil, &wf); err != nil || wf.Source == nil {
		return nil
	}
	return &installed{ID: wf.ID, Name: wf.Name, Enabled: wf.Enabled, NeedsTargets: blankTargets(wf.Steps)}
}

// blankTargets reports whether a forward step has no URL or an e-mail step
// no recipients: the marketplace leaves them out, and a workflow with one
// cannot be switched on until they are filled in.
func blankTargets(steps []perch.Step) bool {
	for _, s := range steps {
		if s.Forward != nil && s.Forward.URL == "" || s.Email != nil && s.Email.To == "" {
			return true
		}
	}
	return false
}

// marketplacePage renders the page with status, for the search in the
// page's address.
func (c *call) marketplacePage(status int, v view) error {
	form := c.r.URL.Query()
	data := &marketData{Manage: c.user.IsOrgAdmin(), Q: form.Get("q"), Sort: form.Get("sort")}
	if data.Sort != "recent" {
		data.Sort = "popular"
	}
	v.Title, v.Nav, v.Data = "Marketplace", "marketplace", data
	if !c.featureFlags()[featureMarketplace] {
		data.Off = true
		c.render(http.StatusOK, "marketplace", v)
		return nil
	}
	q := apiQuery(form, "q", "cursor", "limit")
	q.Set("sort", data.Sort)
	next, err := c.api.CallPage(c.r.Context(), withQuery("/api/v1/marketplace/workflows", q), &data.Items)
	switch {
	case perch.ErrorCode(err) == perch.EFEATUREDISABLED:
		data.Off = true
		c.render(http.StatusOK, "marketplace", v)
		return nil
	case perch.ErrorCode(err) == perch.EBADREQUEST || perch.ErrorCode(err) == perch.EVALIDATION:
		v.Error = c.say(err)
		c.render(http.StatusBadRequest, "marketplace", v)
		return nil
	case err != nil:
		return err
	}
	if c.r.Method == http.MethodGet {
		data.Pager = pagerOf(c.r.URL, next)
		data.Installed = c.installedCopy(form.Get("installed"))
	}
	c.render(status, "marketplace", v)
	return nil
}

// InstallWorkflow installs a marketplace workflow into the organisation
// (or updates the installed copy) and shows the marketplace again, which
// says that the copy is installed and whether it is on, with a switch.
func (d *Dashboard) InstallWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	wf, err := c.marketCall(r.PathValue("id"), "install")
	if wf == nil {
		return err
	}
	return c.redirect("/marketplace?installed="+url.QueryEscape(wf.ID), "")
}

// ForkWorkflow copies a marketplace workflow into the organisation as one
// of its own, and opens it.
func (d *Dashboard) ForkWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	wf, err := c.marketCall(r.PathValue("id"), "fork")
	if wf == nil {
		return err
	}
	return c.redirect("/org/workflows/"+url.PathEscape(wf.ID), "The workflow is forked: this copy is yours to change.")
}

// marketCall installs or forks the marketplace workflow id and returns the
// copy. Without a copy, the page is answered already (a refusal shows the
// marketplace again with the API's reason) or err is a failure to answer.
func (c *call) marketCall(id, action string) (*perch.Workflow, error) {
	var wf perch.Workflow
	if err := c.do(http.MethodPost, workflowsPath(id, action), nil, &wf); err != nil {
		if code := perch.ErrorCode(err); code == perch.EINTERNAL || code == perch.EUNAVAILABLE {
			return nil, err
		}
		msg := c.say(err)
		if f := fieldsText(err); f != "" {
			msg += " " + f
		}
		return nil, c.marketplacePage(perch.HTTPStatus(perch.ErrorCode(err)), view{Error: msg})
	}
	return &wf, nil
}
