package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/perch-dev/perch"
)

// Single sign-on (SAML): the sign-in page's way to an organisation's
// identity provider, and the owners' page that sets it up.

// SSOSignInPage asks for a work address (or the organisation's short name)
// to find its single sign-on.
func (d *Dashboard) SSOSignInPage(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.page("signin_sso", view{Title: "Sign in with SSO", Form: url.Values{"next": {safeNext(r.URL.Query().Get("next"))}}})
}

// SSOSignIn finds the organisation and sends the browser to its sign-in,
// which goes on to the identity provider.
func (d *Dashboard) SSOSignIn(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	in := map[string]string{"redirect": safeNext(f.Get("next"))}
	if who := strings.TrimSpace(f.Get("who")); strings.Contains(who, "@") {
		in["email"] = who
	} else {
		in["org"] = who
	}
	var found struct {
		LoginURL string `json:"login_url"`
	}
	if err := c.do(http.MethodPost, "/api/v1/auth/saml/discover", in, &found); err != nil {
		if pe := fieldsOf(err); pe != nil {
			err = &perch.Error{Code: perch.EVALIDATION, Message: "Enter your work e-mail address or your organisation's short name.",
				Fields: map[string]string{"who": "is required"}}
		}
		return c.formError("signin_sso", view{Title: "Sign in with SSO"}, err)
	}
	// The API names its own sign-in address; only its path and query are
	// followed, so the dashboard never sends a browser off the site.
	u, err := url.Parse(found.LoginURL)
	if err != nil || !localPath(u.RequestURI()) {
		return perch.Errorf(perch.EINTERNAL, "discovery answered %q", found.LoginURL)
	}
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
	return nil
}

// ssoData is what the single sign-on page shows.
type ssoData struct {
	Config perch.SAMLConfig
	Test   *struct {
		OK       bool     `json:"ok"`
		Problems []string `json:"problems"`
	}
	Checks []struct {
		Domain   string `json:"domain"`
		Verified bool   `json:"verified"`
		Problem  string `json:"problem"`
	}
	SCIMToken string // just made: shown this once
	Failed    bool   // the settings form was refused; v.Form is what was typed
}

// ssoPage renders the page with status.
func (c *call) ssoPage(status int, v view, data *ssoData) error {
	if err := c.do(http.MethodGet, "/api/v1/org/saml", nil, &data.Config); err != nil {
		return err
	}
	if !data.Failed {
		cfg := data.Config
		var domains []string
		for _, d := range cfg.Domains {
			domains = append(domains, d.Domain)
		}
		v.Form = url.Values{"idp_metadata_xml": {cfg.IDPMetadataXML}, "idp_metadata_url": {cfg.IDPMetadataURL},
			"default_role": {cfg.DefaultRole}, "email_attribute": {cfg.EmailAttribute}, "domains": {strings.Join(domains, ", ")}}
		for name, on := range map[string]bool{"enabled": cfg.Enabled, "enforce": cfg.Enforce, "jit_provisioning": cfg.JITProvisioning, "allow_idp_initiated": cfg.AllowIDPInitiated} {
			if on {
				v.Form.Set(name, "on")
			}
		}
	}
	v.Title, v.Nav, v.Data = "Single sign-on", "org", data
	c.render(status, "org_sso", v)
	return nil
}

// OrgSSO shows the organisation's single sign-on to its owners: what to
// enter at the identity provider, the settings, and the SCIM token.
func (d *Dashboard) OrgSSO(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.ssoPage(http.StatusOK, view{}, &ssoData{})
}

// SaveOrgSSO stores the settings. A URL, when given, is fetched by the
// server in place of the pasted metadata.
func (d *Dashboard) SaveOrgSSO(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	in := map[string]any{"enabled": f.Get("enabled") == "on", "enforce": f.Get("enforce") == "on",
		"jit_provisioning": f.Get("jit_provisioning") == "on", "allow_idp_initiated": f.Get("allow_idp_initiated") == "on",
		"default_role": f.Get("default_role"), "email_attribute": f.Get("email_attribute"),
		"domains": strings.FieldsFunc(f.Get("domains"), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })}
	if u := strings.TrimSpace(f.Get("idp_metadata_url")); u != "" {
		in["idp_metadata_url"] = u
	} else {
		in["idp_metadata_xml"] = f.Get("idp_metadata_xml")
	}
	if err := c.do(http.MethodPut, "/api/v1/org/saml", in, nil); err != nil {
		switch perch.ErrorCode(err) {
		case perch.EINTERNAL, perch.EFORBIDDEN:
			return err
		}
		return c.ssoPage(perch.HTTPStatus(perch.ErrorCode(err)), view{Error: c.say(err), Fields: fieldsOf(err), Form: f}, &ssoData{Failed: true})
	}
	return c.redirect("/org/sso", "The single sign-on settings are saved.")
}

// TestOrgSSO checks the stored settings and shows what stands in the way.
func (d *Dashboard) TestOrgSSO(w http.ResponseWriter, r *http.Request, c *call) error {
	data := &ssoData{}
	if err := c.do(http.MethodPost, "/api/v1/org/saml/test", nil, &data.Test); err != nil {
		return err
	}
	return c.ssoPage(http.StatusOK, view{}, data)
}

// VerifyOrgSSODomains looks up the domains' DNS records now.
func (d *Dashboard) VerifyOrgSSODomains(w http.ResponseWriter, r *http.Request, c *call) error {
	data := &ssoData{}
	if err := c.do(http.MethodPost, "/api/v1/org/saml/domains/verify", nil, &data.Checks); err != nil {
		return err
	}
	return c.ssoPage(http.StatusOK, view{}, data)
}

// CreateOrgSCIMToken makes a new SCIM token and shows it this once.
func (d *Dashboard) CreateOrgSCIMToken(w http.ResponseWriter, r *http.Request, c *call) error {
	var made struct {
		Token string `json:"token"`
	}
	if err := c.do(http.MethodPost, "/api/v1/org/saml/scim-token", nil, &made); err != nil {
		return err
	}
	return c.ssoPage(http.StatusOK, view{}, &ssoData{SCIMToken: made.Token})
}

// DeleteOrgSSO removes the settings.
func (d *Dashboard) DeleteOrgSSO(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := c.do(http.MethodDelete, "/api/v1/org/saml", nil, nil); err != nil {
		return err
	}
	return c.redirect("/org/sso", "Single sign-on is removed; members sign in with their passwords.")
}
