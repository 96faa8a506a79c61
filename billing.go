package perch

import "time"

// Payment providers (docs/DESIGN.md, Billing): payments-a is Stripe, payments-b
// Paddle Billing.
const (
	BillingStripe = "stripe"
	BillingPaddle = "paddle"
)

// PlanNone is the status of an organisation without a subscription: its
// trial ended unpaid, and it is on the solo plan.
const PlanNone = "none"

// The tab and sources of billing notifications.
const (
	TabPayments     = "Payments"
	SourcePaymentsA = "payments-a" // Stripe
	SourcePaymentsB = "payments-b" // Paddle
)

// Subscription is an organisation's billing state, shown in GET /org as
// `subscription`. The provider's ids are kept for the receivers and the
// portal, never shown.
type Subscription struct {
	Plan              string     `json:"plan"`
	Status            string     `json:"status"` // trialing, active, past_due, canceled, none (or paused by an admin)
	TrialEndsAt       *time.Time `json:"trial_ends_at"`
	CurrentPeriodEnd  *time.Time `json:"current_period_end"`
	CancelAtPeriodEnd bool       `json:"cancel_at_period_end"`
	Provider          string     `json:"provider"` // BillingStripe, BillingPaddle, or "" before any payment
	// Seats is the quantity the provider's subscription bills (the
	// organisation's enabled members, kept in step by the seat job), as
	// the provider last said or was told; nil without a subscription.
	Seats *int `json:"seats"`

	CustomerID     string    `json:"-"`
	SubscriptionID string    `json:"-"`
	LastEventAt    time.Time `json:"-"` // when the last applied provider event happened (zero: none yet)
}

// Billing alerts: what an event tells the organisation's owners and admins.
const (
	AlertPaymentFailed = "payment_failed"
	AlertCanceled      = "canceled"
	AlertTrialEnding   = "trial_ending" // the provider's notice that a subscription's trial ends soon (Stripe: in 3 days)
)

// LiveSubscription reports whether a provider subscription in status bills
// or will bill: trialing, active or past_due. Only such a subscription has
// its seats kept in step, and binds the organisation to its provider.
func LiveSubscription(status string) bool {
	return status == PlanTrialing || status == PlanActive || status == PlanPastDue
}

// BillingEvent is what a payment provider's webhook says about a
// subscription, read by internal/billing/webhooks with no I/O. Fields the event does
// not speak of are zero (nil for the pointers): applying it leaves them as
// they are.
type BillingEvent struct {
	Provider   string    // BillingStripe or BillingPaddle
	ID         string    // the provider's event id: an event is applied once
	Type       string    // the provider's event type, as sent ("invoice.payment_failed")
	OccurredAt time.Time // when it happened at the provider: an event older than the last applied changes nothing

	// OrgID is the organisation the event says it is for (client_reference_id,
	// metadata, custom_data), if it says: a claim, which anyone able to
	// start a payment at the provider can make, checked against what is
	// bound (CheckoutID, and the stored subscription and customer) and
	// never followed on its own.
	OrgID string
	// CheckoutID is the provider's id of the checkout the event completes
	// (the Stripe Checkout Session of checkout.session.completed; the
	// Paddle transaction of transaction.completed, and the one
	// subscription.created says made it); "" for any other event. A
	// checkout Perch opened for an organisation (billing.Checkout.ID, as
	// recorded) is what binds a subscription and customer to it.
	CheckoutID     string
	CustomerID     string
	SubscriptionID string
	PriceID        string // the subscribed price; the server maps it to a plan

	Status            string     // the subscription's status in Perch's words (PlanActive, PlanPastDue, ...), "" when the event does not set it
	TrialEndsAt       *time.Time // nil: unchanged
	PeriodEnd         *time.Time // the end of the paid period; nil: unchanged
	CancelAtPeriodEnd *bool      // nil: unchanged
	Seats             *int       // the subscription's quantity (its plan item's); nil: unchanged
	Alert             string     // AlertPaymentFailed, AlertCanceled, AlertTrialEnding, or ""
}
