package web

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
)

// Home sends the browser to the feed, or to sign in.
func (d *Dashboard) Home(w http.ResponseWriter, r *http.Request, c *call) error {
	if c.signed {
		return c.redirect("/notifications", "")
	}
	return c.redirect("/signin", "")
}

// SignInPage shows the sign-in form; a signed-in visitor goes straight on.
func (d *Dashboard) SignInPage(w http.ResponseWriter, r *http.Request, c *call) error {
	next := safeNext(r.URL.Query().Get("next"))
	if c.signed {
		_, err := c.api.Me(r.Context())
		switch perch.ErrorCode(err) {
		case "":
			return c.redirect(next, "")
		case perch.EUNAUTHORIZED:
			c.renew(next)
			return nil
		}
	}
	return c.page("signin", view{Title: "Sign in", Error: shownError(r), Form: url.Values{"next": {next}, "email": {r.URL.Query().Get("email")}}})
}

// shownError is the message a redirect brought in ?error= (a sign-in with
// GitHub or Google that did not succeed): single-line text, cut to 500
// characters; the template escapes it.
func shownError(r *http.Request) string {
	msg := strings.TrimSpace(perch.CleanText(r.URL.Query().Get("error"), perch.SingleLine))
	if runes := []rune(msg); len(runes) > 500 {
		msg = string(runes[:500]) + "…"
	}
	return msg
}

// SignIn signs in with an address and a password.
func (d *Dashboard) SignIn(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	s, err := c.api.Login(r.Context(), r.PostForm.Get("email"), r.PostForm.Get("password"))
	if err != nil {
		return c.formError("signin", view{Title: "Sign in"}, err)
	}
	c.setSession(s.AccessToken, s.RefreshToken)
	return c.redirect(safeNext(r.PostForm.Get("next")), "")
}

// signUpData is what the sign-up form knows of the invitation it joins
// through, if any.
type signUpData struct {
	Invitation *perch.InvitationPreview
}

// SignUpPage shows the registration form. With a live invitation the form
// names the organisation and has the invited address filled in, read-only:
// only that address may join with it. With a dead one it says so and
// makes an account of one's own.
func (d *Dashboard) SignUpPage(w http.ResponseWriter, r *http.Request, c *call) error {
	q := r.URL.Query()
	v := view{Title: "Create your account", Form: url.Values{
		"invitation_token": {q.Get("invitation_token")}, "email": {q.Get("email")}, "next": {safeNext(q.Get("next"))},
	}}
	if token := q.Get("invitation_token"); token != "" {
		inv, dead, err := c.invitation(token)
		if err != nil {
			return err
		}
		if inv == nil {
			v.Error = dead + " You can still create an account of your own."
			v.Form.Del("invitation_token")
		} else {
			v.Form.Set("email", inv.Email)
		}
		v.Data = signUpData{Invitation: inv}
	}
	return c.page("signup", v)
}

// SignUp creates an account and signs in.
func (d *Dashboard) SignUp(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	in := map[string]string{"name": f.Get("name"), "email": f.Get("email"), "password": f.Get("password")}
	if t := f.Get("invitation_token"); t != "" {
		in["invitation_token"] = t
	}
	var s client.Session
	if err := c.do(http.MethodPost, "/api/v1/auth/register", in, &s); err != nil {
		v := view{Title: "Create your account"}
		if t := f.Get("invitation_token"); t != "" {
			inv, _, _ := c.invitation(t) // the form as it was shown, if the link still lives
			v.Data = signUpData{Invitation: inv}
		}
		return c.formError("signup", v, err)
	}
	c.setSession(s.AccessToken, s.RefreshToken)
	msg := "Welcome to Perch! " + c.mailed("a link to confirm your address", s.User.Email)
	if s.User.EmailVerified {
		msg = "Welcome to Perch!"
	}
	return c.redirect(safeNext(f.Get("next")), msg)
}

// ForgotPasswordPage asks for the address to send a reset link to.
func (d *Dashboard) ForgotPasswordPage(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.page("forgot", view{Title: "Reset your password"})
}

