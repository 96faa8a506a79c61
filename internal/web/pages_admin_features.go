package web

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/perch-dev/perch"
)

// featuresData is what the Features page shows.
type featuresData struct {
	Flags []*perch.FeatureFlag
	// Failed is the key of the flag whose form was refused, and Form which
	// of its forms it was ("flag" or "override"): that form shows the
	// problems and what was typed.
	Failed, Form string
}

// featuresPage renders the Features page with status, v saying what went
// wrong with the form of the flag failed, if anything.
func (c *call) featuresPage(status int, v view, failed, form string) error {
	data := &featuresData{Failed: failed, Form: form}
	if err := c.do(http.MethodGet, "/api/v1/admin/features", nil, &data.Flags); err != nil {
		return err
	}
	v.Title, v.Nav, v.Section, v.Data = "Features", "admin", "features", data
	c.render(status, "admin_features", v)
	return nil
}

// AdminFeatures shows every feature flag: its default, its rollout and its
// overrides per organisation, with forms to change them.
func (d *Dashboard) AdminFeatures(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.featuresPage(http.StatusOK, view{}, "", "")
}

// changeFeature sends a change of the flag key from its form (see
// featuresData.Form) and comes back to the page, at its top, where the
// message is; a refusal is shown on the page, by the form.
func (c *call) changeFeature(key, form string, in map[string]any, done string) error {
	err := c.do(http.MethodPatch, "/api/v1/admin/features/"+url.PathEscape(key), in, nil)
	if err == nil {
		return c.redirect("/admin/features", done)
	}
	if failed(err) || perch.ErrorCode(err) == perch.EFORBIDDEN || perch.ErrorCode(err) == perch.ENOTFOUND {
		return err
	}
	v := view{Error: c.say(err), Form: c.r.PostForm}
	var pe *perch.Error
	if errors.As(err, &pe) {
		v.Fields = map[string]string{}
		for field, problem := range pe.Fields {
			// An override's organisation is the add form's.
			if strings.HasPrefix(field, "org_overrides") {
				field = "org_id"
			}
			v.Fields[field] = problem
		}
	}
	return c.featuresPage(perch.HTTPStatus(perch.ErrorCode(err)), v, key, form)
}

// AdminUpdateFeature sets a flag's default and rollout percentage.
func (d *Dashboard) AdminUpdateFeature(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	key := r.PathValue("key")
	in := map[string]any{"enabled": r.PostForm.Get("enabled") == "on"}
	// A percentage that is no whole number goes as it was typed, for the
	// API to refuse in its words.
	typed := strings.TrimSpace(r.PostForm.Get("rollout_percent"))
	if n, err := strconv.Atoi(typed); err == nil {
		in["rollout_percent"] = n
	} else {
		in["rollout_percent"] = typed
	}
	return c.changeFeature(key, "flag", in, key+" is saved.")
}

// overrides are the flag key's overrides as they are now.
func (c *call) overrides(key string) ([]perch.FeatureOverride, error) {
	var flags []*perch.FeatureFlag
	if err := c.do(http.MethodGet, "/api/v1/admin/features", nil, &flags); err != nil {
		return nil, err
	}
	for _, f := range flags {
		if f.Key == key {
			return f.OrgOverrides, nil
		}
	}
	return nil, perch.Errorf(perch.ENOTFOUND, "There is no feature flag %q.", key)
}

// AdminSetOverride turns a flag on or off for one organisation, in place of
// its override if it had one. The API takes the whole list, so the page
// sends the list as it is with this one changed.
func (d *Dashboard) AdminSetOverride(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	key := r.PathValue("key")
	list, err := c.overrides(key)
	if err != nil {
		return err
	}
	o := perch.FeatureOverride{OrgID: strings.TrimSpace(r.PostForm.Get("org_id")), Enabled: r.PostForm.Get("override") == "on"}
	list = slices.DeleteFunc(list, func(x perch.FeatureOverride) bool { return x.OrgID == o.OrgID })
	list = append(list, o)
	state := "off"
	if o.Enabled {
		state = "on"
	}
	return c.changeFeature(key, "override", map[string]any{"org_overrides": list}, key+" is "+state+" for the organisation "+o.OrgID+".")
}

// AdminRemoveOverride takes an organisation's override away: the flag's
// default and rollout decide for it again.
func (d *Dashboard) AdminRemoveOverride(w http.ResponseWriter, r *http.Request, c *call) error {
	key, org := r.PathValue("key"), r.PathValue("orgId")
	list, err := c.overrides(key)
	if err != nil {
		return err
	}
	list = slices.DeleteFunc(list, func(x perch.FeatureOverride) bool { return x.OrgID == org })
	if list == nil {
		list = []perch.FeatureOverride{}
	}
	return c.changeFeature(key, "override", map[string]any{"org_overrides": list}, "The override of "+org+" is removed from "+key+".")
}
