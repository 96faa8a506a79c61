package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/perch-dev/perch"
)

// usersData is what the Users page shows.
type usersData struct {
	Users []*perch.AdminUser
	Q     string // what was searched for
	Pager pager
	Back  string // this page's address, where its forms come back to
	Me    string // the admin's own id: no Disable button for oneself
}

// usersPath is the Users page.
const usersPath = "/admin/users"

// usersPage renders the Users page at the address at (its search and
// cursor), with status and v's message.
func (c *call) usersPage(status int, v view, at *url.URL) error {
	form := at.Query()
	data := &usersData{Q: form.Get("q"), Back: at.RequestURI(), Me: c.user.ID}
	next, err := c.api.CallPage(c.r.Context(), withQuery("/api/v1/admin/users", apiQuery(form, "q", "cursor", "limit")), &data.Users)
	switch {
	case perch.ErrorCode(err) == perch.EBADREQUEST && v.Error == "":
		// A search or cursor the API does not take: said on the page.
		v.Error, status = c.say(err), http.StatusBadRequest
	case err != nil:
		return err
	}
	data.Pager = pagerOf(at, next)
	v.Title, v.Nav, v.Section, v.Data = "Users", "admin", "users", data
	c.render(status, "admin_users", v)
	return nil
}

// AdminUsers lists every user, newest first, searched by address, name or
// id (?q=), a page at a time.
func (d *Dashboard) AdminUsers(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.usersPage(http.StatusOK, view{}, r.URL)
}

// userActions are the changes the Users page's buttons make, and what is
// said when they are made.
var userActions = map[string]struct {
	change map[string]bool
	done   string
}{
	"disable": {map[string]bool{"disabled": true}, "%s is disabled: every sign-in, API token and connection of theirs has ended."},
	"enable":  {map[string]bool{"disabled": false}, "%s is enabled again and may sign in."},
	"grant":   {map[string]bool{"platform_admin": true}, "%s is a platform admin."},
	"revoke":  {map[string]bool{"platform_admin": false}, "%s is no longer a platform admin."},
}

// AdminUpdateUser disables or enables a user, or grants or takes away the
// platform-admin role, and comes back to the list as it was. A refusal
// (the last platform admin, one's own account) is the list's error.
func (d *Dashboard) AdminUpdateUser(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	back := r.PostForm.Get("back")
	if !localPath(back) || !strings.HasPrefix(back, usersPath) {
		back = usersPath
	}
	at, _ := url.Parse(back)
	action, ok := userActions[r.PostForm.Get("action")]
	if !ok {
		return c.usersPage(http.StatusBadRequest, view{Error: "Choose one of the buttons: disable, enable, make admin or remove admin."}, at)
	}
	var u perch.AdminUser
	if err := c.do(http.MethodPatch, "/api/v1/admin/users/"+url.PathEscape(r.PathValue("id")), action.change, &u); err != nil {
		if failed(err) || perch.ErrorCode(err) == perch.EFORBIDDEN {
			return err
		}
		return c.usersPage(perch.HTTPStatus(perch.ErrorCode(err)), view{Error: c.say(err)}, at)
	}
	who := u.Name
	if who == "" {
		who = u.Email
	}
	return c.redirect(back, strings.Replace(action.done, "%s", who, 1))
}

// orgsData is what the Organisations page shows.
type orgsData struct {
	Orgs  []*perch.AdminOrg
	Plans []*perch.AdminPlan
	Q     string
	Pager pager
}

// AdminOrgs lists every organisation, newest first, searched by name, slug
// or id (?q=), a page at a time, and the plans with their subscribers.
func (d *Dashboard) AdminOrgs(w http.ResponseWriter, r *http.Request, c *call) error {
	form := r.URL.Query()
	data := &orgsData{Q: form.Get("q")}
	v := adminView("orgs", "Organisations")
	v.Data = data
	if err := c.do(http.MethodGet, "/api/v1/admin/plans", nil, &data.Plans); err != nil {
		return err
	}
	next, err := c.api.CallPage(r.Context(), withQuery("/api/v1/admin/orgs", apiQuery(form, "q", "cursor", "limit")), &data.Orgs)
	if perch.ErrorCode(err) == perch.EBADREQUEST {
		v.Error = c.say(err)
		c.render(http.StatusBadRequest, "admin_orgs", v)
		return nil
	}
	if err != nil {
		return err
	}
	data.Pager = pagerOf(r.URL, next)
	return c.page("admin_orgs", v)
}

// adminOrgData is what an organisation's admin page shows.
type adminOrgData struct {
	Org      perch.AdminOrgDetail
	Plans    []*perch.AdminPlan
	Statuses []string
	Trial    string // the trial's end as the form shows it (UTC), "" for none
}

// planStatuses are the statuses an admin may set, in the order offered.
var planStatuses = []string{perch.PlanTrialing, perch.PlanActive, perch.PlanPastDue, perch.PlanPaused, perch.PlanCanceled}

// adminOrgPage renders the organisation id's page with status; v's Form,
// when set, is what was typed into its form.
func (c *call) adminOrgPage(status int, v view, id string) error {
	data := &adminOrgData{Statuses: planStatuses}
	if err := c.do(http.MethodGet, "/api/v1/admin/orgs/"+url.PathEscape(id), nil, &data.Org); err != nil {
		return err
	}
	if err := c.do(http.MethodGet, "/api/v1/admin/plans", nil, &data.Plans); err != nil {
		return err
	}
	data.Trial = fieldTime(data.Org.TrialEndsAt)
	if v.Form == nil {
		v.Form = url.Values{"plan": {data.Org.Plan}, "status": {data.Org.Status}, "trial_ends_at": {data.Trial}}
	}
	v.Title, v.Nav, v.Section, v.Data = data.Org.Name, "admin", "orgs", data
	c.render(status, "admin_org", v)
	return nil
}

// AdminOrg shows one organisation: its plan, seats, owners, and a form for
// its plan, status and trial.
func (d *Dashboard) AdminOrg(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.adminOrgPage(http.StatusOK, view{}, r.PathValue("id"))
}

// AdminUpdateOrg sets an organisation's plan and status, and its trial's
// end when that was changed (emptied: no trial end). The trial's end goes
// only when it was changed, as the field shows minutes and would otherwise
// round a stored end to them.
func (d *Dashboard) AdminUpdateOrg(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f, id := r.PostForm, r.PathValue("id")
	in := map[string]any{"plan": f.Get("plan"), "status": f.Get("status")}
	if trial := strings.TrimSpace(f.Get("trial_ends_at")); trial != f.Get("trial_was") {
		in["trial_ends_at"] = nil
		if trial != "" {
			in["trial_ends_at"] = formTime(trial, false)
		}
	}
	var o perch.AdminOrgDetail
	if err := c.do(http.MethodPatch, "/api/v1/admin/orgs/"+url.PathEscape(id), in, &o); err != nil {
		if failed(err) || perch.ErrorCode(err) == perch.EFORBIDDEN || perch.ErrorCode(err) == perch.ENOTFOUND {
			return err
		}
		v := view{Error: c.say(err), Form: f}
		v.Fields = fieldsOf(err)
		return c.adminOrgPage(perch.HTTPStatus(perch.ErrorCode(err)), v, id)
	}
	return c.redirect("/admin/orgs/"+url.PathEscape(id), o.Name+" is saved: the "+o.Plan+" plan, "+strings.ReplaceAll(o.Status, "_", " ")+".")
}
