// Package web is the dashboard: server-rendered pages (html/template, with
// embedded templates and assets) for everything a person manages in Perch.
//
// The dashboard is a client of the JSON API, in-process: every page reads
// and changes data through the same endpoints, with the same authorization
// and validation, as the CLI and the tray do. It only renders, and keeps the
// signed-in session in cookies.
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
)

const flashCookie = "perch_flash"

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

// Options are what the dashboard needs.
type Options struct {
	API     http.Handler // the JSON API, called in-process
	BaseURL string       // public address, for links, receiver URLs and cookie security
	Logger  *slog.Logger
	Regions []perch.Region // every region, this one marked current; the sign-in page offers the others
	// MailOutbox says that no SMTP server is set: mail waits in the outbox
	// for the operator (perch admin outbox), and pages do not say it was sent.
	MailOutbox bool
	// MailOutboxNow, when set, is asked instead of MailOutbox on each page:
	// an admin's e-mail settings may set a server while Perch runs.
	MailOutboxNow func(context.Context) bool
	// AnonymousBroadcast says that deliveries without a token are broadcast
	// to everyone (server.Options.AnonymousBroadcast); platform admins are told.
	AnonymousBroadcast bool
	// GitHubSigned and PagerDutySigned say that the server checks those
	// senders' signatures, so the Webhooks page's example signs its body.
	GitHubSigned, PagerDutySigned bool
	// SignInProviders are the sign-in providers the server is configured
	// for (server.Server.SignInProviders: github, google); the sign-in and
	// sign-up pages offer them, and the profile links them.
	SignInProviders []string
	// Billing says that a payment provider is configured: the billing
	// page offers checkout and the portal, and the pages warn of a trial
	// about to end or a failed payment.
	Billing bool
	// Now is the clock, the server's (tests set one); nil is time.Now.
	Now func() time.Time
}

// Dashboard serves the pages; routes.go lists them.
type Dashboard struct {
	mux       *http.ServeMux
	api       http.Handler
	base      string
	secure    bool // cookies only over https
	log       *slog.Logger
	pages     map[string]*template.Template
	assets    fs.FS
	origins   *http.CrossOriginProtection
	csp       string         // the pages' Content-Security-Policy
	elsewhere []perch.Region // the other regions
	outbox    bool           // no SMTP server: mail waits for the operator
	outboxNow func(context.Context) bool
	broadcast bool            // token-less deliveries are broadcast
	signed    map[string]bool // senders whose signatures the server checks
	providers []signInProvider
	billing   bool // a payment provider is configured
	now       func() time.Time
}

// signInProvider is a sign-in provider as the pages offer it.
type signInProvider struct {
	Name  string // github, google: the API's path
	Title string // GitHub, Google
}

// New parses the templates; a template that does not parse is a bug, and
// panics at start-up rather than on a visit.
func New(o Options) *Dashboard {
	d := &Dashboard{
		mux:       http.NewServeMux(),
		api:       o.API,
		base:      strings.TrimRight(o.BaseURL, "/"),
		secure:    strings.HasPrefix(o.BaseURL, "https://"),
		log:       o.Logger,
		pages:     map[string]*template.Template{},
		origins:   http.NewCrossOriginProtection(),
		outbox:    o.MailOutbox,
		outboxNow: o.MailOutboxNow,
		broadcast: o.AnonymousBroadcast,
		signed:    map[string]bool{perch.SenderCodeHost: o.GitHubSigned, perch.SenderIncidents: o.PagerDutySigned},
		billing:   o.Billing,
		now:       o.Now,
	}
	if d.now == nil {
		d.now = time.Now
	}
	for _, p := range o.SignInProviders {
		d.providers = append(d.providers, signInProvider{Name: p, Title: perch.ProviderTitle(p)})
	}
	// The feed's WebSocket is on this server: browsers before CSP level 3
	// do not count ws(s):// of the page's own host as 'self', so it is named.
	connect := "'self'"
	if u, err := url.Parse(d.base); err == nil && u.Host != "" {
		d.origins.AddTrustedOrigin(u.Scheme + "://" + u.Host)
		ws := "ws://"
		if u.Scheme == "https" {
			ws = "wss://"
		}
		connect += " " + ws + u.Host
	}
	// Notifications' icons are https images of their senders' (DESIGN.md,
	// "The rich notification in the dashboard and the tray").
	d.csp = "default-src 'self'; img-src 'self' data: https:; connect-src " + connect + "; frame-ancestors 'none'; form-action 'self' http://127.0.0.1:*"
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html"))
	names, _ := fs.Glob(templateFiles, "templates/*.html")
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		d.pages[base] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, name))
	}
	d.assets, _ = fs.Sub(assetFiles, "assets")
	for _, r := range o.Regions {
		if !r.Current {
			d.elsewhere = append(d.elsewhere, r)
		}
	}
	d.routes()
	return d
}

