package web

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/perch-dev/perch"
)

// emailData is what the E-mail page shows.
type emailData struct {
	Config perch.EmailConfig
	// Test is the verdict of the test message just sent, if one was.
	Test *struct {
		OK      bool   `json:"ok"`
		Message string `json:"message"`
	}
	Failed string // the form refused: "settings" or "test"
}

// emailPage renders the E-mail page with status; v's Form, when set, is
// what was typed into the form data.Failed names.
func (c *call) emailPage(status int, v view, data *emailData) error {
	if err := c.do(http.MethodGet, "/api/v1/admin/email-config", nil, &data.Config); err != nil {
		return err
	}
	cfg := data.Config
	if data.Failed != "settings" {
		port := ""
		if cfg.Port > 0 {
			port = strconv.Itoa(cfg.Port)
		}
		if v.Form == nil {
			v.Form = map[string][]string{}
		}
		for k, val := range map[string]string{"host": cfg.Host, "port": port, "username": cfg.Username, "from": cfg.From, "tls": cfg.TLS} {
			v.Form.Set(k, val)
		}
	}
	if data.Failed != "test" && v.Form.Get("to") == "" {
		v.Form.Set("to", c.user.Email)
	}
	v.Title, v.Nav, v.Section, v.Data = "E-mail", "admin", "email", data
	c.render(status, "admin_email", v)
	return nil
}

// AdminEmail shows the SMTP settings in force, where they come from, and
// forms to change them and to send a test message.
func (d *Dashboard) AdminEmail(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.emailPage(http.StatusOK, view{}, &emailData{})
}

// mailRefusal renders the E-mail page with a refusal of the form failed:
// the problems by their fields, what was typed kept (but not the
// password). A server without a secret key answers 503 with what to set,
// which is the admin's to act on, so it is shown too.
func (c *call) mailRefusal(err error, failed string) error {
	if perch.ErrorCode(err) == perch.EINTERNAL || perch.ErrorCode(err) == perch.EFORBIDDEN {
		return err
	}
	v := view{Error: c.say(err), Fields: fieldsOf(err), Form: c.r.PostForm}
	v.Form.Del("password")
	return c.emailPage(perch.HTTPStatus(perch.ErrorCode(err)), v, &emailData{Failed: failed})
}

// AdminSaveEmail stores the SMTP settings, which take effect with the next
// message. An empty password keeps the stored one; "Remove the password"
// removes it.
func (d *Dashboard) AdminSaveEmail(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	in := map[string]any{"host": f.Get("host"), "username": f.Get("username"), "from": f.Get("from"), "tls": f.Get("tls")}
	// A port that is no number goes as it was typed, for the API to
	// refuse in its words.
	if port, err := strconv.Atoi(strings.TrimSpace(f.Get("port"))); err == nil {
		in["port"] = port
	} else {
		in["port"] = f.Get("port")
	}
	switch {
	case f.Get("password") != "":
		in["password"] = f.Get("password")
	case f.Get("remove_password") == "on":
		in["password"] = ""
	}
	if err := c.do(http.MethodPut, "/api/v1/admin/email-config", in, nil); err != nil {
		return c.mailRefusal(err, "settings")
	}
	return c.redirect("/admin/email", "The e-mail settings are saved; the next message goes with them.")
}

// AdminTestEmail sends a test message with the settings in force, and
// shows what the SMTP server said.
func (d *Dashboard) AdminTestEmail(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	data := &emailData{}
	if err := c.do(http.MethodPost, "/api/v1/admin/email-config/test", map[string]string{"to": r.PostForm.Get("to")}, &data.Test); err != nil {
		return c.mailRefusal(err, "test")
	}
	return c.emailPage(http.StatusOK, view{Form: map[string][]string{"to": {r.PostForm.Get("to")}}}, data)
}

// newsletterData is what the Newsletter page shows.
type newsletterData struct {
	Subscribers int                 `json:"subscribers"`
	Items       []*perch.Subscriber `json:"items"`
	Pager       pager               `json:"-"`
}

