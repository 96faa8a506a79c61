package webhooks

import (
	"encoding/json"
	"strings"

	"github.com/perch-dev/perch"
)

// stripeRef is a reference Stripe sends either as an id or, when the field
// was expanded, as the object itself; Perch only keeps the id.
type stripeRef string

// UnmarshalJSON reads an id, an expanded object's id, or null.
func (r *stripeRef) UnmarshalJSON(b []byte) error {
	switch jsonKindOf(b) {
	case "null":
		return nil
	case "string":
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*r = stripeRef(s)
		return nil
	case "object":
		var o struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		*r = stripeRef(o.ID)
		return nil
	}
	return &json.UnmarshalTypeError{Value: jsonKindOf(b), Type: stringType}
}

// stripeMetadata holds the keys Perch's checkout puts in Stripe metadata.
type stripeMetadata struct {
	OrgID   string `json:"org_id"`
	PriceID string `json:"price_id"`
}

// stripeCheckoutSession is the part of a Checkout Session Perch reads.
type stripeCheckoutSession struct {
	ID                string         `json:"id"`
	Object            string         `json:"object"`
	ClientReferenceID string         `json:"client_reference_id"`
	Customer          stripeRef      `json:"customer"`
	Subscription      stripeRef      `json:"subscription"`
	Mode              string         `json:"mode"`
	PaymentStatus     string         `json:"payment_status"`
	Metadata          stripeMetadata `json:"metadata"`
}

// stripeSubscription is the part of a Subscription Perch reads, under the
// names of older and newer API versions alike.
type stripeSubscription struct {
	Object            string         `json:"object"`
	ID                string         `json:"id"`
	Customer          stripeRef      `json:"customer"`
	Status            string         `json:"status"`
	Quantity          *int           `json:"quantity"` // older API versions: the subscription's own
	Metadata          stripeMetadata `json:"metadata"`
	CancelAtPeriodEnd *bool          `json:"cancel_at_period_end"`
	CurrentPeriodEnd  *int64         `json:"current_period_end"` // before API 2025-03-31
	TrialEnd          *int64         `json:"trial_end"`
	Plan              *struct {
		ID string `json:"id"`
	} `json:"plan"` // older API versions
	Items struct {
		Data []struct {
			Price            stripeRef `json:"price"`
			Plan             stripeRef `json:"plan"`
			Quantity         *int      `json:"quantity"`
			CurrentPeriodEnd *int64    `json:"current_period_end"` // from API 2025-03-31
		} `json:"data"`
	} `json:"items"`
}

// stripeSubscriptionDetails is what an invoice says of the subscription it
// bills.
type stripeSubscriptionDetails struct {
	Subscription stripeRef      `json:"subscription"`
	Metadata     stripeMetadata `json:"metadata"`
}

// stripeInvoice is the part of an Invoice Perch reads. Where the
// subscription's id is kept moved between API versions: the invoice itself,
// then its parent, and in the oldest versions a line of type subscription
// whose id was the subscription's.
type stripeInvoice struct {
	Object              string                     `json:"object"`
	Customer            stripeRef                  `json:"customer"`
	Subscription        stripeRef                  `json:"subscription"`
	SubscriptionDetails *stripeSubscriptionDetails `json:"subscription_details"`
	Parent              *struct {
		SubscriptionDetails *stripeSubscriptionDetails `json:"subscription_details"`
	} `json:"parent"`
	Lines struct {
		Data []struct {
			ID           string    `json:"id"`
			Type         string    `json:"type"`
			Subscription stripeRef `json:"subscription"`
			Parent       *struct {
				SubscriptionItemDetails *struct {
					Subscription stripeRef `json:"subscription"`
				} `json:"subscription_item_details"`
			} `json:"parent"`
			Period *struct {
				End *int64 `json:"end"`
			} `json:"period"`
		} `json:"data"`
	} `json:"lines"`
}

// stripeObjects names the kind of object (its "object" member) each event
// type Perch acts on carries as data.object.
var stripeObjects = map[string]string{
	"checkout.session.completed":    "checkout.session",
	"customer.subscription.created": "subscription",
	"customer.subscription.updated": "subscription",
	"customer.subscription.deleted": "subscription",
	// Three days before a trial ends (or at once when it ends sooner).
	"customer.subscription.trial_will_end": "subscription",
	"invoice.paid":                         "invoice",
	"invoice.payment_failed":               "invoice",
}

