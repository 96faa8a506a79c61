package billing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/perch-dev/perch"
	"github.com/stripe/stripe-go/v85"
)

// stripeProvider opens Stripe Checkout Sessions and billing portal sessions
// through its own stripe.Client: nothing is shared with stripe-go's package
// globals, so two servers in one process may hold different keys.
type stripeProvider struct {
	client *stripe.Client
	key    string
	prices Prices
	now    func() time.Time
}

// StripeMinTrial is how far in the future Stripe requires a Checkout
// Session's subscription_data.trial_end to be.
const StripeMinTrial = 48 * time.Hour

// stripeRetries is how often stripe-go retries a request that failed on
// the way (with an idempotency key, so nothing is created twice): once, as
// a person is waiting for the redirect.
const stripeRetries = 1

// NewStripe talks to Stripe's API at apiURL ("" is https://api.stripe.com;
// tests give stripe-mock's URL) with stripe-go, over hc (nil: a client with
// a 10-second timeout). stripe-go's own logging and its request telemetry
// to Stripe are off: a failure is returned, and the server decides what to
// log. Its clock, for the trial's 48 hours, is time.Now; NewStripeAt takes
// another.
func NewStripe(secretKey, apiURL string, prices Prices, hc *http.Client) Provider {
	return NewStripeAt(secretKey, apiURL, prices, hc, time.Now)
}

// NewStripeAt is NewStripe with the clock now.
func NewStripeAt(secretKey, apiURL string, prices Prices, hc *http.Client, now func() time.Time) Provider {
	if apiURL == "" {
		apiURL = stripe.APIURL
	}
	quiet := &stripe.LeveledLogger{Level: stripe.LevelNull}
	hc = httpClient(hc)
	config := func(url string) *stripe.BackendConfig {
		return &stripe.BackendConfig{
			HTTPClient:        hc,
			URL:               stripe.String(url),
			LeveledLogger:     quiet,
			EnableTelemetry:   stripe.Bool(false),
			MaxNetworkRetries: stripe.Int64(stripeRetries),
		}
	}
	backends := &stripe.Backends{
		API:         stripe.GetBackendWithConfig(stripe.APIBackend, config(apiURL)),
		Connect:     stripe.GetBackendWithConfig(stripe.ConnectBackend, config(stripe.ConnectURL)),
		Uploads:     stripe.GetBackendWithConfig(stripe.UploadsBackend, config(stripe.UploadsURL)),
		MeterEvents: stripe.GetBackendWithConfig(stripe.MeterEventsBackend, config(stripe.MeterEventsURL)),
	}
	return &stripeProvider{
		client: stripe.NewClient(secretKey, stripe.WithBackends(backends)),
		key:    secretKey,
		prices: prices.clone(),
		now:    now,
	}
}

// Name answers perch.BillingStripe.
func (p *stripeProvider) Name() string { return perch.BillingStripe }

// PlanOf maps a Stripe price id to its plan slug.
func (p *stripeProvider) PlanOf(priceID string) string { return p.prices.planOf(priceID) }

// Checkout creates a Checkout Session in subscription mode for the plan's
// price, and answers its id and URL. The organisation id travels as client_reference_id and in the
// session's and the subscription's metadata, so that every later event can
// be tied back to it. An organisation that is already a customer keeps its
// customer; otherwise the buyer's address is prefilled.
func (p *stripeProvider) Checkout(ctx context.Context, c CheckoutRequest) (*Checkout, error) {
	if err := checkRequest(c); err != nil {
		return nil, err
	}
	price, err := p.prices.price(c.Plan)
	if err != nil {
		return nil, err
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode: stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		LineItems: []*stripe.CheckoutSessionCreateLineItemParams{
			{Price: stripe.String(price), Quantity: stripe.Int64(int64(quantity(c.Seats)))},
		},
		ClientReferenceID: stripe.String(c.OrgID),
		Metadata:          map[string]string{"org_id": c.OrgID, "plan": c.Plan, "price_id": price},
		SubscriptionData: &stripe.CheckoutSessionCreateSubscriptionDataParams{
			Metadata: map[string]string{"org_id": c.OrgID, "plan": c.Plan},
		},
	}
	// Stripe takes a trial end at least 48 hours away; a trial ending
	// sooner is not passed on, and the subscription bills at once.
	if !c.TrialEnd.IsZero() && c.TrialEnd.After(p.now().Add(StripeMinTrial)) {
		params.SubscriptionData.TrialEnd = stripe.Int64(c.TrialEnd.Unix())
	}
	switch {
	case c.CustomerID != "":
		params.Customer = stripe.String(c.CustomerID)
	case c.Email != "":
		params.CustomerEmail = stripe.String(c.Email)
	}
	if c.SuccessURL != "" {
		params.SuccessURL = stripe.String(c.SuccessURL)
	}
	if c.CancelURL != "" {
		params.CancelURL = stripe.String(c.CancelURL)
	}
	session, err := p.client.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		return nil, p.wrap("create checkout session", err)
	}
	if session.ID == "" || session.URL == "" {
		return nil, fmt.Errorf("stripe: checkout session %q has no id or no URL", session.ID)
	}
	return &Checkout{ID: session.ID, URL: session.URL}, nil
}

