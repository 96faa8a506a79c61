package web

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/client"
)

// notificationsData is what the feed's page says besides the feed.
type notificationsData struct {
	// AdminNeeded says that no account is a platform admin: the page says
	// where the setup link is.
	AdminNeeded bool
	// Snoozed is the user's snooze while it lasts (nil: none), for the
	// snooze control beside the feed.
	Snoozed *time.Time
}

// Notifications is the live feed; the page's script loads the history and
// listens on /ws.
func (d *Dashboard) Notifications(w http.ResponseWriter, r *http.Request, c *call) error {
	needed, err := c.adminNeeded()
	if err != nil {
		return err
	}
	p, err := c.preferences()
	if err != nil {
		return err
	}
	return c.page("notifications", view{Title: "Notifications", Nav: "notifications", Data: notificationsData{AdminNeeded: needed, Snoozed: c.snoozed(p)}})
}

// webhooksData is what the Webhooks page shows.
type webhooksData struct {
	Tokens  []*perch.WebhookToken
	Teams   []*perch.Team
	Created *client.CreatedWebhookToken // the token just made, shown once
	CanOrg  bool                        // may create organisation tokens
	Senders []sender
	TryIt   string            // the example for the token just made
	Tries   map[string]string // each listed token's example, by token id
	// Broadcast is set for a platform admin while token-less deliveries
	// are broadcast, to say so and how to stop it.
	Broadcast bool
	// Scheduled are the notifications the user's webhook tokens hold for
	// later (deliver_at, delay), soonest first; TokenLabels names the
	// token of each.
	Scheduled   []*perch.ScheduledNotification
	TokenLabels map[string]string
}

type sender struct{ Value, Name, Hint string }

var senders = []sender{
	{perch.SenderInbound, "Any system (JSON)", "POST {title, message, severity, tab}"},
	{perch.SenderIncidents, "PagerDuty", "Incident webhooks (V3 or V2)"},
	{perch.SenderCodeHost, "GitHub", "Pull requests, checks and pushes"},
	{perch.SenderMonitoring, "Datadog", "Monitor alerts"},
}

// receiverNames are the receivers' paths the pages show: the real
// system's name, which the server serves beside the contract's stand-in
// (the API's url says /webhooks/code-host; the page /webhooks/github).
var receiverNames = map[string]string{
	perch.SenderIncidents: "pagerduty", perch.SenderCodeHost: "github", perch.SenderMonitoring: "datadog",
}

// receiverURL is the address a sender delivers to with token.
func (c *call) receiverURL(sender, token string) string {
	name := receiverNames[sender]
	if name == "" {
		name = sender
	}
	return c.d.base + "/webhooks/" + name + "?token=" + url.QueryEscape(token)
}

func (c *call) webhooksData() (*webhooksData, error) {
	data := &webhooksData{Senders: senders, CanOrg: c.user.OrgRole == perch.RoleOwner || c.user.OrgRole == perch.RoleAdmin}
	if err := c.do(http.MethodGet, "/api/v1/webhook-tokens", nil, &data.Tokens); err != nil {
		return nil, err
	}
	if err := c.do(http.MethodGet, "/api/v1/org/teams", nil, &data.Teams); err != nil {
		return nil, err
	}
	if err := c.do(http.MethodGet, "/api/v1/notifications/scheduled", nil, &data.Scheduled); err != nil {
		return nil, err
	}
	data.Tries, data.TokenLabels = map[string]string{}, map[string]string{}
	for _, t := range data.Tokens {
		data.Tries[t.ID] = tryIt(t.Sender, c.receiverURL(t.Sender, "YOUR_TOKEN"), c.d.signed[t.Sender])
		data.TokenLabels[t.ID] = t.Label
	}
	data.Broadcast = c.d.broadcast && c.user.IsAdmin
	return data, nil
}

// WebhookTokens lists the user's webhook tokens, with the form for a new one.
func (d *Dashboard) WebhookTokens(w http.ResponseWriter, r *http.Request, c *call) error {
	data, err := c.webhooksData()
	if err != nil {
		return err
	}
	return c.page("webhooks", view{Title: "Webhooks", Nav: "webhooks", Data: data, Form: url.Values{"sender": {perch.SenderInbound}, "scope": {perch.ScopeUser}}})
}

