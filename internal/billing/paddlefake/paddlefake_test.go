package paddlefake

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestAnswersAsPaddleDocuments checks the fake's refusals: each in Paddle's
// error shape with the status and code its error reference gives.
func TestAnswersAsPaddleDocuments(t *testing.T) {
	t.Parallel()
	s := Start(t, "pdl_key", "pri_01gsz8x8sawmvhz1pv30nge1ke")
	live := "/subscriptions/" + s.AddSubscription("active", "ctm_01h8441jn5pcwrfhwh78jqt8hk", Item{PriceID: "pri_01gsz8x8sawmvhz1pv30nge1ke", Quantity: 2})
	paused := "/subscriptions/" + s.AddSubscription("paused", "ctm_01h8441jn5pcwrfhwh78jqt8hk", Item{PriceID: "pri_01gsz8x8sawmvhz1pv30nge1ke", Quantity: 2})
	const items = `{"items":[{"price_id":"pri_01gsz8x8sawmvhz1pv30nge1ke","quantity":3}]`
	for _, tc := range []struct {
		name, method, auth, path, contentType, body string
		status                                      int
		code                                        string
	}{
		{"items without a proration mode", "PATCH", "Bearer pdl_key", live, "application/json", items + `}`, 400, "subscription_items_update_missing_proration_billing_mode"},
		{"a proration mode Paddle has not", "PATCH", "Bearer pdl_key", live, "application/json", items + `,"proration_billing_mode":"prorated"}`, 400, "invalid_field"},
		{"a paused subscription billed", "PATCH", "Bearer pdl_key", paused, "application/json", items + `,"proration_billing_mode":"prorated_immediately"}`, 400, "subscription_incorrect_proration_on_paused_subscription"},
		{"a quantity of 0", "PATCH", "Bearer pdl_key", live, "application/json", `{"items":[{"price_id":"pri_01gsz8x8sawmvhz1pv30nge1ke","quantity":0}],"proration_billing_mode":"do_not_bill"}`, 400, "invalid_field"},
		{"an unknown subscription", "GET", "Bearer pdl_key", "/subscriptions/sub_01h04vsc0qhwtsbsxh3422wjs9", "", "", 404, "not_found"},
		{"a subscription read without a key", "GET", "", live, "", "", 403, "authentication_missing"},
		{"no key", "", "", "/transactions", "application/json", `{}`, 403, "authentication_missing"},
		{"not Bearer", "", "Basic pdl_key", "/transactions", "application/json", `{}`, 403, "authentication_malformed"},
		{"wrong key", "", "Bearer pdl_other", "/transactions", "application/json", `{}`, 403, "invalid_token"},
		{"not JSON", "", "Bearer pdl_key", "/transactions", "application/json", `{"items":`, 400, "invalid_json"},
		{"a form", "", "Bearer pdl_key", "/transactions", "application/x-www-form-urlencoded", `items=1`, 400, "bad_request"},
		{"no items", "", "Bearer pdl_key", "/transactions", "application/json", `{"custom_data":{"org_id":"o"}}`, 400, "invalid_field"},
		{"a misspelt member", "", "Bearer pdl_key", "/transactions", "application/json", `{"items":[{"price_id":"pri_01gsz8x8sawmvhz1pv30nge1ke","quantity":1}],"customdata":{}}`, 400, "invalid_field"},
		{"an unknown price", "", "Bearer pdl_key", "/transactions", "application/json", `{"items":[{"price_id":"pri_01gsz8x8sawmvhz1pv30nge1kf","quantity":1}]}`, 400, "transaction_price_not_found"},
		{"another route", "", "Bearer pdl_key", "/subscriptions", "application/json", `{}`, 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequestWithContext(t.Context(), method, s.URL()+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", tc.contentType)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got struct {
				Error struct{ Type, Code, Detail string } `json:"error"`
				Meta  struct {
					RequestID string `json:"request_id"`
				} `json:"meta"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || got.Error.Code != tc.code || got.Error.Type != "request_error" || got.Error.Detail == "" || got.Meta.RequestID == "" {
				t.Fatalf("answer %d %+v, want %d with code %q", resp.StatusCode, got, tc.status, tc.code)
			}
		})
	}
	if n := len(s.Transactions()); n != 0 {
		t.Fatalf("refused requests created %d transactions", n)
	}
	if n := len(s.SubscriptionUpdates()); n != 0 {
		t.Fatalf("refused requests updated subscriptions %d times", n)
	}
}
