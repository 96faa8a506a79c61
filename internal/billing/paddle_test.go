package billing

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/billing/paddlefake"
)

const (
	paddleKey      = "pdl_sdbx_apikey_01h0000000000000000000000_test"
	paddleSolo     = "pri_01gsz8x8sawmvhz1pv30nge1ke"
	paddleTeam     = "pri_01gsz8z1q1n00f12qt82y31smh"
	paddleCustomer = "ctm_01h8441jn5pcwrfhwh78jqt8hk"
	paddleSub      = "sub_01h04vsc0qhwtsbsxh3422wjs4"
)

var paddlePrices = Prices{"solo": paddleSolo, "team": paddleTeam, "enterprise": "pri_01gsz91wy9k1yn7kx82aafwvea"}

func TestPaddleCheckout(t *testing.T) {
	t.Parallel()
	fake := paddlefake.Start(t, paddleKey, paddleSolo, paddleTeam)
	p := NewPaddle(paddleKey, fake.URL(), paddlePrices, nil)
	if p.Name() != perch.BillingPaddle {
		t.Fatalf("Name() = %q", p.Name())
	}

	co, err := p.Checkout(t.Context(), CheckoutRequest{OrgID: "org_1", Plan: "team", Email: "ada@example.com", SuccessURL: "https://perch.test/billing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Checkout(t.Context(), CheckoutRequest{OrgID: "org_2", Plan: "solo", CustomerID: paddleCustomer, Seats: 4}); err != nil {
		t.Fatal(err)
	}

	txns := fake.Transactions()
	if len(txns) != 2 {
		t.Fatalf("the fake has %d transactions, want 2", len(txns))
	}
	if want := (Checkout{ID: txns[0].ID, URL: paddlefake.CheckoutURL + "?_ptxn=" + txns[0].ID}); *co != want {
		t.Errorf("checkout = %+v, want %+v", *co, want)
	}
	want := []paddlefake.Transaction{
		{Items: []paddlefake.Item{{PriceID: paddleTeam, Quantity: 1}}, CustomData: map[string]any{"org_id": "org_1", "plan": "team"}, CollectionMode: "automatic"},
		{Items: []paddlefake.Item{{PriceID: paddleSolo, Quantity: 4}}, CustomData: map[string]any{"org_id": "org_2", "plan": "solo"}, CollectionMode: "automatic", CustomerID: paddleCustomer},
	}
	for i := range want {
		got := txns[i]
		got.ID, got.Status, got.CheckoutURL = "", "", ""
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("transaction %d = %+v, want %+v", i, got, want[i])
		}
	}
}

func TestPaddlePortal(t *testing.T) {
	t.Parallel()
	fake := paddlefake.Start(t, paddleKey)
	p := NewPaddle(paddleKey, fake.URL(), paddlePrices, nil)

	for _, sub := range []string{paddleSub, ""} {
		u, err := p.Portal(t.Context(), paddleCustomer, sub, "https://perch.test/billing")
		if err != nil {
			t.Fatalf("Portal(%q): %v", sub, err)
		}
		sessions := fake.PortalSessions()
		last := sessions[len(sessions)-1]
		if u != last.OverviewURL || !strings.HasPrefix(u, paddlefake.PortalURL+"/") {
			t.Errorf("Portal(%q) = %q, want the session's overview %q", sub, u, last.OverviewURL)
		}
		if got, want := strings.Join(last.SubscriptionIDs, ","), sub; got != want || last.CustomerID != paddleCustomer {
			t.Errorf("Portal(%q) sent customer %q and subscriptions %q", sub, last.CustomerID, got)
		}
	}
}