// ForgotPassword sends the link; the answer is the same whether or not the
// address has an account.
func (d *Dashboard) ForgotPassword(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	if err := c.do(http.MethodPost, "/api/v1/auth/forgot-password", map[string]string{"email": r.PostForm.Get("email")}, nil); err != nil {
		return c.formError("forgot", view{Title: "Reset your password"}, err)
	}
	return c.page("forgot", view{Title: "Reset your password", Data: map[string]string{"sent": r.PostForm.Get("email")}})
}

// ResetPasswordPage is where the mailed link lands.
func (d *Dashboard) ResetPasswordPage(w http.ResponseWriter, r *http.Request, c *call) error {
	token := r.URL.Query().Get("token")
	v := view{Title: "Choose a new password", Form: url.Values{"token": {token}}}
	if token == "" {
		v.Data = resetLink{Dead: "This link is incomplete: open the whole link from the mail, or ask for a new one."}
		c.render(http.StatusBadRequest, "reset", v)
		return nil
	}
	// Asked first, so that a used or expired link says so before anyone
	// types a new password into it.
	var ok struct {
		Email string `json:"email"`
	}
	err := c.do(http.MethodPost, "/api/v1/auth/reset-password/check", map[string]string{"token": token}, &ok)
	switch perch.ErrorCode(err) {
	case "":
		v.Data = resetLink{Email: ok.Email}
	case perch.EBADREQUEST:
		v.Data = resetLink{Dead: deadResetLink}
		c.render(http.StatusBadRequest, "reset", v)
		return nil
	default:
		return err
	}
	return c.page("reset", v)
}

const deadResetLink = "This link was already used or has expired. Ask for a new one: it comes by mail and works for an hour."

// resetLink is what the reset page knows of its link: the address it
// resets, or why it cannot.
type resetLink struct {
	Email, Dead string
}

// ResetPassword sets the new password; every session ends.
func (d *Dashboard) ResetPassword(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	in := map[string]string{"token": r.PostForm.Get("token"), "password": r.PostForm.Get("password")}
	if err := c.do(http.MethodPost, "/api/v1/auth/reset-password", in, nil); err != nil {
		v := view{Title: "Choose a new password", Data: resetLink{}}
		// The link died while the page was open (used in another tab, or
		// an hour passed): say so, rather than show a form that cannot work.
		if pe, ok := errors.AsType[*perch.Error](err); ok && pe.Code == perch.EBADREQUEST && len(pe.Fields) == 0 {
			v.Data = resetLink{Dead: deadResetLink}
		}
		return c.formError("reset", v, err)
	}
	c.signOut()
	return c.redirect("/signin", "Your password is changed. Sign in with the new one.")
}

// VerifyEmailPage is where the confirmation link lands: one click confirms
// (a link alone does not, so that mail scanners that follow links do not).
func (d *Dashboard) VerifyEmailPage(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.page("verify", view{Title: "Confirm your address", Form: url.Values{"token": {r.URL.Query().Get("token")}}})
}

// VerifyEmail confirms the address.
func (d *Dashboard) VerifyEmail(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	var u perch.User
	if err := c.do(http.MethodPost, "/api/v1/auth/verify-email", map[string]string{"token": r.PostForm.Get("token")}, &u); err != nil {
		return c.formError("verify", view{Title: "Confirm your address"}, err)
	}
	next := "/signin?email=" + url.QueryEscape(u.Email)
	if c.signed {
		next = "/profile"
	}
	return c.redirect(next, "Thank you: "+u.Email+" is confirmed.")
}

// invitationData is what the page an invitation link opens shows.
type invitationData struct {
	Here       string                   // the page's own address, to come back to after signing in
	Invitation *perch.InvitationPreview // nil when the link is not live
	Dead       string                   // why, when it is not
	// Elsewhere says that the signed-in user is not the invited address,
	// which alone may accept.
	Elsewhere bool
}

// invitation asks the API what the invitation link token is for. A link
// that is not live is no error: dead says so, for people.
func (c *call) invitation(token string) (inv *perch.InvitationPreview, dead string, err error) {
	if token == "" {
		return nil, "This invitation link is incomplete: open the whole link from the mail, or ask for a new one.", nil
	}
	err = c.do(http.MethodPost, "/api/v1/auth/invitation/check", map[string]string{"token": token}, &inv)
	switch perch.ErrorCode(err) {
	case "":
		return inv, "", nil
	case perch.EBADREQUEST:
		return nil, "This invitation link is invalid, has expired or was used already: ask whoever invited you for a new one.", nil
	}
	return nil, "", err
}

