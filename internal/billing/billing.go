// Package billing talks to the payment providers Perch sends people to
// (docs/DESIGN.md, Billing): Stripe (payments-a) through stripe-go, and
// Paddle Billing (payments-b) over plain HTTP. It opens hosted checkouts
// and customer portals; what the providers later say about subscriptions
// arrives at the webhook receivers, not here.
package billing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
)

// Provider is a payment provider Perch sends people to: a hosted checkout for
// a plan, and the customer portal.
type Provider interface {
	// Name answers perch.BillingStripe or perch.BillingPaddle.
	Name() string
	// Checkout opens the provider's hosted checkout for the organisation
	// and plan. A plan without a configured price is ErrNoPrice; a failure
	// at the provider is an error that names it ("stripe: …", "paddle: …").
	Checkout(ctx context.Context, c CheckoutRequest) (*Checkout, error)
	// Portal answers the URL of the provider's customer portal for the
	// customer (and subscription, for Paddle).
	Portal(ctx context.Context, customerID, subscriptionID, returnURL string) (string, error)
	// PlanOf maps a provider price id to Perch's plan slug ("" when the price
	// is not one of Perch's).
	PlanOf(priceID string) string
	// SetSeats sets the quantity of the subscription's plan item (the item
	// whose price is one of Perch's, else its only item) to seats, prorated,
	// unless it is seats already, and answers the quantity it had: setting
	// the same count twice changes nothing the second time.
	SetSeats(ctx context.Context, subscriptionID string, seats int) (before int, err error)
}

// CheckoutRequest is what a checkout is opened for.
type CheckoutRequest struct {
	OrgID string
	Plan  string // a plan slug: solo, team, enterprise
	Seats int    // the line's quantity: the organisation's seat count (at least 1 is sent)
	// TrialEnd, when not zero, is when the organisation's trial ends: the
	// subscription starts trialing until then where the provider takes it
	// (Stripe, when at least 48 hours away).
	TrialEnd   time.Time
	Email      string // the buyer's address, prefilled
	CustomerID string // the organisation's customer at the provider, if it has one ("" otherwise)
	SuccessURL string // the dashboard's billing page, absolute
	CancelURL  string
}

// Checkout is a hosted checkout the provider opened.
type Checkout struct {
	// ID is the provider's id of the checkout: a Stripe Checkout Session
	// (cs_…) or a Paddle transaction (txn_…). The event that completes it
	// names it (checkout.session.completed's session; transaction.completed
	// and subscription.created's transaction), which is how the server
	// knows which organisation the subscription it makes is for.
	ID string
	// URL is where the buyer is sent.
	URL string
}

// ErrNoPrice is returned by Checkout when the plan has no price configured;
// the server answers 422 naming the plan.
var ErrNoPrice = errors.New("billing: no price is configured for the plan")

// quantity is the line's quantity for seats: a subscription bills at
// least one.
func quantity(seats int) int { return max(seats, 1) }

// Prices maps plan slugs to the provider's price ids, parsed from
// "solo=price_…,team=price_…,enterprise=price_…" (PERCH_STRIPE_PRICES /
// PERCH_PADDLE_PRICES).
type Prices map[string]string

// ParsePrices reads "slug=price_id" pairs separated by commas; white space
// around either side is ignored, and an empty s is no prices at all. Every
// problem is reported at once, each naming its entry: an entry without "=",
// a slug validPlan refuses (nil accepts any), an empty or malformed price
// id, a slug given twice, and a price id given to two plans (PlanOf could
// not tell them apart).
func ParsePrices(s string, validPlan func(string) bool) (Prices, error) {
	prices := Prices{}
	if strings.TrimSpace(s) == "" {
		return prices, nil
	}
	var problems []string
	planOfPrice := map[string]string{}
	for i, entry := range strings.Split(s, ",") {
		n := i + 1
		entry = strings.TrimSpace(entry)
		slug, id, ok := strings.Cut(entry, "=")
		slug, id = strings.TrimSpace(slug), strings.TrimSpace(id)
		switch {
		case entry == "":
			problems = append(problems, fmt.Sprintf("entry %d is empty", n))
			continue
		case !ok:
			problems = append(problems, fmt.Sprintf("entry %d %q is not slug=price_id", n, entry))
			continue
		case slug == "":
			problems = append(problems, fmt.Sprintf("entry %d %q has no plan slug", n, entry))
			continue
		case validPlan != nil && !validPlan(slug):
			problems = append(problems, fmt.Sprintf("entry %d: %q is not a plan", n, slug))
			continue
		case id == "":
			problems = append(problems, fmt.Sprintf("entry %d: plan %q has an empty price id", n, slug))
			continue
		case strings.IndexFunc(id, notIDRune) >= 0:
			problems = append(problems, fmt.Sprintf("entry %d: plan %q has a price id with spaces or control characters", n, slug))
			continue
		}
		if _, dup := prices[slug]; dup {
			problems = append(problems, fmt.Sprintf("entry %d: plan %q is given twice", n, slug))
			continue
		}
		if other, dup := planOfPrice[id]; dup {
			problems = append(problems, fmt.Sprintf("entry %d: price %q is given to both %q and %q", n, id, other, slug))
			continue
		}
		prices[slug] = id
		planOfPrice[id] = slug
	}
	if len(problems) > 0 {
		return nil, errors.New("billing prices: " + strings.Join(problems, "; "))
	}
	return prices, nil
}

func notIDRune(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

// price answers the plan's price id, or ErrNoPrice naming the plan.
func (p Prices) price(plan string) (string, error) {
	id := p[plan]
	if id == "" {
		return "", fmt.Errorf("%w: %q", ErrNoPrice, plan)
	}
	return id, nil
}

// planOf is Provider.PlanOf for both providers.
func (p Prices) planOf(priceID string) string {
	if priceID == "" {
		return ""
	}
	for slug, id := range p {
		if id == priceID {
			return slug
		}
	}
	return ""
}

// clone keeps a provider's prices apart from the caller's map.
func (p Prices) clone() Prices {
	c := make(Prices, len(p))
	for slug, id := range p {
		c[slug] = id
	}
	return c
}

// checkRequest reports what a checkout cannot be opened without: without
// the organisation id, the provider's events could not be tied back to it.
func checkRequest(c CheckoutRequest) error {
	var missing []string
	if c.OrgID == "" {
		missing = append(missing, "organisation id")
	}
	if c.Plan == "" {
		missing = append(missing, "plan")
	}
	if len(missing) > 0 {
		return fmt.Errorf("billing: checkout needs the %s", strings.Join(missing, " and the "))
	}
	return nil
}

// defaultTimeout bounds a call to a provider when no HTTP client is given:
// the person is waiting on a redirect.
const defaultTimeout = 10 * time.Second

func httpClient(hc *http.Client) *http.Client {
	if hc != nil {
		return hc
	}
	return &http.Client{Timeout: defaultTimeout}
}

// redact removes the secret from a message that may quote what was sent;
// no provider error may carry a key to a log or a response.
func redact(msg, secret string) string {
	if secret == "" {
		return msg
	}
	return strings.ReplaceAll(msg, secret, "[redacted]")
}

// providerError is a provider's failure in Perch's words ("stripe: …"),
// keeping the provider's own error for errors.As.
type providerError struct {
	msg string
	err error
}

func (e *providerError) Error() string { return e.msg }
func (e *providerError) Unwrap() error { return e.err }