// ServeHTTP serves one page request.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { d.mux.ServeHTTP(w, r) }

// checkOrigin refuses a state-changing request from another site: the
// browser sends the session cookie along, so the cookie alone proves
// nothing.
func (d *Dashboard) checkOrigin(r *http.Request) error {
	if err := d.origins.Check(r); err != nil {
		return perch.Errorf(perch.EFORBIDDEN, "Cross-origin request refused: send it from the dashboard's own pages.")
	}
	return nil
}

// asset serves the embedded stylesheet, script and icons under /assets/,
// one file at a time: a directory is not listed but not found, like a file
// that is not there.
func (d *Dashboard) asset(w http.ResponseWriter, r *http.Request, _ *call) error {
	notFound := perch.Errorf(perch.ENOTFOUND, "There is nothing at %s.", r.URL.Path)
	name, ok := strings.CutPrefix(r.URL.Path, "/assets/")
	if !ok || !fs.ValidPath(name) || name == "." {
		return notFound
	}
	f, err := d.assets.Open(name)
	if err != nil {
		return notFound
	}
	defer f.Close()
	info, err := f.Stat()
	content, seekable := f.(io.ReadSeeker)
	if err != nil || info.IsDir() || !seekable {
		return notFound
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	http.ServeContent(w, r, name, info.ModTime(), content)
	return nil
}

// notFound answers a path that is no page.
func (d *Dashboard) notFound(_ http.ResponseWriter, r *http.Request, _ *call) error {
	return perch.Errorf(perch.ENOTFOUND, "There is no page at %s.", r.URL.Path)
}

// view is what every page template gets.
type view struct {
	Title string
	Nav   string // the active navigation entry
	// Section is the active entry of the Admin section's sub-navigation.
	Section string
	User    *perch.User // nil when signed out
	Flash   string
	Error   string
	Fields  map[string]string // per-field problems of a failed form
	Form    url.Values        // what was typed, to fill a failed form again
	Data    any
	// Outbox says that this server sends no mail: it waits in the outbox
	// for the operator (Options.MailOutbox).
	Outbox bool
	// Elsewhere are the other regions' deployments, where an account of
	// another region signs in.
	Elsewhere []perch.Region
	// Providers are the sign-in providers the server offers.
	Providers []signInProvider
	// Banner warns the signed-in user's organisation of its billing: a
	// trial about to end, a failed payment (billing on only).
	Banner *banner
	// Features are the feature flags as they apply to the signed-in user
	// (GET /api/v1/users/me/features): the navigation offers Workflows and
	// the Marketplace only when they are on. Read once per page.
	Features map[string]bool
	// org is the organisation when the page's handler read it already,
	// so that the banner does not read it again.
	org *perch.Org
}

// handler is a page action; it returns an error to show, or nil.
type handler func(w http.ResponseWriter, r *http.Request, c *call) error

// call is one page request: its API client and session.
type call struct {
	d      *Dashboard
	w      http.ResponseWriter
	r      *http.Request
	api    *client.Client
	user   *perch.User
	signed bool
	// flags are the user's feature flags once read (featureFlags).
	flags map[string]bool
}

// Public serves a page that needs no session (sign-in, sign-up, …). State-
// changing requests must come from the dashboard's own origin.
func (d *Dashboard) Public(h handler) http.Handler {
	return d.serve(h, false)
}

// Private serves a page of a signed-in user; others are sent to sign in
// and brought back.
func (d *Dashboard) Private(h handler) http.Handler {
	return d.serve(h, true)
}

func (d *Dashboard) serve(h handler, private bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Referrer-Policy", "same-origin")
		w.Header().Set("Content-Security-Policy", d.csp)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := d.checkOrigin(r); err != nil {
				http.Error(w, perch.ErrorMessage(err), http.StatusForbidden)
				return
			}
		}
		c := d.newCall(w, r)
		if private {
			if !c.signed {
				c.signOut()
				http.Redirect(w, r, "/signin?next="+url.QueryEscape(safeNext(r.URL.RequestURI())), http.StatusSeeOther)
				return
			}
			u, err := c.api.Me(r.Context())
			if perch.ErrorCode(err) == perch.EUNAUTHORIZED {
				c.renew(r.URL.RequestURI())
				return
			}
			if err != nil {
				d.fail(c, err)
				return
			}
			c.user = u
		}
		if err := h(w, r, c); err != nil {
			d.fail(c, err)
		}
	})
}

