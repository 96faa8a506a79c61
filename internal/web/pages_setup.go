package web

import (
	"net/http"

	"github.com/perch-dev/perch"
)

// The setup link (docs/DESIGN.md, "Who is verified, who is admin"): perch
// serve, started while no account is a platform admin, logs
// {base}/setup#code=pst_…. The code stays in the fragment, which no request
// carries: the page's script reads it (and keeps it in the tab's
// sessionStorage across a sign-in or sign-up), and puts it into the form
// that asks the signed-in user to confirm.

// setupData is what the setup page shows.
type setupData struct {
	// Needed says that no account is a platform admin, so a link works.
	Needed bool
}

// adminNeeded asks the API whether the server still needs a platform
// admin.
func (c *call) adminNeeded() (bool, error) {
	var s struct {
		AdminNeeded bool `json:"admin_needed"`
	}
	err := c.do(http.MethodGet, "/api/v1/setup", nil, &s)
	return s.AdminNeeded, err
}

// SetupPage is where the setup link lands. Signed out, it offers to sign in
// or sign up and come back (the script keeps the code meanwhile); signed
// in, it asks to confirm who becomes the platform admin, or says that the
// server has one.
func (d *Dashboard) SetupPage(w http.ResponseWriter, r *http.Request, c *call) error {
	v := view{Title: "Set up this server"}
	if !c.signed {
		return c.page("setup", v)
	}
	u, err := c.api.Me(r.Context())
	switch perch.ErrorCode(err) {
	case "":
	case perch.EUNAUTHORIZED:
		c.renew(r.URL.RequestURI())
		return nil
	default:
		return err
	}
	c.user = u
	needed, err := c.adminNeeded()
	if err != nil {
		return err
	}
	v.Data = setupData{Needed: needed}
	return c.page("setup", v)
}

// RedeemSetup makes the signed-in user the platform admin with the code
// the page's script put in the form, and goes on to the Admin section.
func (d *Dashboard) RedeemSetup(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	err := c.do(http.MethodPost, "/api/v1/setup/admin", map[string]string{"code": r.PostForm.Get("code")}, nil)
	if err == nil {
		return c.redirect("/admin", "You are now the platform admin of this server.")
	}
	needed, nerr := c.adminNeeded()
	if nerr != nil {
		return nerr
	}
	return c.formError("setup", view{Title: "Set up this server", Data: setupData{Needed: needed}}, err)
}
