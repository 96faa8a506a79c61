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
	Off    bool // the marketplace feature is off for this user
	Items  []*marketItem
	Manage bool   // an owner or admin: may install and fork
	Q      string // the search
	Sort   string // popular or recent
	Pager  pager
}

// Marketplace lists the published workflows.
func (d *Dashboard) Marketplace(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.marketplacePage(http.StatusOK, view{})
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
	}
	c.render(status, "marketplace", v)
	return nil
}

// InstallWorkflow installs a marketplace workflow into the organisation
// (or updates the installed copy) and opens it.
func (d *Dashboard) InstallWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.marketAction(r.PathValue("id"), "install", "The workflow is installed.")
}

// ForkWorkflow copies a marketplace workflow into the organisation as one
// of its own, and opens it.
func (d *Dashboard) ForkWorkflow(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.marketAction(r.PathValue("id"), "fork", "The workflow is forked: this copy is yours to change.")
}

// marketAction installs or forks the marketplace workflow id and opens the
// copy; a refusal shows the marketplace again with the API's reason.
func (c *call) marketAction(id, action, done string) error {
	var wf perch.Workflow
	if err := c.do(http.MethodPost, workflowsPath(id, action), nil, &wf); err != nil {
		if code := perch.ErrorCode(err); code == perch.EINTERNAL || code == perch.EUNAVAILABLE {
			return err
		}
		msg := c.say(err)
		if f := fieldsText(err); f != "" {
			msg += " " + f
		}
		return c.marketplacePage(perch.HTTPStatus(perch.ErrorCode(err)), view{Error: msg})
	}
	return c.redirect("/org/workflows/"+url.PathEscape(wf.ID), done)
}