// AcceptInvitationPage is where an invitation link lands: it names the
// organisation, who invited and the role (only for a live link: the link
// is the credential); a signed-in user with the invited address joins with
// one click; others sign up or sign in first.
func (d *Dashboard) AcceptInvitationPage(w http.ResponseWriter, r *http.Request, c *call) error {
	token := r.URL.Query().Get("token")
	v := view{Title: "Join an organisation", Form: url.Values{"token": {token}}}
	if c.signed {
		u, err := c.api.Me(r.Context())
		if perch.ErrorCode(err) == perch.EUNAUTHORIZED {
			c.renew(r.URL.RequestURI())
			return nil
		}
		c.user = u
	}
	data, err := c.invitationData(token, r.URL.RequestURI())
	if err != nil {
		return err
	}
	v.Data = data
	if data.Invitation == nil {
		c.render(http.StatusBadRequest, "invitation", v)
		return nil
	}
	return c.page("invitation", v)
}

// invitationData is what the invitation page shows for the link token.
func (c *call) invitationData(token, here string) (*invitationData, error) {
	inv, dead, err := c.invitation(token)
	if err != nil {
		return nil, err
	}
	data := &invitationData{Here: here, Invitation: inv, Dead: dead}
	data.Elsewhere = inv != nil && c.user != nil && perch.NormalizeEmail(c.user.Email) != perch.NormalizeEmail(inv.Email)
	return data, nil
}

// AcceptInvitation joins the signed-in user to the inviting organisation.
func (d *Dashboard) AcceptInvitation(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	token := r.PostForm.Get("token")
	var org perch.Org
	if err := c.do(http.MethodPost, "/api/v1/org/invitations/accept", map[string]string{"token": token}, &org); err != nil {
		data, derr := c.invitationData(token, invitationPath(token))
		if derr != nil {
			return derr
		}
		return c.formError("invitation", view{Title: "Join an organisation", Data: data}, err)
	}
	return c.redirect("/org", "Welcome aboard: you have joined "+org.Name+".")
}

// invitationPath is the page an invitation link opens.
func invitationPath(token string) string {
	return "/invitations/accept?token=" + url.QueryEscape(token)
}

// DevicePage asks the signed-in user to approve a desktop sign-in. It
// shows what the app calls itself, when and from where it asked, and asks
// for the code the app shows; it never shows that code, which the person
// must read off their own app (docs/DESIGN.md, "Desktop sign-in: threat
// model").
func (d *Dashboard) DevicePage(w http.ResponseWriter, r *http.Request, c *call) error {
	v, err := deviceView(c, r.URL.Query().Get("session_id"))
	if err != nil {
		return err
	}
	return c.page("device", v)
}

// AnswerDevice approves (with the code typed, if any) or denies the
// sign-in through the API, and sends the browser on to the app's loopback
// callback; a wrong code shows the page again with the problem.
func (d *Dashboard) AnswerDevice(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	id := f.Get("session_id")
	var approve bool
	switch f.Get("action") {
	case "", "approve":
		approve = true
	case "deny":
	default:
		return perch.Errorf(perch.EBADREQUEST, "Choose Approve or Deny.")
	}
	ans, err := c.api.AnswerDevice(r.Context(), id, approve, f.Get("user_code"))
	if err != nil {
		v, verr := deviceView(c, id)
		if verr != nil {
			return err
		}
		return c.formError("device", v, err)
	}
	// The address comes from the API, which only ever names the loopback
	// callback; the dashboard must not become a redirector if it did not.
	if !loopbackCallback(ans.RedirectURL) {
		return fmt.Errorf("device sign-in: the API answered with the redirect %q", ans.RedirectURL)
	}
	http.Redirect(w, r, ans.RedirectURL, http.StatusSeeOther)
	return nil
}

// deviceView is the approval page of the sign-in id.
func deviceView(c *call, id string) (view, error) {
	if strings.TrimSpace(id) == "" {
		return view{}, perch.Errorf(perch.EBADREQUEST, "This link names no sign-in request; start again from the app.")
	}
	req, err := c.api.DeviceRequest(c.r.Context(), id)
	if err != nil {
		return view{}, err
	}
	return view{Title: "Sign in to the Perch app", Form: url.Values{"session_id": {id}}, Data: req}, nil
}