// fail shows an error page for what a handler could not recover from.
func (d *Dashboard) fail(c *call, err error) {
	status := perch.HTTPStatus(perch.ErrorCode(err))
	title, msg := "Something went wrong", c.say(err)
	switch {
	case status == http.StatusNotFound:
		title = "Page not found"
	case status == http.StatusForbidden:
		title = "Not allowed"
	case status == http.StatusTooManyRequests:
		title = "Slow down a little"
	case status >= http.StatusInternalServerError:
		d.log.Error("dashboard page failed", "path", c.r.URL.Path, "err", err)
		msg = "Something went wrong on our side, and it is not something you did. Please try again in a minute; if it keeps happening, tell the people who run this server."
	}
	c.render(status, "error", view{Title: title, Error: msg})
}

// retryAfter is how the client reports a 429's Retry-After (client/errors.go).
var retryAfter = regexp.MustCompile(`\s*\(Retry-After: (\d+)\)$`)

// say is err's message for a person. A rate limit says how long to wait,
// in words, and the page carries the Retry-After the API gave.
func (c *call) say(err error) string {
	msg := perch.ErrorMessage(err)
	if perch.ErrorCode(err) != perch.ERATELIMITED {
		return msg
	}
	wait := "a minute"
	if m := retryAfter.FindStringSubmatch(msg); m != nil {
		c.w.Header().Set("Retry-After", m[1])
		if n, _ := strconv.Atoi(m[1]); n == 1 {
			wait = "a second"
		} else {
			wait = m[1] + " seconds"
		}
	}
	return "That was a lot of tries in a short time, so this server is holding back for a moment. Please wait " + wait + ", then try again."
}

// outboxNote says where mail goes on a server without SMTP, in place of
// "we e-mailed you".
const outboxNote = "This server sends no e-mail yet: the message waits for its operator, who finds it with perch admin outbox."

// mailed says that a message about what went to address: sent, or, without
// SMTP, waiting for the operator.
func (c *call) mailed(what, address string) string {
	if c.outboxed() {
		return "We made " + what + " for " + address + ". " + outboxNote
	}
	return "We sent " + what + " to " + address + "."
}

// outboxed says whether mail waits in the outbox, with no SMTP server set.
func (c *call) outboxed() bool {
	if c.d.outboxNow != nil {
		return c.d.outboxNow(c.r.Context())
	}
	return c.d.outbox
}