func TestPaddleErrors(t *testing.T) {
	t.Parallel()
	fake := paddlefake.Start(t, paddleKey, paddleSolo) // the team price is not in Paddle's catalog
	p := NewPaddle(paddleKey, fake.URL(), paddlePrices, nil)
	solo := CheckoutRequest{OrgID: "org_1", Plan: "solo"}

	raw := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel()

	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"the key is refused", func() error {
			_, err := NewPaddle("pdl_wrong_key", fake.URL(), paddlePrices, nil).Checkout(t.Context(), solo)
			return err
		}, "paddle: invalid_token: Invalid or revoked API key. (request "},
		{"a price Paddle does not have", func() error {
			_, err := p.Checkout(t.Context(), CheckoutRequest{OrgID: "org_1", Plan: "team"})
			return err
		}, "paddle: transaction_price_not_found: One or more provided price_ids could not be found, provided: " + paddleTeam},
		{"Paddle fails", func() error {
			fake.FailNext(http.StatusInternalServerError, "internal_error", "Something went wrong.")
			_, err := p.Checkout(t.Context(), solo)
			return err
		}, "paddle: internal_error: Something went wrong."},
		{"an unknown customer", func() error {
			_, err := p.Portal(t.Context(), "ctm_nope", "", "")
			return err
		}, "paddle: not_found: Customer ctm_nope not found."},
		{"a validation error names the field", func() error {
			_, err := p.Portal(t.Context(), paddleCustomer, "sub_nope", "")
			return err
		}, "paddle: invalid_field: Request does not pass validation.; subscription_ids[0]: does not match"},
		{"a proxy's page", func() error {
			_, err := NewPaddle(paddleKey, raw(http.StatusBadGateway, "<html>bad gateway</html>"), paddlePrices, nil).Checkout(t.Context(), solo)
			return err
		}, "paddle: unexpected response 502 Bad Gateway"},
		{"no checkout URL", func() error {
			_, err := NewPaddle(paddleKey, raw(http.StatusCreated, `{"data":{"id":"txn_1","checkout":null},"meta":{}}`), paddlePrices, nil).Checkout(t.Context(), solo)
			return err
		}, "paddle: transaction txn_1 has no checkout URL"},
		{"an endless answer", func() error {
			_, err := NewPaddle(paddleKey, raw(http.StatusCreated, `{"data":"`+strings.Repeat("x", maxPaddleResponse)+`"}`), paddlePrices, nil).Checkout(t.Context(), solo)
			return err
		}, "paddle: create transaction: the response is larger than 1048576 bytes"},
		{"the request is canceled", func() error {
			_, err := p.Checkout(canceled, solo)
			return err
		}, "context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), paddleKey) {
				t.Fatalf("error %q shows the API key", err)
			}
		})
	}
}

// TestPaddleSetSeats: the subscription's plan item gets the seat count,
// the other items are sent back as they are (Paddle removes any left out),
// prorated at once; the same count again sends no update; Paddle's refusals
// come back as errors naming its code.
func TestPaddleSetSeats(t *testing.T) {
	t.Parallel()
	const addon = "pri_01gsz98e27ak2tyhexptwc58yk"
	fake := paddlefake.Start(t, paddleKey, paddleSolo, paddleTeam, addon)
	p := NewPaddle(paddleKey, fake.URL(), paddlePrices, nil)
	id := fake.AddSubscription("active", paddleCustomer, paddlefake.Item{PriceID: addon, Quantity: 2}, paddlefake.Item{PriceID: paddleTeam, Quantity: 3})

	before, err := p.SetSeats(t.Context(), id, 5)
	if err != nil || before != 3 {
		t.Fatalf("SetSeats(5) = %d, %v; want 3 before", before, err)
	}
	sub, _ := fake.Subscription(id)
	if want := []paddlefake.Item{{PriceID: addon, Quantity: 2}, {PriceID: paddleTeam, Quantity: 5}}; !reflect.DeepEqual(sub.Items, want) {
		t.Errorf("items %+v, want %+v", sub.Items, want)
	}
	if before, err := p.SetSeats(t.Context(), id, 5); err != nil || before != 5 {
		t.Fatalf("SetSeats(5) again = %d, %v", before, err)
	}
	updates := fake.SubscriptionUpdates()
	if len(updates) != 1 || updates[0].ProrationBillingMode != "prorated_immediately" || updates[0].SubscriptionID != id {
		t.Fatalf("updates %+v, want one, prorated_immediately", updates)
	}
	// At least one seat is billed.
	if _, err := p.SetSeats(t.Context(), id, 0); err != nil {
		t.Fatal(err)
	}
	if sub, _ := fake.Subscription(id); sub.Items[1].Quantity != 1 {
		t.Errorf("zero seats billed %d", sub.Items[1].Quantity)
	}

	for _, c := range []struct {
		name, id, says string
	}{
		{"an unknown subscription", "sub_01h04vsc0qhwtsbsxh3422wjs9", "paddle: not_found"},
		{"a canceled one", fake.AddSubscription("canceled", paddleCustomer, paddlefake.Item{PriceID: paddleTeam, Quantity: 1}), "paddle: subscription_update_when_canceled"},
		{"one without a Perch price among several", fake.AddSubscription("active", paddleCustomer, paddlefake.Item{PriceID: addon, Quantity: 1},
			paddlefake.Item{PriceID: addon, Quantity: 2}), "no item of a Perch plan's price"},
	} {
		if _, err := p.SetSeats(t.Context(), c.id, 2); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.says)
		}
	}
	fake.FailNext(http.StatusTooManyRequests, "too_many_requests", "Too many requests.")
	if _, err := p.SetSeats(t.Context(), id, 7); err == nil || !strings.Contains(err.Error(), "paddle: too_many_requests") {
		t.Errorf("a refused read: %v", err)
	}
}
