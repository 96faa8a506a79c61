package billing

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/perch-dev/perch"
	"github.com/perch-dev/perch/internal/testenv"
)

var stripePrices = Prices{"solo": "price_solo", "team": "price_team", "enterprise": "price_enterprise"}

// mustHTTPS fails t unless u is an absolute https URL.
func mustHTTPS(t *testing.T, what, u string) {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil || parsed.Scheme != "https" || parsed.Host == "" {
		t.Fatalf("%s = %q, want an https URL", what, u)
	}
}

// TestStripeAgainstStripeMock sends each request to stripe-mock, which
// checks it against Stripe's OpenAPI description: a parameter Stripe does
// not have fails.
func TestStripeAgainstStripeMock(t *testing.T) {
	t.Parallel()
	base := testenv.StripeMock(t)
	p := NewStripe("sk_test_123", base, stripePrices, nil)
	if p.Name() != perch.BillingStripe {
		t.Fatalf("Name() = %q", p.Name())
	}

	for _, c := range []CheckoutRequest{
		{OrgID: "org_1", Plan: "team", Email: "ada@example.com", SuccessURL: "https://perch.test/billing?checkout=done", CancelURL: "https://perch.test/billing"},
		{OrgID: "org_1", Plan: "team", Seats: 7, TrialEnd: time.Now().Add(10 * 24 * time.Hour), SuccessURL: "https://perch.test/billing"},
		{OrgID: "org_1", Plan: "enterprise", CustomerID: "cus_123", SuccessURL: "https://perch.test/billing", CancelURL: "https://perch.test/billing"},
	} {
		co, err := p.Checkout(t.Context(), c)
		if err != nil {
			t.Fatalf("Checkout(%+v): %v", c, err)
		}
		if !strings.HasPrefix(co.ID, "cs_") {
			t.Errorf("checkout id %q, want the session's cs_…", co.ID)
		}
		mustHTTPS(t, "checkout URL", co.URL)
	}

	u, err := p.Portal(t.Context(), "cus_123", "sub_123", "https://perch.test/billing")
	if err != nil {
		t.Fatalf("Portal: %v", err)
	}
	mustHTTPS(t, "portal URL", u)

	// stripe-mock's subscription has one item of quantity 1: retrieved,
	// then its quantity updated with proration.
	if before, err := p.SetSeats(t.Context(), "sub_123", 4); err != nil || before != 1 {
		t.Fatalf("SetSeats = %d, %v; want 1 before", before, err)
	}

	// stripe-mock refuses a live key and quotes it back: the error names
	// Stripe and keeps the key out.
	const key = "sk_live_do_not_print"
	_, err = NewStripe(key, base, stripePrices, nil).Checkout(t.Context(), CheckoutRequest{OrgID: "org_1", Plan: "solo", SuccessURL: "https://perch.test/billing"})
	if err == nil || !strings.HasPrefix(err.Error(), "stripe: create checkout session: ") || strings.Contains(err.Error(), key) {
		t.Fatalf("Checkout with a refused key: %v; want a stripe: error without the key", err)
	}
}