// CreateWebhookToken makes a token and shows it, with its URL, this once.
func (d *Dashboard) CreateWebhookToken(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	in := client.WebhookTokenInput{Label: f.Get("label"), Sender: f.Get("sender"), Scope: f.Get("scope")}
	if in.Scope == perch.ScopeTeam {
		in.TeamID = f.Get("team_id")
	}
	created, createErr := c.api.CreateWebhookToken(r.Context(), in)
	data, err := c.webhooksData()
	if err != nil {
		return err
	}
	v := view{Title: "Webhooks", Nav: "webhooks", Data: data}
	if createErr != nil {
		return c.formError("webhooks", v, createErr)
	}
	created.URL = c.receiverURL(created.Token.Sender, created.RawToken)
	data.Created = created
	data.TryIt = tryIt(created.Token.Sender, created.URL, c.d.signed[created.Token.Sender])
	v.Form = url.Values{"sender": {perch.SenderInbound}, "scope": {perch.ScopeUser}}
	return c.page("webhooks", v)
}

// DeleteWebhookToken deletes a token; deliveries with it fail at once.
func (d *Dashboard) DeleteWebhookToken(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := c.api.DeleteWebhookToken(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return c.redirect("/webhook-tokens", "The webhook token is deleted; deliveries with it are refused from now on.")
}

// CancelScheduled takes back a notification one of the user's webhook
// tokens scheduled: it is never delivered.
func (d *Dashboard) CancelScheduled(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := c.api.CancelScheduled(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return c.redirect("/webhook-tokens", "The scheduled notification is cancelled; it will not be delivered.")
}

// Profile shows the user's name, address and password forms.
func (d *Dashboard) Profile(w http.ResponseWriter, r *http.Request, c *call) error {
	v, err := c.profileView()
	if err != nil {
		return err
	}
	v.Error = shownError(r)
	v.Form = url.Values{"name": {c.user.Name}, "email": {c.user.Email}}
	return c.page("profile", v)
}

// profileData is what the profile shows besides the user: the sign-in
// providers linked to the account, and those it may link.
type profileData struct {
	Identities []perch.Identity
	Linkable   []signInProvider
}

// profileView is the profile page's view, with the linked providers.
func (c *call) profileView() (view, error) {
	var ids []perch.Identity
	if err := c.do(http.MethodGet, "/api/v1/users/me/identities", nil, &ids); err != nil {
		return view{}, err
	}
	data := profileData{Identities: ids}
	for _, p := range c.d.providers {
		if !slices.ContainsFunc(ids, func(i perch.Identity) bool { return i.Provider == p.Name }) {
			data.Linkable = append(data.Linkable, p)
		}
	}
	return view{Title: "Profile", Nav: "profile", Data: data}, nil
}

// RemoveIdentity unlinks a sign-in provider from the account; the API
// refuses to remove the last way to sign in.
func (d *Dashboard) RemoveIdentity(w http.ResponseWriter, r *http.Request, c *call) error {
	provider := r.PathValue("provider")
	if err := c.do(http.MethodDelete, "/api/v1/users/me/identities/"+url.PathEscape(provider), nil, nil); err != nil {
		v, verr := c.profileView()
		if verr != nil {
			return err
		}
		return c.formError("profile", v, err)
	}
	return c.redirect("/profile", perch.ProviderTitle(provider)+" is no longer linked to your account.")
}

// UpdateProfile changes the name, and the address (which takes effect once
// the link mailed to the new one is followed).
func (d *Dashboard) UpdateProfile(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	in := map[string]any{"name": f.Get("name")}
	emailChange := f.Get("email") != c.user.Email
	if emailChange {
		in["email"], in["current_password"] = f.Get("email"), f.Get("current_password")
	}
	var out struct {
		PendingEmail string `json:"pending_email"`
	}
	if err := c.do(http.MethodPatch, "/api/v1/users/me", in, &out); err != nil {
		v, verr := c.profileView()
		if verr != nil {
			return err
		}
		return c.formError("profile", v, err)
	}
	msg := "Your profile is saved."
	if out.PendingEmail != "" {
		msg = "Saved. " + c.mailed("a confirmation link", out.PendingEmail) + " Your address changes when the link is followed."
	}
	return c.redirect("/profile", msg)
}

// ChangePassword sets a new password; the user's other sessions end.
func (d *Dashboard) ChangePassword(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	f := r.PostForm
	in := map[string]any{"password": f.Get("password"), "current_password": f.Get("current_password")}
	if err := c.do(http.MethodPatch, "/api/v1/users/me", in, nil); err != nil {
		v, verr := c.profileView()
		if verr != nil {
			return err
		}
		return c.formError("profile", v, err)
	}
	return c.redirect("/profile", "Your password is changed; your other sign-ins have ended.")
}

// fieldsText joins an error's field problems into one sentence.
func fieldsText(err error) string {
	var pe *perch.Error
	if !errors.As(err, &pe) {
		return ""
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(pe.Fields)) {
		fmt.Fprintf(&b, "%s %s. ", k, pe.Fields[k])
	}
	return strings.TrimSpace(b.String())
}