// StripeEvent reads a Stripe webhook Event, the whole envelope {id, type,
// created, data: {object, previous_attributes}, ...}, into a
// perch.BillingEvent of provider perch.BillingStripe whose ID is the
// event's id, Type its type and OccurredAt its created time.
//
// Perch acts on checkout.session.completed (a paid session in subscription
// mode), customer.subscription.created|updated|deleted|trial_will_end,
// invoice.paid and invoice.payment_failed (of a subscription). For any other event, and for
// those that are not about a subscription, ok is false with a nil error and
// ev holds only the envelope's fields: the receiver answers 200 "ignored".
//
// A body that is not a Stripe event (not JSON, without id, type or created,
// data.object missing, not an object or an object of another kind than the
// type says), an id longer than 255 bytes or a time out of range is a
// perch.EBADREQUEST error whose message says what is wrong.
func StripeEvent(body []byte) (ev perch.BillingEvent, ok bool, err error) {
	var e struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Type    string `json:"type"`
		Created *int64 `json:"created"`
		Data    *struct {
			Object             json.RawMessage `json:"object"`
			PreviousAttributes json.RawMessage `json:"previous_attributes"`
		} `json:"data"`
	}
	if err := perch.DecodeObject(body, &e); err != nil {
		return perch.BillingEvent{}, false, err
	}
	switch {
	case e.Object != "" && e.Object != "event":
		return perch.BillingEvent{}, false, badRequest("The body is not a Stripe event: its object is %q, not \"event\".", perch.Clip(perch.OneLine(e.Object), 40))
	case e.ID == "":
		return perch.BillingEvent{}, false, badRequest("The body is not a Stripe event: id is required.")
	case e.Type == "":
		return perch.BillingEvent{}, false, badRequest("The body is not a Stripe event: type is required.")
	case e.Created == nil || *e.Created == 0:
		return perch.BillingEvent{}, false, badRequest("The body is not a Stripe event: created is required.")
	case e.Data == nil || !jsonObject(e.Data.Object):
		return perch.BillingEvent{}, false, badRequest("The body is not a Stripe event: data.object must be an object.")
	}
	if err := billingIDs("id", e.ID, "type", e.Type); err != nil {
		return perch.BillingEvent{}, false, err
	}
	created, err := unixTime("created", e.Created)
	if err != nil {
		return perch.BillingEvent{}, false, err
	}
	ev = perch.BillingEvent{Provider: perch.BillingStripe, ID: e.ID, Type: e.Type, OccurredAt: *created}

	kind, understood := stripeObjects[e.Type]
	if !understood {
		return ev, false, nil
	}
	var object struct {
		Object string `json:"object"`
	}
	if err := decodeMember(e.Data.Object, "data.object", &object); err != nil {
		return perch.BillingEvent{}, false, err
	}
	if object.Object != "" && object.Object != kind {
		return perch.BillingEvent{}, false, badRequest("data.object of a %s event must be a %q object, not %q.", e.Type, kind, perch.Clip(perch.OneLine(object.Object), 40))
	}

	switch kind {
	case "checkout.session":
		ok, err = stripeCheckout(&ev, e.Data.Object)
	case "subscription":
		ok, err = stripeSubscriptionEvent(&ev, e.Data.Object, e.Data.PreviousAttributes)
	case "invoice":
		ok, err = stripeInvoiceEvent(&ev, e.Data.Object)
	}
	if err == nil {
		err = billingIDs("The organisation id in data.object", ev.OrgID, "The checkout session id in data.object", ev.CheckoutID,
			"The customer id in data.object", ev.CustomerID,
			"The subscription id in data.object", ev.SubscriptionID, "The price id in data.object", ev.PriceID)
	}
	if err != nil {
		return perch.BillingEvent{}, false, err
	}
	if !ok || !located(ev) {
		return perch.BillingEvent{Provider: ev.Provider, ID: ev.ID, Type: ev.Type, OccurredAt: ev.OccurredAt}, false, nil
	}
	return ev, true, nil
}

// stripeCheckout reads a completed Checkout Session. Only a paid (or free)
// session in subscription mode starts a subscription; a payment-mode session
// is somebody else's sale and is not Perch's business.
func stripeCheckout(ev *perch.BillingEvent, raw json.RawMessage) (bool, error) {
	var s stripeCheckoutSession
	if err := decodeMember(raw, "data.object", &s); err != nil {
		return false, err
	}
	paid := s.PaymentStatus == "paid" || s.PaymentStatus == "no_payment_required"
	if s.Mode != "subscription" || !paid {
		return false, nil
	}
	ev.OrgID = perch.FirstNonEmpty(s.ClientReferenceID, s.Metadata.OrgID)
	ev.CheckoutID = s.ID
	ev.CustomerID = string(s.Customer)
	ev.SubscriptionID = string(s.Subscription)
	ev.PriceID = s.Metadata.PriceID
	ev.Status = perch.PlanActive
	return true, nil
}