// TestStripeSendsWhatDESIGNSays reads the form stripe-go sends, which
// stripe-mock does not echo, and checks that two providers in one process
// each use their own key.
func TestStripeSendsWhatDESIGNSays(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var keys []string
	var forms []url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		keys = append(keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		forms = append(forms, r.PostForm)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"cs_test_1","object":"checkout.session","url":"https://checkout.stripe.com/c/pay/cs_test_1"}`))
	}))
	t.Cleanup(srv.Close)

	a := NewStripe("sk_test_a", srv.URL, stripePrices, nil)
	b := NewStripe("sk_test_b", srv.URL, stripePrices, nil)
	if _, err := a.Checkout(t.Context(), CheckoutRequest{OrgID: "org_a", Plan: "team", Email: "ada@example.com", SuccessURL: "https://perch.test/billing?ok", CancelURL: "https://perch.test/billing"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Checkout(t.Context(), CheckoutRequest{OrgID: "org_b", Plan: "solo", Email: "bob@example.com", CustomerID: "cus_b"}); err != nil {
		t.Fatal(err)
	}

	if want := []string{"sk_test_a", "sk_test_b"}; strings.Join(keys, ",") != strings.Join(want, ",") {
		t.Errorf("keys sent = %v, want %v", keys, want)
	}
	want := []map[string]string{{
		"mode": "subscription", "line_items[0][price]": "price_team", "line_items[0][quantity]": "1",
		"client_reference_id": "org_a", "metadata[org_id]": "org_a", "metadata[plan]": "team", "metadata[price_id]": "price_team",
		"subscription_data[metadata][org_id]": "org_a", "subscription_data[metadata][plan]": "team",
		"customer_email": "ada@example.com", "customer": "",
		"success_url": "https://perch.test/billing?ok", "cancel_url": "https://perch.test/billing",
	}, {
		"client_reference_id": "org_b", "line_items[0][price]": "price_solo",
		"customer": "cus_b", "customer_email": "", // a known customer is not asked for an address again
	}}
	for i, fields := range want {
		for name, value := range fields {
			if got := forms[i].Get(name); got != value {
				t.Errorf("checkout %d: %s = %q, want %q", i, name, got, value)
			}
		}
	}
}

// TestStripeSendsSeatsAndTrials reads what stripe-go sends for the seats
// and the trial: the line's quantity is the seat count (at least 1); the
// trial's end goes as subscription_data.trial_end only when at least 48
// hours away; a seat change retrieves the subscription, then updates the
// plan item's quantity with create_prorations, and nothing when it bills
// the count already.
func TestStripeSendsSeatsAndTrials(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []string
	var forms []url.Values
	quantity := 3
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		forms = append(forms, r.PostForm)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/checkout/sessions":
			w.Write([]byte(`{"id":"cs_test_1","object":"checkout.session","url":"https://checkout.stripe.com/c/pay/cs_test_1"}`))
		case "/v1/subscriptions/sub_1":
			fmt.Fprintf(w, `{"id":"sub_1","object":"subscription","status":"active","items":{"object":"list","data":[
				{"id":"si_addon","object":"subscription_item","quantity":9,"price":{"id":"price_addon","object":"price"}},
				{"id":"si_team","object":"subscription_item","quantity":%d,"price":{"id":"price_team","object":"price"}}]}}`, quantity)
		case "/v1/subscription_items/si_team":
			fmt.Fprintf(w, `{"id":"si_team","object":"subscription_item","quantity":%s}`, r.PostForm.Get("quantity"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := NewStripeAt("sk_test_a", srv.URL, stripePrices, nil, func() time.Time { return now })

	trialEnd := now.Add(StripeMinTrial + time.Second)
	for _, c := range []CheckoutRequest{
		{OrgID: "org_a", Plan: "team", Seats: 12, TrialEnd: trialEnd},
		{OrgID: "org_a", Plan: "team", Seats: 0, TrialEnd: now.Add(StripeMinTrial)}, // too soon for Stripe
	} {
		if _, err := p.Checkout(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	if got := forms[0].Get("line_items[0][quantity]"); got != "12" {
		t.Errorf("quantity %q, want the 12 seats", got)
	}
	if got := forms[0].Get("subscription_data[trial_end]"); got != fmt.Sprint(trialEnd.Unix()) {
		t.Errorf("trial_end %q, want %d", got, trialEnd.Unix())
	}
	if got := forms[1].Get("line_items[0][quantity]"); got != "1" {
		t.Errorf("no seats: quantity %q, want 1", got)
	}
	if _, sent := forms[1]["subscription_data[trial_end]"]; sent {
		t.Errorf("a trial ending in 48 hours was sent: %v", forms[1])
	}

	if before, err := p.SetSeats(t.Context(), "sub_1", 5); err != nil || before != 3 {
		t.Fatalf("SetSeats(5) = %d, %v", before, err)
	}
	if last := forms[len(forms)-1]; last.Get("quantity") != "5" || last.Get("proration_behavior") != "create_prorations" {
		t.Errorf("the item update sent %v", last)
	}
	mu.Lock()
	quantity = 5
	mu.Unlock()
	if before, err := p.SetSeats(t.Context(), "sub_1", 5); err != nil || before != 5 {
		t.Fatalf("SetSeats(5) again = %d, %v", before, err)
	}
	want := []string{"POST /v1/checkout/sessions", "POST /v1/checkout/sessions", "GET /v1/subscriptions/sub_1",
		"POST /v1/subscription_items/si_team", "GET /v1/subscriptions/sub_1"}
	if strings.Join(calls, ", ") != strings.Join(want, ", ") {
		t.Errorf("calls %v, want %v", calls, want)
	}
}