// newsletterPage renders the Newsletter page with status and v.
func (c *call) newsletterPage(status int, v view) error {
	data := &newsletterData{}
	next, err := c.api.CallPage(c.r.Context(), withQuery("/api/v1/admin/newsletter", apiQuery(c.r.URL.Query(), "cursor", "limit")), data)
	if err != nil {
		return err
	}
	data.Pager = pagerOf(c.r.URL, next)
	v.Title, v.Nav, v.Section, v.Data = "Newsletter", "admin", "newsletter", data
	c.render(status, "admin_newsletter", v)
	return nil
}

// AdminNewsletter shows how many take the newsletter and who, a page at a
// time, with a form to send an issue.
func (d *Dashboard) AdminNewsletter(w http.ResponseWriter, r *http.Request, c *call) error {
	return c.newsletterPage(http.StatusOK, view{})
}

// AdminSendNewsletter sends an issue to every subscriber; the messages go
// out in the background.
func (d *Dashboard) AdminSendNewsletter(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	in := map[string]string{"subject": r.PostForm.Get("subject"), "body": r.PostForm.Get("body")}
	var out struct {
		Queued int `json:"queued"`
	}
	if err := c.do(http.MethodPost, "/api/v1/admin/newsletter", in, &out); err != nil {
		if perch.ErrorCode(err) == perch.EINTERNAL || perch.ErrorCode(err) == perch.EFORBIDDEN {
			return err
		}
		return c.newsletterPage(perch.HTTPStatus(perch.ErrorCode(err)), view{Error: c.say(err), Fields: fieldsOf(err), Form: r.PostForm})
	}
	return c.redirect("/admin/newsletter", "“"+strings.TrimSpace(in["subject"])+"” is on its way to "+plural(out.Queued, "subscriber", "subscribers")+".")
}

// AdminNewsletterCSV downloads every subscriber as CSV. The API exports
// when asked by Accept, which a link cannot set, so this page asks it and
// passes the answer on as it comes: the export is streamed, not held.
func (d *Dashboard) AdminNewsletterCSV(w http.ResponseWriter, r *http.Request, c *call) error {
	req := r.Clone(r.Context())
	req.URL.Path, req.URL.RawQuery = "/api/v1/admin/newsletter", ""
	req.RequestURI = req.URL.RequestURI()
	req.Header.Set("Accept", "text/csv")
	ew := &exportWriter{w: w, header: http.Header{}}
	d.api.ServeHTTP(ew, req)
	return ew.err()
}

// exportWriter passes a successful answer of the API on to the browser as
// it is written, and keeps an error answer for the dashboard to show as a
// page.
type exportWriter struct {
	w      http.ResponseWriter
	header http.Header
	status int
	failed bytes.Buffer
}

func (e *exportWriter) Header() http.Header { return e.header }

func (e *exportWriter) WriteHeader(status int) {
	if e.status != 0 {
		return
	}
	e.status = status
	if status < 300 {
		for k, v := range e.header {
			e.w.Header()[k] = v
		}
		e.w.WriteHeader(status)
	}
}

func (e *exportWriter) Write(p []byte) (int, error) {
	e.WriteHeader(http.StatusOK)
	if e.status < 300 {
		return e.w.Write(p)
	}
	if e.failed.Len() > 64<<10 {
		return len(p), nil // an error is short; the rest is not kept
	}
	return e.failed.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (e *exportWriter) Unwrap() http.ResponseWriter { return e.w }

// err is the API's error, when it answered one.
func (e *exportWriter) err() error {
	if e.status < 300 {
		return nil
	}
	var body struct {
		Error *perch.Error `json:"error"`
	}
	if json.Unmarshal(e.failed.Bytes(), &body) != nil || body.Error == nil || body.Error.Code == "" {
		return perch.Errorf(perch.EINTERNAL, "The export answered %d.", e.status)
	}
	return body.Error
}

// plural counts a thing in words: "1 subscriber", "3 subscribers".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
