package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing"
	"github.com/perch-dev/perch/internal/store"
)

// billingStore is what checkout, the subscription and the payment providers'
// webhooks need from storage.
type billingStore interface {
	ApplyBillingEvent(ctx context.Context, ev perch.BillingEvent, plan string) (*store.BillingOutcome, error)
	ExpireTrials(ctx context.Context, now time.Time) ([]store.ExpiredTrial, error)
	OrgOwnersAndAdmins(ctx context.Context, orgID string) ([]string, error)
	Plans(ctx context.Context) ([]*perch.Plan, error)
	RecordCheckout(ctx context.Context, provider, checkoutID, orgID string) error
	Seats(ctx context.Context, orgID string) (*store.SeatState, error)
	Subscription(ctx context.Context, orgID string) (*perch.Subscription, error)
	TrialsEndingSoon(ctx context.Context, now time.Time, within time.Duration) ([]store.TrialEnding, error)
}

var _ billingStore = (*store.Store)(nil)

// Billing (docs/DESIGN.md, Billing): checkout and the customer portal at the
// payment provider; the provider's webhooks are in billing_webhooks.go.

// billingPage is the dashboard's billing page, where the provider sends
// people back.
const billingPage = "/org/billing"

var errBillingOff = perch.Errorf(perch.EBILLINGUNAVAILABLE,
	"Billing is off on this server: a platform admin sets each organisation's plan.")

// checkout serves POST /api/v1/billing/checkout {plan}: the URL of the
// provider's hosted checkout for the caller's organisation.
func (s *Server) checkout(w http.ResponseWriter, r *http.Request) error {
	var in struct {
		Plan string `json:"plan"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if s.opts.Billing.Provider == nil {
		return errBillingOff
	}
	u := principal(r).User
	plans, err := s.billingDB.Plans(r.Context())
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(plans, func(p *perch.Plan) bool { return p.Slug == in.Plan }) {
		return perch.Problems{"plan": "is not a plan: choose solo, team or enterprise"}.Err()
	}
	sub, err := s.billingDB.Subscription(r.Context(), u.OrgID)
	if err != nil {
		return err
	}
	provider := s.opts.Billing.Provider.Name()
	live := sub.SubscriptionID != "" && perch.LiveSubscription(sub.Status)
	switch {
	case sub.Status == perch.PlanPastDue:
		// A second checkout would open a second subscription beside the
		// unpaid one; the payment owed is settled in the portal.
		return perch.Errorf(perch.EPAYMENTPASTDUE, "A payment for the %s plan is past due: settle it, or change the payment method, in the billing portal "+
			"(POST /api/v1/billing/portal, or Manage billing on the billing page) before starting another checkout.", sub.Plan)
	case sub.Plan == in.Plan && sub.Status == perch.PlanActive:
		return perch.Errorf(perch.EALREADYSUBSCRIBED, "The organisation already pays for the %s plan; the billing portal changes or cancels it.", in.Plan)
	case live && sub.Provider != "" && sub.Provider != provider:
		return perch.Errorf(perch.ECONFLICT, "The organisation's subscription is at %s: an organisation has one payment provider, "+
			"so cancel it there before subscribing through %s.", sub.Provider, provider)
	case live:
		// A checkout opens a subscription: a second one beside the live one
		// would bill the organisation twice. A change of plan is the
		// subscription's own, made in the portal.
		return perch.Errorf(perch.EALREADYSUBSCRIBED, "The organisation already has a subscription (the %s plan, %s): "+
			"change its plan in the billing portal (POST /api/v1/billing/portal, or Manage billing on the billing page).", sub.Plan, sub.Status)
	}
	customer := ""
	if sub.Provider == provider {
		customer = sub.CustomerID
	}
	seats, err := s.billingDB.Seats(r.Context(), u.OrgID)
	if err != nil {
		return err
	}
	// The rest of a trial Perch started goes to the provider, so that the
	// subscription starts billing when the trial would have ended.
	var trialEnd time.Time
	if sub.Status == perch.PlanTrialing && sub.SubscriptionID == "" && sub.TrialEndsAt != nil {
		trialEnd = *sub.TrialEndsAt
	}
	back := s.baseURL() + billingPage
	co, err := s.opts.Billing.Provider.Checkout(r.Context(), billing.CheckoutRequest{OrgID: u.OrgID, Plan: in.Plan, Email: u.Email,
		Seats: seats.Seats, TrialEnd: trialEnd,
		CustomerID: customer, SuccessURL: back + "?checkout=done", CancelURL: back + "?checkout=canceled"})
	if errors.Is(err, billing.ErrNoPrice) {
		return perch.Problems{"plan": "has no price at the payment provider yet"}.Err()
	}
	if err != nil {
		return s.providerDown(r, err)
	}
	// The event that completes this checkout binds the subscription to the
	// organisation, and no other event can (Store.ApplyBillingEvent).
	if err := s.billingDB.RecordCheckout(r.Context(), s.opts.Billing.Provider.Name(), co.ID, u.OrgID); err != nil {
		return err
	}
	s.audit(r, perch.AuditEntry{Action: perch.AuditCheckoutStarted, Target: orgTarget(u.OrgID),
		Changes: map[string]any{"plan": in.Plan, "provider": provider, "checkout_id": co.ID, "seats": max(seats.Seats, 1)}})
	return respond(w, http.StatusOK, map[string]string{"checkout_url": co.URL, "provider": s.opts.Billing.Provider.Name()})
}

// portal serves POST /api/v1/billing/portal: the URL of the provider's
// customer portal, for an organisation that has paid through it.
func (s *Server) portal(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Billing.Provider == nil {
		return errBillingOff
	}
	u := principal(r).User
	sub, err := s.billingDB.Subscription(r.Context(), u.OrgID)
	if err != nil {
		return err
	}
	if sub.CustomerID == "" || sub.Provider != s.opts.Billing.Provider.Name() {
		return perch.Errorf(perch.ECONFLICT, "The organisation has no subscription at the payment provider yet: choose a plan first.")
	}
	url, err := s.opts.Billing.Provider.Portal(r.Context(), sub.CustomerID, sub.SubscriptionID, s.baseURL()+billingPage)
	if err != nil {
		return s.providerDown(r, err)
	}
	return respond(w, http.StatusOK, map[string]string{"portal_url": url})
}

// providerDown logs a payment provider's failure and answers 503.
func (s *Server) providerDown(r *http.Request, err error) error {
	s.log.Error("the payment provider failed", "provider", s.opts.Billing.Provider.Name(), "request_id", requestID(r), "err", err)
	return perch.Errorf(perch.EBILLINGUNAVAILABLE, "The payment provider did not answer as expected; try again in a minute.")
}