// flash keeps a message for the next page the browser loads.
func (c *call) flash(msg string) {
	http.SetCookie(c.w, &http.Cookie{Name: flashCookie, Value: url.QueryEscape(msg), Path: "/", MaxAge: 60,
		HttpOnly: true, Secure: c.d.secure, SameSite: http.SameSiteLaxMode})
}

// redirect answers a form post by sending the browser to path (Post/Redirect/
// Get), with a message to show there. A path that is not this site's (which
// only a bug could pass, since every target from a request goes through
// safeNext) sends the browser to the feed instead.
func (c *call) redirect(path, msg string) error {
	if msg != "" {
		c.flash(msg)
	}
	http.Redirect(c.w, c.r, safeNext(path), http.StatusSeeOther)
	return nil
}

// render writes a page.
func (c *call) render(status int, page string, v view) {
	t := c.d.pages[page]
	if t == nil {
		c.d.log.Error("no such page template", "page", page)
		http.Error(c.w, "page not found", http.StatusInternalServerError)
		return
	}
	if v.User == nil {
		v.User = c.user
	}
	v.Elsewhere = c.d.elsewhere
	v.Providers = c.d.providers
	v.Outbox = c.outboxed()
	if v.User != nil && v.Banner == nil {
		v.Banner = c.billingBanner(v.org)
	}
	if v.User != nil && v.Features == nil {
		v.Features = c.featureFlags()
	}
	if f, err := c.r.Cookie(flashCookie); err == nil && v.Flash == "" {
		v.Flash, _ = url.QueryUnescape(f.Value)
		http.SetCookie(c.w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1})
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		c.d.log.Error("rendering a page failed", "page", page, "err", err)
		http.Error(c.w, "rendering failed", http.StatusInternalServerError)
		return
	}
	c.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	c.w.Header().Set("Cache-Control", "no-store")
	c.w.WriteHeader(status)
	c.w.Write(buf.Bytes())
}

// page renders a page with 200.
func (c *call) page(name string, v view) error {
	c.render(http.StatusOK, name, v)
	return nil
}

// formError renders a form again with what went wrong, keeping what was
// typed (but never passwords). An error that is not the user's to fix is
// returned for the error page.
func (c *call) formError(name string, v view, err error) error {
	switch perch.ErrorCode(err) {
	case perch.EINTERNAL, perch.EUNAVAILABLE:
		return err
	}
	v.Error = c.say(err)
	var pe *perch.Error
	if errors.As(err, &pe) {
		v.Fields = pe.Fields
	}
	v.Form = url.Values{}
	for k, vals := range c.r.PostForm {
		if !strings.Contains(k, "password") {
			v.Form[k] = vals
		}
	}
	c.render(perch.HTTPStatus(perch.ErrorCode(err)), name, v)
	return nil
}

// do calls the API.
func (c *call) do(method, path string, in, out any) error {
	return c.api.Call(c.r.Context(), method, path, in, out)
}

// inProcess is an http.RoundTripper that serves API requests with the
// server's own handler, as from the browser's address and user agent (rate
// limits, logs and the audit log see the real client).
type inProcess struct {
	h    http.Handler
	from *http.Request
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.RemoteAddr = t.from.RemoteAddr
	req.RequestURI = req.URL.RequestURI()
	// The page's request id, so the API's log lines of the call say which
	// page they served.
	if id := t.from.Header.Get("X-Request-Id"); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	if xff := t.from.Header.Get("X-Forwarded-For"); xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	// The browser's, so the audit log says what the person used.
	req.Header.Set("User-Agent", t.from.UserAgent())
	if req.Body == nil {
		req.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	t.h.ServeHTTP(rec, req)
	return &http.Response{
		Status: http.StatusText(rec.status), StatusCode: rec.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()), Request: req,
	}, nil
}

// recorder is the http.ResponseWriter of an in-process API call.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	r.wrote = true
	return r.body.Write(p)
}
