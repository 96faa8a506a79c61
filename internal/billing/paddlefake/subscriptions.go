package paddlefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Subscription is a subscription the fake holds: its status
// (active, trialing, past_due, paused, canceled), customer and items.
type Subscription struct {
	ID         string
	Status     string
	CustomerID string
	Items      []Item
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// SubscriptionUpdate is a PATCH /subscriptions/{id} the fake applied, as
// it was asked for.
type SubscriptionUpdate struct {
	SubscriptionID       string
	Items                []Item
	ProrationBillingMode string
}

// prorationModes are proration_billing_mode's values in Paddle's reference.
var prorationModes = []string{"prorated_immediately", "prorated_next_billing_period", "full_immediately", "full_next_billing_period", "do_not_bill"}

// AddSubscription makes a subscription with status for customer with the
// items, as a completed checkout would, and answers its id (sub_01…).
func (s *Server) AddSubscription(status, customer string, items ...Item) string {
	now := time.Now().UTC()
	sub := &Subscription{ID: newID("sub"), Status: status, CustomerID: customer, Items: slices.Clone(items), CreatedAt: now, UpdatedAt: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[sub.ID] = sub
	return sub.ID
}

// Subscription answers the subscription id as it stands.
func (s *Server) Subscription(id string) (Subscription, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subs[id]
	if !ok {
		return Subscription{}, false
	}
	out := *sub
	out.Items = slices.Clone(sub.Items)
	return out, true
}

// SubscriptionUpdates answers the updates applied so far, oldest first.
func (s *Server) SubscriptionUpdates() []SubscriptionUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.updates)
}

// subscription finds the path's subscription, answering Paddle's 404 for
// an id that is none.
func (s *Server) subscription(w http.ResponseWriter, r *http.Request) (*Subscription, bool) {
	id := r.PathValue("subscription_id")
	sub, ok := s.subs[id]
	if !ok || !subscriptionIDPattern.MatchString(id) {
		writeError(w, &apiError{status: http.StatusNotFound, code: "not_found", detail: fmt.Sprintf("Entity %s not found", id)})
		return nil, false
	}
	return sub, true
}

func (s *Server) getSubscription(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subscription(w, r)
	if !ok {
		return
	}
	writeData(w, http.StatusOK, subscriptionEntity(sub))
}

// subscriptionPatch is the body of PATCH /subscriptions/{id}: items and
// proration_billing_mode as Perch sends them, and the reference's other
// members accepted as they come.
type subscriptionPatch struct {
	Items []struct {
		PriceID  *string `json:"price_id"`
		Quantity *int    `json:"quantity"`
	} `json:"items"`
	ProrationBillingMode *string         `json:"proration_billing_mode"`
	CustomerID           *string         `json:"customer_id"`
	AddressID            *string         `json:"address_id"`
	BusinessID           json.RawMessage `json:"business_id"`
	CurrencyCode         *string         `json:"currency_code"`
	NextBilledAt         *string         `json:"next_billed_at"`
	Discount             json.RawMessage `json:"discount"`
	CollectionMode       *string         `json:"collection_mode"`
	BillingDetails       json.RawMessage `json:"billing_details"`
	ScheduledChange      json.RawMessage `json:"scheduled_change"`
	CustomData           json.RawMessage `json:"custom_data"`
	OnPaymentFailure     *string         `json:"on_payment_failure"`
}

