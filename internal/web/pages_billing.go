package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/perch-dev/perch"
)

// The billing page (/org/billing): the organisation's plan and status,
// seats, the plans with a checkout for each, and the payment provider's
// portal. The provider's checkout and portal are on other sites: a form
// post here answers a page that sends the browser on (the pages' CSP keeps
// forms, and the redirects that follow them, on this site).

// billingData is what the billing page shows.
type billingData struct {
	Org       perch.Org
	Plans     []*perch.Plan
	Manage    bool // the viewer is an owner or admin
	On        bool // a payment provider is configured; off, plans never lapse
	TrialDays int  // days left of the trial, when trialing with billing on
	// Billed is the seats the provider's subscription bills (the API's
	// subscription.seats), when it bills any: -1 when it does not.
	Billed int
	// PastDue: a payment is owed, which the portal settles; the API
	// refuses a checkout until then, so none is offered.
	PastDue bool
	// Subscribed: the provider bills a live subscription, whose plan the
	// portal changes; the API refuses a checkout beside it, so none is
	// offered.
	Subscribed bool
	Go         string // the provider's page to go to now
	GoTo       string // its name for people: "the checkout", "the billing portal"
}

// banner is a warning across every page.
type banner struct {
	Text, Link, Action string
}

// Billing shows the billing page; ?checkout= is the provider sending the
// browser back.
func (d *Dashboard) Billing(w http.ResponseWriter, r *http.Request, c *call) error {
	v := view{}
	switch r.URL.Query().Get("checkout") {
	case "done":
		v.Flash = "Thank you: the payment provider is confirming the payment, and the plan changes as soon as it does."
	case "canceled":
		v.Flash = "The checkout was left; nothing was charged."
	}
	return c.billingPage(http.StatusOK, v, &billingData{})
}

// billingPage renders the page with status.
func (c *call) billingPage(status int, v view, data *billingData) error {
	if err := c.do(http.MethodGet, "/api/v1/org", nil, &data.Org); err != nil {
		return err
	}
	if err := c.do(http.MethodGet, "/api/v1/billing/plans", nil, &data.Plans); err != nil {
		return err
	}
	data.Manage, data.On = c.user.IsOrgAdmin(), c.d.billing
	// With billing off a trial never ends (the billing job leaves it), so
	// the page counts no days down: the plan is the one an admin set.
	sub := data.Org.Subscription
	if data.On && sub != nil && sub.Status == perch.PlanTrialing && sub.TrialEndsAt != nil {
		data.TrialDays = daysUntil(c.d.now(), *sub.TrialEndsAt)
	}
	data.Billed = -1
	if sub != nil && sub.Seats != nil {
		data.Billed = *sub.Seats
	}
	data.PastDue = data.On && sub != nil && sub.Status == perch.PlanPastDue
	data.Subscribed = data.On && sub != nil && sub.Seats != nil && perch.LiveSubscription(sub.Status)
	v.Title, v.Nav, v.Data, v.org = "Billing", "billing", data, &data.Org
	c.render(status, "billing", v)
	return nil
}

// daysUntil is how many days, rounded up, are left until t.
func daysUntil(now, t time.Time) int {
	return max(0, int((t.Sub(now)+24*time.Hour-time.Nanosecond)/(24*time.Hour)))
}

// Checkout sends an owner or admin to the provider's checkout for a plan.
func (d *Dashboard) Checkout(w http.ResponseWriter, r *http.Request, c *call) error {
	r.ParseForm()
	var out struct {
		URL string `json:"checkout_url"`
	}
	if err := c.do(http.MethodPost, "/api/v1/billing/checkout", map[string]string{"plan": r.PostForm.Get("plan")}, &out); err != nil {
		return c.billingRefused(err)
	}
	return c.billingPage(http.StatusOK, view{}, &billingData{Go: out.URL, GoTo: "the checkout"})
}

// Portal sends an owner or admin to the provider's customer portal.
func (d *Dashboard) Portal(w http.ResponseWriter, r *http.Request, c *call) error {
	var out struct {
		URL string `json:"portal_url"`
	}
	if err := c.do(http.MethodPost, "/api/v1/billing/portal", nil, &out); err != nil {
		return c.billingRefused(err)
	}
	return c.billingPage(http.StatusOK, view{}, &billingData{Go: out.URL, GoTo: "the billing portal"})
}

// billingRefused shows the page again with what the API said.
func (c *call) billingRefused(err error) error {
	if perch.ErrorCode(err) == perch.EINTERNAL {
		return err
	}
	msg := perch.ErrorMessage(err)
	if f := fieldsText(err); f != "" {
		msg += " " + f
	}
	return c.billingPage(perch.HTTPStatus(perch.ErrorCode(err)), view{Error: msg}, &billingData{})
}

// billingBanner warns of a trial ending within a week or a failed
// payment, when billing is on; nil otherwise (or when the organisation
// cannot be read: a banner is never worth failing a page). org is the
// organisation when the page read it already; nil reads it.
func (c *call) billingBanner(org *perch.Org) *banner {
	if !c.d.billing || c.user == nil {
		return nil
	}
	if org == nil {
		org = &perch.Org{}
		if err := c.do(http.MethodGet, "/api/v1/org", nil, org); err != nil {
			return nil
		}
	}
	sub := org.Subscription
	if sub == nil {
		return nil
	}
	switch {
	case sub.Status == perch.PlanPastDue:
		return &banner{Text: "The last payment failed: update the payment method to keep the " + sub.Plan + " plan.", Link: "/org/billing", Action: "Billing"}
	case sub.Status == perch.PlanTrialing && sub.TrialEndsAt != nil && sub.TrialEndsAt.Sub(c.d.now()) <= 7*24*time.Hour:
		days := daysUntil(c.d.now(), *sub.TrialEndsAt)
		return &banner{Text: fmt.Sprintf("The trial ends in %s: choose a plan to keep your team's notifications.", plural(days, "day", "days")),
			Link: "/org/billing", Action: "Choose a plan"}
	}
	return nil
}