// Portal creates a billing portal session for the customer, returning to
// returnURL. Stripe's portal shows all of a customer's subscriptions, so
// subscriptionID is not used.
func (p *stripeProvider) Portal(ctx context.Context, customerID, subscriptionID, returnURL string) (string, error) {
	if customerID == "" {
		return "", errors.New("billing: the organisation has no Stripe customer to open the portal for")
	}
	params := &stripe.BillingPortalSessionCreateParams{Customer: stripe.String(customerID)}
	if returnURL != "" {
		params.ReturnURL = stripe.String(returnURL)
	}
	session, err := p.client.V1BillingPortalSessions.Create(ctx, params)
	if err != nil {
		return "", p.wrap("create billing portal session", err)
	}
	if session.URL == "" {
		return "", fmt.Errorf("stripe: billing portal session %s has no URL", session.ID)
	}
	return session.URL, nil
}

// SetSeats retrieves the subscription, and updates its plan item's
// quantity with proration_behavior=create_prorations (the difference is
// credited or charged on the next invoice) when it is not seats.
func (p *stripeProvider) SetSeats(ctx context.Context, subscriptionID string, seats int) (int, error) {
	if subscriptionID == "" {
		return 0, errors.New("billing: no Stripe subscription to set the seats of")
	}
	sub, err := p.client.V1Subscriptions.Retrieve(ctx, subscriptionID, nil)
	if err != nil {
		return 0, p.wrap("retrieve subscription", err)
	}
	var item *stripe.SubscriptionItem
	if sub.Items != nil {
		for _, it := range sub.Items.Data {
			switch {
			case it == nil:
			case it.Price != nil && p.PlanOf(it.Price.ID) != "":
				item = it
			case item == nil && len(sub.Items.Data) == 1:
				item = it
			}
		}
	}
	if item == nil || item.ID == "" {
		return 0, fmt.Errorf("stripe: subscription %s has no item of a Perch plan's price", subscriptionID)
	}
	before := int(item.Quantity)
	if before == quantity(seats) {
		return before, nil
	}
	_, err = p.client.V1SubscriptionItems.Update(ctx, item.ID, &stripe.SubscriptionItemUpdateParams{
		Quantity:          stripe.Int64(int64(quantity(seats))),
		ProrationBehavior: stripe.String("create_prorations"),
	})
	if err != nil {
		return before, p.wrap("update subscription item", err)
	}
	return before, nil
}

// wrap says what failed in Stripe's words, without the JSON stripe-go puts
// in its errors and without the key.
func (p *stripeProvider) wrap(op string, err error) error {
	var msg string
	var se *stripe.Error
	if errors.As(err, &se) {
		var b strings.Builder
		fmt.Fprintf(&b, "stripe: %s: %s", op, se.Msg)
		var details []string
		if se.Code != "" {
			details = append(details, "code "+string(se.Code))
		}
		if se.Param != "" {
			details = append(details, "param "+se.Param)
		}
		if se.HTTPStatusCode != 0 {
			details = append(details, fmt.Sprintf("status %d", se.HTTPStatusCode))
		}
		if se.RequestID != "" {
			details = append(details, "request "+se.RequestID)
		}
		if len(details) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(details, ", "))
		}
		msg = b.String()
	} else {
		msg = fmt.Sprintf("stripe: %s: %v", op, err)
	}
	return &providerError{msg: redact(msg, p.key), err: err}
}