// updateSubscription replaces the subscription's items with those sent
// (Paddle's rule: items left out are removed; a quantity left out keeps an
// existing item's), refusing what Paddle refuses: an items change without
// a proration mode, a mode Paddle does not have, a paused subscription
// billed other than do_not_bill, a canceled subscription, an unknown price,
// a quantity below 1.
func (s *Server) updateSubscription(w http.ResponseWriter, r *http.Request) {
	var in subscriptionPatch
	if err := decode(r, &in); err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.subscription(w, r)
	if !ok {
		return
	}
	if sub.Status == "canceled" {
		writeError(w, &apiError{status: http.StatusBadRequest, code: "subscription_update_when_canceled", docs: "subscriptions",
			detail: "cannot update subscription, as subscription is canceled"})
		return
	}
	mode := ""
	if in.ProrationBillingMode != nil {
		mode = *in.ProrationBillingMode
		if !slices.Contains(prorationModes, mode) {
			writeError(w, invalidFields([]fieldError{{"proration_billing_mode", "must be one of " + strings.Join(prorationModes, ", ")}}))
			return
		}
	}
	if in.Items == nil {
		writeData(w, http.StatusOK, subscriptionEntity(sub))
		return
	}
	switch {
	case mode == "":
		writeError(w, &apiError{status: http.StatusBadRequest, code: "subscription_items_update_missing_proration_billing_mode", docs: "subscriptions",
			detail: "proration_billing_mode is required when updating subscription items"})
		return
	case sub.Status == "paused" && mode != "do_not_bill":
		writeError(w, &apiError{status: http.StatusBadRequest, code: "subscription_incorrect_proration_on_paused_subscription", docs: "subscriptions",
			detail: "`proration_billing_mode` must be set to `do_not_bill` when updating a paused subscription"})
		return
	}
	var fields []fieldError
	var items []Item
	for i, it := range in.Items {
		if it.PriceID == nil {
			fields = append(fields, fieldError{fmt.Sprintf("items[%d].price_id", i), "must be provided as part of the request"})
			continue
		}
		q := -1
		if it.Quantity != nil {
			q = *it.Quantity
		} else if j := slices.IndexFunc(sub.Items, func(e Item) bool { return e.PriceID == *it.PriceID }); j >= 0 {
			q = sub.Items[j].Quantity
		}
		switch {
		case !s.prices[*it.PriceID]:
			fields = append(fields, fieldError{fmt.Sprintf("items[%d].price_id", i), "price " + *it.PriceID + " not found"})
		case q < 1:
			fields = append(fields, fieldError{fmt.Sprintf("items[%d].quantity", i), "must be greater than or equal to 1"})
		default:
			items = append(items, Item{PriceID: *it.PriceID, Quantity: q})
		}
	}
	if len(in.Items) == 0 {
		fields = append(fields, fieldError{"items", "must contain at least 1 item"})
	}
	if len(fields) > 0 {
		writeError(w, invalidFields(fields))
		return
	}
	sub.Items, sub.UpdatedAt = items, time.Now().UTC()
	s.updates = append(s.updates, SubscriptionUpdate{SubscriptionID: sub.ID, Items: slices.Clone(items), ProrationBillingMode: mode})
	writeData(w, http.StatusOK, subscriptionEntity(sub))
}

// subscriptionEntity is the subscription as Paddle's reference shows it.
func subscriptionEntity(sub *Subscription) map[string]any {
	at := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	periodEnd := sub.CreatedAt.AddDate(0, 1, 0)
	items := make([]map[string]any, len(sub.Items))
	for i, it := range sub.Items {
		items[i] = map[string]any{
			"status":               "active",
			"quantity":             it.Quantity,
			"recurring":            true,
			"created_at":           at(sub.CreatedAt),
			"updated_at":           at(sub.UpdatedAt),
			"previously_billed_at": at(sub.CreatedAt),
			"next_billed_at":       at(periodEnd),
			"trial_dates":          nil,
			"price": map[string]any{
				"id": it.PriceID, "product_id": "pro_01" + strings.Repeat("0", 24), "type": "standard", "status": "active",
				"billing_cycle": map[string]any{"interval": "month", "frequency": 1}, "trial_period": nil, "tax_mode": "account_setting",
				"unit_price": map[string]any{"amount": "900", "currency_code": "USD"}, "quantity": map[string]any{"minimum": 1, "maximum": 10000},
			},
			"product": map[string]any{"id": "pro_01" + strings.Repeat("0", 24), "name": "Perch", "type": "standard", "status": "active"},
		}
	}
	return map[string]any{
		"id":                     sub.ID,
		"status":                 sub.Status,
		"customer_id":            sub.CustomerID,
		"address_id":             "add_01" + strings.Repeat("0", 24),
		"business_id":            nil,
		"currency_code":          "USD",
		"created_at":             at(sub.CreatedAt),
		"updated_at":             at(sub.UpdatedAt),
		"started_at":             at(sub.CreatedAt),
		"first_billed_at":        at(sub.CreatedAt),
		"next_billed_at":         at(periodEnd),
		"paused_at":              nil,
		"canceled_at":            nil,
		"collection_mode":        "automatic",
		"billing_details":        nil,
		"current_billing_period": map[string]any{"starts_at": at(sub.CreatedAt), "ends_at": at(periodEnd)},
		"billing_cycle":          map[string]any{"frequency": 1, "interval": "month"},
		"scheduled_change":       nil,
		"items":                  items,
		"custom_data":            nil,
		"management_urls": map[string]any{
			"update_payment_method": PortalURL + "/update-payment-method?subscription_id=" + sub.ID,
			"cancel":                PortalURL + "/cancel?subscription_id=" + sub.ID,
		},
		"discount":    nil,
		"import_meta": nil,
	}
}
