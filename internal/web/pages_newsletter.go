package web

import (
	"net/http"
	"net/url"
)

// SetNewsletter turns the newsletter on or off for the signed-in user.
func (d *Dashboard) SetNewsletter(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	on := r.PostForm.Get("newsletter") == "on"
	if err := c.do(http.MethodPatch, "/api/v1/users/me", map[string]any{"newsletter": on}, nil); err != nil {
		v, verr := c.profileView()
		if verr != nil {
			return err
		}
		return c.formError("profile", v, err)
	}
	msg := "You have left the newsletter."
	if on {
		msg = "You will get Perch's newsletter."
		if !c.user.EmailVerified {
			msg += " It starts once your address is confirmed."
		}
	}
	return c.redirect("/profile", msg)
}

// UnsubscribePage is where a newsletter's link lands: it asks before it
// unsubscribes, since link scanners open links.
func (d *Dashboard) UnsubscribePage(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.page("unsubscribe", view{Title: "Leave the newsletter", Form: url.Values{"token": {r.URL.Query().Get("token")}}})
}

// Unsubscribe takes the link's address off the newsletter, signed in or
// not: the link's token is the credential.
func (d *Dashboard) Unsubscribe(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	var out struct {
		Email string `json:"email"`
	}
	path := "/api/v1/newsletter/unsubscribe?token=" + url.QueryEscape(r.PostForm.Get("token"))
	if err := c.do(http.MethodPost, path, nil, &out); err != nil {
		return c.formError("unsubscribe", view{Title: "Leave the newsletter"}, err)
	}
	return c.page("unsubscribe", view{Title: "You have left the newsletter", Data: map[string]string{"email": out.Email}})
}
