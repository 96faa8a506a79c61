package billing

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

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