// stripeSubscriptionEvent reads customer.subscription.created, updated and
// deleted. A deleted subscription has ended, whatever its status says; an
// update whose previous status was not a cancellation and whose new one is
// tells the owners too.
func stripeSubscriptionEvent(ev *perch.BillingEvent, raw, previous json.RawMessage) (bool, error) {
	var s stripeSubscription
	if err := decodeMember(raw, "data.object", &s); err != nil {
		return false, err
	}
	if s.ID == "" {
		return false, badRequest("data.object.id is required: a subscription has an id.")
	}
	ev.SubscriptionID = s.ID
	ev.CustomerID = string(s.Customer)
	ev.OrgID = s.Metadata.OrgID
	ev.CancelAtPeriodEnd = s.CancelAtPeriodEnd
	ev.Status = stripeStatus(s.Status)

	periodEnd, quantity := s.CurrentPeriodEnd, s.Quantity
	if len(s.Items.Data) > 0 {
		item := s.Items.Data[0]
		ev.PriceID = perch.FirstNonEmpty(string(item.Price), string(item.Plan))
		if periodEnd == nil {
			periodEnd = item.CurrentPeriodEnd
		}
		if item.Quantity != nil {
			quantity = item.Quantity
		}
	}
	if ev.PriceID == "" && s.Plan != nil {
		ev.PriceID = s.Plan.ID
	}
	var err error
	if ev.Seats, err = seats("data.object.items.data[0].quantity", quantity); err != nil {
		return false, err
	}
	if ev.PeriodEnd, err = unixTime("data.object.current_period_end", periodEnd); err != nil {
		return false, err
	}
	if ev.TrialEndsAt, err = unixTime("data.object.trial_end", s.TrialEnd); err != nil {
		return false, err
	}

	switch ev.Type {
	case "customer.subscription.deleted":
		ev.Status = perch.PlanCanceled
		ev.Alert = perch.AlertCanceled
	case "customer.subscription.trial_will_end":
		ev.Alert = perch.AlertTrialEnding
	case "customer.subscription.updated":
		if ev.Status != perch.PlanCanceled || !jsonObject(previous) {
			break
		}
		var prev struct {
			Status *string `json:"status"`
		}
		if err := decodeMember(previous, "data.previous_attributes", &prev); err != nil {
			return false, err
		}
		if prev.Status != nil && stripeStatus(*prev.Status) != perch.PlanCanceled {
			ev.Alert = perch.AlertCanceled
		}
	}
	return true, nil
}

// stripeStatus says a Stripe subscription status in Perch's words; "" for
// a status Stripe may add later, which leaves Perch's as it is.
func stripeStatus(s string) string {
	switch s {
	case "trialing":
		return perch.PlanTrialing
	case "active":
		return perch.PlanActive
	case "past_due", "unpaid", "incomplete":
		return perch.PlanPastDue
	case "canceled", "incomplete_expired":
		return perch.PlanCanceled
	case "paused":
		return perch.PlanPaused
	}
	return ""
}

// stripeInvoiceEvent reads invoice.paid and invoice.payment_failed. An
// invoice that bills no subscription (a one-off invoice) is not Perch's.
func stripeInvoiceEvent(ev *perch.BillingEvent, raw json.RawMessage) (bool, error) {
	var in stripeInvoice
	if err := decodeMember(raw, "data.object", &in); err != nil {
		return false, err
	}
	ev.CustomerID = string(in.Customer)
	ev.SubscriptionID = string(in.Subscription)
	for _, d := range []*stripeSubscriptionDetails{in.SubscriptionDetails, parentDetails(in)} {
		if d != nil {
			ev.SubscriptionID = perch.FirstNonEmpty(ev.SubscriptionID, string(d.Subscription))
			ev.OrgID = perch.FirstNonEmpty(ev.OrgID, d.Metadata.OrgID)
		}
	}
	var periodEnd *int64
	if len(in.Lines.Data) > 0 {
		line := in.Lines.Data[0]
		if line.Parent != nil && line.Parent.SubscriptionItemDetails != nil {
			ev.SubscriptionID = perch.FirstNonEmpty(ev.SubscriptionID, string(line.Parent.SubscriptionItemDetails.Subscription))
		}
		ev.SubscriptionID = perch.FirstNonEmpty(ev.SubscriptionID, string(line.Subscription))
		if line.Type == "subscription" && strings.HasPrefix(line.ID, "sub_") {
			ev.SubscriptionID = perch.FirstNonEmpty(ev.SubscriptionID, line.ID)
		}
		if line.Period != nil {
			periodEnd = line.Period.End
		}
	}
	if ev.SubscriptionID == "" {
		return false, nil
	}

	switch ev.Type {
	case "invoice.paid":
		ev.Status = perch.PlanActive
		var err error
		if ev.PeriodEnd, err = unixTime("data.object.lines.data[0].period.end", periodEnd); err != nil {
			return false, err
		}
	case "invoice.payment_failed":
		ev.Status = perch.PlanPastDue
		ev.Alert = perch.AlertPaymentFailed
	}
	return true, nil
}

// parentDetails is what a newer invoice says of its subscription, or nil.
func parentDetails(in stripeInvoice) *stripeSubscriptionDetails {
	if in.Parent == nil {
		return nil
	}
	return in.Parent.SubscriptionDetails
}
